"""Oracle for rope.tdsl: reads the --json lines of rotated, pe and x.grad on stdin and
compares them with numpy: RoPE over interleaved pairs (x[2j], x[2j+1]) rotated by
pos * 10000^(-2j/d), the sinusoidal encoding sin/cos interleaved at the same angles, and
the gradient of sum(rotated) with respect to x (the transposed rotation of ones). Prints
one line per tensor."""
import json
import sys
import numpy as np

got = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        got[o["name"]] = np.array(o["values"], dtype=np.float64)

def angles(npos, half_d):
    freqs = 10000.0 ** (-2.0 * np.arange(half_d) / (2.0 * half_d))
    return np.arange(npos)[:, None] * freqs[None, :]

x = np.arange(12, dtype=np.float64).reshape(3, 4) + 1
a = angles(3, 2)
xe, xo = x[:, 0::2], x[:, 1::2]
rot = np.empty_like(x)
rot[:, 0::2] = xe * np.cos(a) - xo * np.sin(a)
rot[:, 1::2] = xe * np.sin(a) + xo * np.cos(a)
grad = np.empty_like(x)
grad[:, 0::2] = np.cos(a) + np.sin(a)
grad[:, 1::2] = np.cos(a) - np.sin(a)
b = angles(4, 4)
pe = np.empty((4, 8))
pe[:, 0::2] = np.sin(b)
pe[:, 1::2] = np.cos(b)
for name, want in (("rotated", rot), ("pe", pe), ("x.grad", grad)):
    v = got.get(name)
    ok = v is not None and v.shape == want.ravel().shape and np.allclose(v, want.ravel(), rtol=1e-5, atol=1e-5)
    print(name, "ok" if ok else "BAD %r vs %r" % (v, want.ravel()))
