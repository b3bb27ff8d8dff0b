"""numpy oracle for pool_tie_grads.tdsl: each argument NAME:STRIDE:WINDOW:PAD names a 2-D
max-pool y = NAME of x = NAME_x (h, w, c) read from tdslc --run --json lines on stdin,
with the gradient NAME_x.grad of sum(y). Valid windows read stride*o + k; padded ones
stride*o + k - (window-1)//2 with out-of-range positions skipped (tdsl(7): never a fake
0). Every position equal to its window's maximum receives the window's gradient."""
import itertools
import sys

import numpy as np

import printed

t = printed.arrays(sys.stdin)
for case in sys.argv[1:]:
    name, stride, win, pad = case.split(":")
    stride, win, pad = int(stride), int(win), pad == "pad"
    x = t[name + "_x"]
    h, w, c = x.shape
    left = (win - 1) // 2 if pad else 0
    oh = h // stride if pad else (h - win) // stride + 1
    ow = w // stride if pad else (w - win) // stride + 1
    y = np.zeros((oh, ow, c))
    g = np.zeros(x.shape)
    for i, j, ch in itertools.product(range(oh), range(ow), range(c)):
        cells = [(stride * i + a - left, stride * j + b - left) for a in range(win) for b in range(win)]
        cells = [(p, q) for p, q in cells if 0 <= p < h and 0 <= q < w]
        m = max(x[p, q, ch] for p, q in cells)
        y[i, j, ch] = m
        for p, q in cells:
            if x[p, q, ch] == m:
                g[p, q, ch] += 1
    ok = (t[name].shape == y.shape and np.array_equal(t[name], y)
          and np.array_equal(t[name + "_x.grad"], g))
    print(name, "ok" if ok else "BAD")
