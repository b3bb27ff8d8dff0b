"""Oracle for vec_signed_zero.tdsl: rebuilds the test's operands from the same formulas,
computes the references with numpy in float32 (the accumulation serially, as the
statement reads: d = -0 preloaded, then d += a[i,k] * b[k,j] over k), reads the --json
lines on stdin (-0 parsed as a float, so its sign survives) and compares every cell
bitwise: value and sign of zero. Prints one line per tensor."""
import json
import sys
import numpy as np

got = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line, parse_int=float)
        got[o["name"]] = np.array(o["values"], dtype=np.float32)

mi, mk, mj = 4, 4, 16
A = np.array([[-0.0 if i == 0 else ((i * mk + k) % 7) * 0.5 + 1 for k in range(mk)] for i in range(mi)],
             dtype=np.float32)
B = np.array([[((k * mj + j) % 13) * 0.25 + 1 for j in range(mj)] for k in range(mk)], dtype=np.float32)
D = np.full((mi, mj), -0.0, dtype=np.float32)
for i in range(mi):
    for j in range(mj):
        acc = D[i, j]
        for k in range(mk):
            acc = np.float32(acc + A[i, k] * B[k, j])
        D[i, j] = acc
rows, cols = 3, 64
x = np.arange(rows * cols)
a = (((x % 7) + 1) * 0.5 * np.where(x % 3 == 0, -1, 1)).astype(np.float32).reshape(rows, cols)
b = np.where(x % 4 == 1, ((x % 9) + 1) * 0.25, -0.0).astype(np.float32).reshape(rows, cols)
s = np.full(rows, -0.0, dtype=np.float32)
c0 = (s[:, None] * a) + b
z = np.array([-0.0 if t % 2 == 0 else (t + 1) * 0.5 for t in range(8)], dtype=np.float32)

# The references must carry zeros of both signs, or the checks could not fail.
assert np.signbit(D[0]).all() and (D[1:] != 0).all()
assert (np.signbit(c0) & (c0 == 0)).any() and (~np.signbit(c0) & (c0 == 0)).any()
for name, want in (("zc", z), ("d", D), ("c0", c0)):
    v = got.get(name)
    w = want.ravel()
    ok = v is not None and v.shape == w.shape and (v == w).all() and (np.signbit(v) == np.signbit(w)).all()
    print(name, "ok" if ok else "BAD %r" % (v,))
