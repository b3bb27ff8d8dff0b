"""Runs Inputs/tblock_grad.tdsl (a permute's gradient, cell by cell and as block
transposes, schedule.c block_transpose) through libtdslrt, compiled by tdslc, on 1 and 2 threads, and compares
x.grad and y.grad with numpy bit for bit, signs of zeros included: x.grad = (0 + cw^T) +
cv^T, y.grad = 0 + cu^T, where cu holds -0 cells (0 + -0 is +0).
usage: tblock_grad_numpy.py TDSLC WORKDIR OPT [FLAGS...]
prints "N threads: 2 results, M differ" per run."""
import os, subprocess, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import bitwise_threads, runtime  # noqa: E402

tdslc, work, opt, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
os.makedirs(work, exist_ok=True)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tblock_grad.tdsl")
rng = np.random.default_rng(11)
ins = {"cw": rng.uniform(-1, 1, (32,) * 4), "cv": rng.uniform(-1, 1, (32,) * 4), "cu": rng.uniform(-1, 1, (32, 64, 64, 64))}
ins = {k: v.astype(np.float32) for k, v in ins.items()}
ins["cu"].ravel()[::3] = -0.0
zero = np.float32(0)
want = {"x.grad": (zero + ins["cw"].transpose(3, 2, 1, 0)) + ins["cv"].transpose(3, 2, 1, 0),
        "y.grad": zero + ins["cu"].transpose(3, 2, 1, 0)}
assert np.signbit(want["y.grad"]).sum() < np.signbit(ins["cu"]).sum()  # some -0 became +0
rt = runtime(tdslc)
so = os.path.join(work, "tblock_grad.so")
subprocess.run([tdslc, opt] + flags + [src, "-o", so], check=True)
bad = bitwise_threads(rt, so, ins, ["step"], want)
sys.exit(1 if bad else 0)
