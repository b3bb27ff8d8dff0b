"""Runs Inputs/conv_grad.tdsl's `step` (tdslc --run --json) on random inputs and compares
the convolution and both gradients with numpy (float64 sums of the same float32 inputs).
usage: conv_grad_numpy.py TDSLC WORKDIR [FLAGS...]; prints "N results checked, M mismatches"."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import load_args, run_and_compare  # noqa: E402

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_grad.tdsl")
rng = np.random.default_rng(11)
shapes = {"img": (2, 9, 7, 32), "kern": (5, 3, 3, 32), "r": (2, 9, 7, 5)}
ins = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
loads = load_args(work, ins)
x, w, g = (ins[k].astype(np.float64) for k in ("img", "kern", "r"))
xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))  # padding 1: out[b,h,w] reads x[b,h+kh-1,w+kw-1]
H, W = x.shape[1], x.shape[2]
out = sum(np.einsum("bhwc,oc->bhwo", xp[:, kh:kh + H, kw:kw + W], w[:, kh, kw]) for kh in range(3) for kw in range(3))
kgrad = np.stack([np.stack([np.einsum("bhwc,bhwo->oc", xp[:, kh:kh + H, kw:kw + W], g) for kw in range(3)], 1)
                  for kh in range(3)], 1)
igrad_p = np.zeros_like(xp)
for kh in range(3):
    for kw in range(3):
        igrad_p[:, kh:kh + H, kw:kw + W] += np.einsum("bhwo,oc->bhwc", g, w[:, kh, kw])
want = {"out": out, "kern.grad": kgrad, "img.grad": igrad_p[:, 1:-1, 1:-1]}
run_and_compare([tdslc, "--run", "--json", src, "--call", "step"] + flags + loads, want, 1e-4)
