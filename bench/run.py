#!/usr/bin/python3
"""Runs build/bench/bench (tdslc-generated vs plain C -O3) and numpy (OpenBLAS) on the
same kernels, then prints the times side by side as ratios to tdslc (best of 5 runs,
single process; >1 means slower than tdslc). Honest numbers: nothing is tuned per run."""
import os, subprocess, sys, time
import numpy as np

def best(f, reps=5):
    f()
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)
    return t

def fill(shape):
    n = int(np.prod(shape))
    return ((np.arange(n, dtype=np.int64) * 7919 % 1000) / 1000.0 - 0.5).astype(np.float32).reshape(shape)

a, b = fill((512, 512)), fill((512, 512))
x4 = fill((64, 64, 64, 64))
x2 = fill((4096, 4096))
ba, bb = fill((32, 128, 128)), fill((32, 128, 128))
numpy_t = {
    "matmul_512": best(lambda: a @ b),
    "permute_64^4": best(lambda: np.ascontiguousarray(x4.transpose(3, 2, 1, 0))),
    "rowsum_4096^2": best(lambda: x2.sum(axis=1)),
    "bmm_32x128": best(lambda: np.matmul(ba, bb)),
}
flops = {"matmul_512": 2 * 512**3, "bmm_32x128": 2 * 32 * 128**3}
out = subprocess.run([sys.argv[1] if len(sys.argv) > 1 else "build/bench/bench"],
                     capture_output=True, text=True, check=True).stdout
print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; tdslc and plain C run one thread, "
      f"numpy's BLAS may use every core")
print(f"{'kernel':<15}{'tdslc ms':>10}{'plain C ms':>12}{'numpy ms':>10}   {'C/tdslc':>8}{'numpy/tdslc':>12}  tdslc GFLOP/s")
for line in out.split("\n"):
    if not line.strip():
        continue
    name, tj, tc = line.split()
    tj, tc, tn = float(tj), float(tc), numpy_t[name]
    gf = f"{flops[name] / tj / 1e9:8.1f}" if name in flops else ""
    print(f"{name:<15}{tj*1e3:10.3f}{tc*1e3:12.3f}{tn*1e3:10.3f}   {tc/tj:8.2f}{tn/tj:12.2f}  {gf}")
