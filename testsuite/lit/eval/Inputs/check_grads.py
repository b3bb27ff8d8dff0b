"""Checks every differentiable prelude operation's backward code numerically: for each
op, y = sum(f(params)) is built in a small .tdsl file, tdslc --run computes the
gradients (grad_update), and numpy central finite differences of the same function are
the oracle. Usage: check_grads.py TDSLC WORKDIR. Prints one line per op and ALL-OK."""
import json
import os
import subprocess
import sys

import numpy as np

tdslc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

X = np.array([0.3, 0.7, 1.2])
Y = np.array([0.9, -0.4, 0.5])
Z = np.array([1.0, 0.0, 2.0])
M = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])

def lit(a):
    return "[ " + "; ".join("%r" % float(v) for v in a) + " ]"

def mat(m):
    return "[ " + "; ".join("(" + ", ".join("%r" % float(v) for v in row) + ")" for row in m) + " ]"

# name: (tdsl expression over params x y z m, numpy function of the same params)
CASES = {
    "add": ("x + y", lambda x, y, z, m: x + y),
    "sub": ("x - y", lambda x, y, z, m: x - y),
    "pointmul": ("x *. y", lambda x, y, z, m: x * y),
    "pointdiv": ("x /. y", lambda x, y, z, m: x / y),
    "pow3": ("x **. 3.", lambda x, y, z, m: x ** 3),
    "pow2": ("x **. 2.", lambda x, y, z, m: x ** 2),
    "pow1": ("x **. 1.", lambda x, y, z, m: x),
    "pow_half": ("x **. 0.5", lambda x, y, z, m: x ** 0.5),
    "matmul": ("m * x", lambda x, y, z, m: m @ x),
    "relu": ("relu y", lambda x, y, z, m: np.maximum(y, 0)),
    "sat01": ("sat01 (y *. 1.5)", lambda x, y, z, m: np.clip(y * 1.5, 0, 1)),
    "exp": ("exp x", lambda x, y, z, m: np.exp(x)),
    "log": ("log x", lambda x, y, z, m: np.log(x)),
    "exp2": ("exp2 x", lambda x, y, z, m: np.exp2(x)),
    "log2": ("log2 x", lambda x, y, z, m: np.log2(x)),
    "sin": ("sin x", lambda x, y, z, m: np.sin(x)),
    "cos": ("cos x", lambda x, y, z, m: np.cos(x)),
    "sqrt": ("sqrt x", lambda x, y, z, m: np.sqrt(x)),
    "recip": ("recip x", lambda x, y, z, m: 1 / x),
    "recip_sqrt": ("recip_sqrt x", lambda x, y, z, m: 1 / np.sqrt(x)),
    "neg": ("~-x", lambda x, y, z, m: -x),
    "tanh": ("tanh y", lambda x, y, z, m: np.tanh(y)),
    "max2": ("max2 x y", lambda x, y, z, m: np.maximum(x, y)),
    "min2": ("min2 (x *. 2.) y", lambda x, y, z, m: np.minimum(x * 2, y)),
    "where": ("where z x y", lambda x, y, z, m: np.where(z != 0, x, y)),
    "fma": ("fma x y z", lambda x, y, z, m: x * y + z),
    "einsum": ("m +* \"j->i;j=>i\" x", lambda x, y, z, m: m @ x),
    "einsum1": ("m ++ \"j->i=>ij\"", lambda x, y, z, m: m.T),
    "outer_sum": ("x +++ \"i;j=>ij\" y", lambda x, y, z, m: x[:, None] + y[None, :]),
    "tropical": ("x @^+ \"i;j=>i\" y", lambda x, y, z, m: (x[:, None] + y[None, :]).max(1)),
    "einmax1": ("m @^^ \"j->i=>i\"", lambda x, y, z, m: m.max(1)),
    "stack": ("[ x; y ] *. [ [ 1.; 2.; 3. ]; [ 4.; 5.; 6. ] ]",
              lambda x, y, z, m: np.stack([x, y]) * np.array([[1., 2., 3.], [4., 5., 6.]])),
    "sum_weighted": ("(x *. [ 1.; 2.; 3. ]) + (y *. y)", lambda x, y, z, m: x * np.array([1., 2., 3.]) + y * y),
}

def f_sum(fn, params):
    return float(np.sum(fn(*params)))

def numgrad(fn, params, k, eps=1e-6):
    g = np.zeros_like(params[k])
    it = np.nditer(params[k], flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        hi = [p.copy() for p in params]
        lo = [p.copy() for p in params]
        hi[k][idx] += eps
        lo[k][idx] -= eps
        g[idx] = (f_sum(fn, hi) - f_sum(fn, lo)) / (2 * eps)
    return g

ok = True
for name, (expr, fn) in CASES.items():
    decls = ("let%%op x = { x = %s }\nlet%%op y = { y = %s }\nlet%%op z = { z = %s }\n"
             "let%%op m = { m = %s }\n" % (lit(X), lit(Y), lit(Z), mat(M)))
    prog = decls + "let%op out = (" + expr + ") ++ \"...|...->... => 0\"\nlet%cd step = grad_update out\n"
    path = os.path.join(work, name + ".tdsl")
    with open(path, "w") as f:
        f.write(prog)
    params = [X, Y, Z, M]
    used = [n for n in "xyzm" if any(tok == n for tok in expr.replace("(", " ").replace(")", " ").split())]
    cmd = [tdslc, "--run", path, "--call", "step", "--json", "--print", "out"] + sum(
        [["--print", n + ".grad"] for n in used], [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL %s: tdslc exit %d: %s" % (name, r.returncode, r.stderr[-500:]))
        ok = False
        continue
    got = {o["name"]: np.array(o["values"]) for o in map(json.loads, r.stdout.splitlines())}
    want_out = f_sum(fn, params)
    bad = []
    if abs(got["out"][0] - want_out) > 1e-4 + 1e-4 * abs(want_out):
        bad.append("out %g vs %g" % (got["out"][0], want_out))
    for n in used:
        k = "xyzm".index(n)
        want = numgrad(fn, params, k).reshape(-1)
        have = got[n + ".grad"]
        if have.shape != want.shape or not np.allclose(have, want, rtol=1e-3, atol=1e-3):
            bad.append("%s.grad %s vs %s" % (n, have.tolist(), want.tolist()))
    if bad:
        print("FAIL %s: %s" % (name, "; ".join(bad)))
        ok = False
    else:
        print("ok %s" % name)
print("ALL-OK" if ok else "SOME-FAILED")
