"""Order independence over ARGUMENTS (doc/inference.md): each two-argument einsum spec
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


def run(path, names):
    cmd = [tdslc, "--run", path, "--json"]
    for n in names:
        cmd += ["--print", n]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print("MISMATCH: tdslc failed on %s:\n%s" % (path, p.stderr))
        return None
    return {o["name"]: o for o in map(json.loads, p.stdout.strip().splitlines())}


def dims(shape):
    return "; ".join(str(d) for d in shape)


# One program per argument order, with the arguments given directly or through a
# pointwise op (a row inferred late: open during stage 1): case n is a<n>, b<n>, r<n>.
# Program k: bit 0 the argument order, bit 1 a through relu, bit 2 b through relu.
progs = [[] for _ in range(8)]
for n, (spec, sa, sb) in enumerate(CASES):
    args, res = spec.split("=>")
    sa_spec, sb_spec = args.split(";")
    for k in range(8):
        wa, wb = ("relu " if k & 2 else ""), ("relu " if k & 4 else "")
        progs[k].append("let%%op a%d = %s(range_of_shape ~output_dims:[ %s ] ())" % (n, wa, dims(sa)))
        progs[k].append("let%%op b%d = %s(range_of_shape ~output_dims:[ %s ] ())" % (n, wb, dims(sb)))
        if k & 1:
            progs[k].append('let%%op r%d = b%d +* "%s;%s=>%s" a%d' % (n, n, sb_spec, sa_spec, res, n))
        else:
            progs[k].append('let%%op r%d = a%d +* "%s" b%d' % (n, n, spec, n))

mismatches = 0
names = ["r%d" % n for n in range(len(CASES))]
for k in range(8):
    path = os.path.join(work, "order%d.tdsl" % k)
    with open(path, "w") as f:
        f.write("\n".join(progs[k]) + "\n")
    got = run(path, names)
    if got is None:
        mismatches += 1
        continue
    for n, (spec, sa, sb) in enumerate(CASES):
        args, res = spec.split("=>")
        sa_spec, sb_spec = args.split(";")
        a = np.arange(np.prod(sa), dtype=np.float64).reshape(sa)
        b = np.arange(np.prod(sb), dtype=np.float64).reshape(sb)
        want = np.einsum("%s,%s->%s" % (sa_spec, sb_spec, res), a, b)
        o = got["r%d" % n]
        shape = tuple(o["batch"] + o["output"] + o["input"])
        vals = np.array(o["values"], dtype=np.float64)
        if shape != want.shape or not np.array_equal(vals, want.reshape(-1)):
            print("MISMATCH %s with a%s b%s, %s%s: shape %s, numpy %s" % (
                spec, list(sa), list(sb), "b first" if k & 1 else "a first",
                "".join([" a through relu" if k & 2 else "", " b through relu" if k & 4 else ""]),
                shape, want.shape))
            mismatches += 1
print("%d specs in both argument orders, direct and through an op, %d mismatches" % (len(CASES), mismatches))
sys.exit(1 if mismatches else 0)
