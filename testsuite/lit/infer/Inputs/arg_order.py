"""Order independence over ARGUMENTS (issue 10 item 1): each two-argument einsum spec
with row variables and flanking axes (`ij...`, `...kl`, `i...j`) is run as
`a +* "A;B=>R" b` and as `b +* "B;A=>R" a` through tdslc --run --json; both must give
numpy.einsum's shape and values. usage: arg_order.py TDSLC WORKDIR
Prints one line per mismatch, then a summary."""
import json, os, subprocess, sys
import numpy as np

tdslc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

CASES = [  # (spec, shape of a, shape of b)
    ("ij...;j...=>ij...", (2, 3, 4), (3,)),
    ("ij...;j...=>ij...", (2, 3, 4), (3, 4)),
    ("ij...;j...=>ij...", (2, 3, 4, 5), (3, 4, 5)),
    ("ij...;j...=>ij...", (2, 3, 4, 5), (3, 5)),
    ("ij...;...=>ij...", (2, 3, 4), (4,)),
    ("ij...;...=>ij...", (2, 3, 4, 5), (5,)),
    ("...kl;...l=>...kl", (2, 3, 4), (4,)),
    ("...kl;...l=>...kl", (2, 3, 4), (2, 4)),
    ("...kl;k...=>...l", (2, 3, 4), (3, 2)),
    ("...kl;k...=>...l", (3, 4), (3,)),
    ("i...j;i...j=>i...j", (2, 3, 4), (2, 4)),
    ("i...j;i...j=>i...j", (2, 3, 4), (2, 3, 4)),
    ("i...j;i...j=>i...j", (2, 3, 5, 4), (2, 5, 4)),
    ("i...j;j=>i...", (2, 3, 4), (4,)),
    ("i...j;j...=>i...", (2, 3, 4), (4, 3)),
    ("i...;...j=>i...j", (2, 3), (3, 4)),
    ("i...;...j=>i...j", (2, 3, 5), (3, 5, 4)),
    ("ij...;jk...=>ik...", (2, 3, 5), (3, 4, 5)),
    ("ij...;jk...=>ik...", (2, 3, 5), (3, 4)),
    ("i...j;j...k=>i...k", (2, 5, 3), (3, 5, 4)),
    ("...i;...i=>...", (2, 3), (3,)),
    ("...i;i...=>...", (2, 3), (3, 2)),
]


def program(spec, first, second, sa, sb):
    def rng(name, shape):
        return "let%%op %s = range_of_shape ~output_dims:[ %s ] ()" % (
            name, "; ".join(str(d) for d in shape))
    return "\n".join([rng("a", sa), rng("b", sb),
                      'let%%op r = %s +* "%s" %s' % (first, spec, second)]) + "\n"


def run(path):
    p = subprocess.run([tdslc, "--run", path, "--print", "r", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[0] if p.stderr.strip() else "exit %d" % p.returncode
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out, None


mismatches = 0
for n, (spec, sa, sb) in enumerate(CASES):
    args, res = spec.split("=>")
    sa_spec, sb_spec = args.split(";")
    a = np.arange(np.prod(sa), dtype=np.float64).reshape(sa)
    b = np.arange(np.prod(sb), dtype=np.float64).reshape(sb)
    want = np.einsum("%s,%s->%s" % (sa_spec, sb_spec, res), a, b)
    orders = [("a", "b", spec), ("b", "a", "%s;%s=>%s" % (sb_spec, sa_spec, res))]
    for k, (first, second, sp) in enumerate(orders):
        path = os.path.join(work, "case%d_%d.tdsl" % (n, k))
        with open(path, "w") as f:
            f.write(program(sp, first, second, sa, sb))
        got, err = run(path)
        where = '%s +* "%s" %s with a%s b%s' % (first, sp, second, list(sa), list(sb))
        if err:
            print("MISMATCH %s: %s" % (where, err))
            mismatches += 1
            continue
        shape = tuple(got["batch"] + got["output"] + got["input"])
        vals = np.array(got["values"], dtype=np.float64)
        if shape != want.shape or not np.array_equal(vals, want.reshape(-1)):
            print("MISMATCH %s: shape %s, numpy %s" % (where, shape, want.shape))
            mismatches += 1
print("%d specs in both argument orders, %d mismatches" % (len(CASES), mismatches))
sys.exit(1 if mismatches else 0)
