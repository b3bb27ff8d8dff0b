"""LANGUAGE.md 5 (%cd code) against numpy: every accumulation operator of ASGN, with and
without ':' (zero-initialize with the accumulator's neutral element), every binary infix
primitive, the unary and ternary forms and a bare tensor on the right, ~logic "." "@"
"T" and an einsum spec, `lhs =: rhs ++ "spec"` (rule 10). The semantics are the seed's
interpret_binop; the lhs starts from a known value (a copy of `s`) so that the
accumulators without ':' are visible. Usage: cd_ops.py TDSLC WORKDIR. Prints OK/FAIL."""
import json, os, subprocess, sys
import numpy as np

np.seterr(all="ignore")

tdslc, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
a = np.array([1.5, -2.0, 0.5, 3.0])
b = np.array([2.0, 0.5, -1.0, 3.0])
s = np.array([0.25, 4.0, -3.0, 0.75])
fmt = lambda v: "[ " + "; ".join(repr(float(x)) for x in v) + " ]"
binop = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
    "**": lambda x, y: np.power(x, y),
    "-?/": lambda x, y: np.where(x > 0, y, 0.0), "-?^": lambda x, y: np.where((x > 0) & (x < 1), y, 0.0),
    "<": lambda x, y: (x < y) * 1.0, "=": lambda x, y: (x == y) * 1.0, "<>": lambda x, y: (x != y) * 1.0,
    "||": lambda x, y: ((x != 0) | (y != 0)) * 1.0, "&&": lambda x, y: ((x != 0) & (y != 0)) * 1.0,
    "%": lambda x, y: np.fmod(x, y), "@^": np.maximum, "@-": np.minimum,
    "-@>": lambda x, y: x, "-/>": lambda x, y: y,
}
acc = {"+": "+", "-": "-", "*": "*", "/": "/", "**": "**", "?/": "-?/", "?^": "-?^", "||": "||", "&&": "&&",
       "@^": "@^", "@-": "@-"}
neutral = {"+": 0.0, "-": 0.0, "*": 1.0, "/": 1.0, "||": 0.0, "&&": 1.0, "@^": -np.inf, "@-": np.inf}
lines = ["let%%op a = %s" % fmt(a), "let%%op b = %s" % fmt(b), "let%%op s = %s" % fmt(s),
         "let%op m = [ (1., 2.); (3., 4.); (5., 6.) ]", "let%op v = [ 10.; 100. ]"]
want = {}
k = 0


def case(code, expect, lhs_decl="{ r%d; o = [ 4 ] }"):
    global k
    k += 1
    r = "r%d" % k
    lines.append("let%%cd c%d = %s =: s; %s" % (k, lhs_decl % k, code.replace("LHS", r)))
    want[r] = (k, expect)


for op, f in binop.items():  # r =: a OP b ("*" and "/" have no default projection: ".")
    case("LHS =: a %s b%s" % (op, ' ~logic:"."' if op in "*/" else ""), f(a, b))
for op, prim in acc.items():  # r =OP a (r starts as s), and r =:OP a reduced over i
    case("LHS =%s a" % op, binop[prim](s, a))
    if op in neutral:
        k += 1
        r = "r%d" % k
        lines.append("let%%cd c%d = { %s; o = [ 1 ] } =:%s a ~logic:\"i=>0\"" % (k, r, op))
        v = neutral[op]
        for x in a:
            v = binop[prim](np.array(v), np.array(x))
        want[r] = (k, np.array([v]).reshape(1))
case("LHS =: relu (a - b)", np.maximum(a - b, 0))
case("LHS =: id a", a)
case("LHS =: a", a)
case("LHS =: where (a < b, a, b)", np.where(a < b, a, b))
case("LHS =: fma (a, b, s) ~logic:\".\"", a * b + s)
case("LHS =+ a * b ~logic:\".\"", s + a * b)
# compose and transpose on a 2->3 matrix m (outputs 3, inputs 2)
M = np.array([[1., 2.], [3., 4.], [5., 6.]])
k += 1; lines.append("let%%cd c%d = { r%d; o = [ 3 ] } =:+ m * v ~logic:\"@\"" % (k, k)); want["r%d" % k] = (k, M @ [10., 100.])
k += 1; lines.append("let%%cd c%d = { r%d } =: m ~logic:\"T\"" % (k, k)); want["r%d" % k] = (k, M)  # shape 3->2 read back input-last
k += 1; lines.append("let%%cd c%d = { r%d } =:+ m ~logic:\"i->o => i\"" % (k, k)); want["r%d" % k] = (k, M.sum(0))
k += 1; lines.append("let%%cd c%d = { r%d } =: m ++ \"i->o => o->i\"" % (k, k)); want["r%d" % k] = (k, M)
k += 1; lines.append("let%%cd _ = { r%d } =:+ m ~logic:\"i->o => 0\"" % k)
src = os.path.join(work, "cd_ops.tdsl")
open(src, "w").write("\n".join(lines) + "\n")
ok = True
for r, (c, w) in want.items():
    p = subprocess.run([tdslc, "--run", src, "--call", "c%d" % c, "--print", r, "--json"], capture_output=True, text=True)
    if p.returncode:
        print("FAIL c%d (%s): %s" % (c, lines[4 + c], p.stderr.strip()[:300])); ok = False; continue
    o = json.loads(p.stdout)
    got = np.array(o["values"], dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if r in ("r%d" % (k - 3), "r%d" % (k - 1)):  # the transposes: shape 3->2 (output 2... ) hold m's cells
        good = o["shape"] == "3->2" and np.allclose(got.reshape(2, 3), w.T)
    else:
        good = got.shape == w.ravel().shape and np.allclose(got, w.ravel(), rtol=1e-6, equal_nan=True)
    if not good:
        print("FAIL c%d %s: got %s %s, want %s" % (c, lines[4 + c], o["shape"], got.tolist(), w.tolist())); ok = False
p = subprocess.run([tdslc, "--dump-shapes", src], capture_output=True, text=True)
ok = ok and p.returncode == 0 and ("r%d: 1" % k) in p.stdout.splitlines()
print("ALL-OK" if ok else "FAIL some")
