#!/usr/bin/python3
"""gpu_torch.py: the PyTorch side of make bench-gpu (bench/gpu.sh), on the GPU, fp32
unless the row says tf32 (TF32 off everywhere else, cuDNN included).
usage: gpu_torch.py ROW [SECONDS]  ->  "ms N" (per call)
ROW: sgemm1024, sgemm4096, sgemm1024-tf32, sgemm4096-tf32, bmm (32 x 256^3),
conv3x3 (batch 8, 32->32 channels, 56x56, padding 1), rowsum (4096 x 4096)."""
import sys
import time

import torch


def timed(fn, secs):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(3, min(100000, int(secs / one)))
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t0) / n


def main():
    row = sys.argv[1]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    tf32 = row.endswith("-tf32")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = "cuda"
    r = lambda *s: torch.rand(*s, device=dev)
    if row.startswith("sgemm"):
        n = int(row[5:].split("-")[0])
        a, b, c = r(n, n), r(n, n), torch.empty(n, n, device=dev)
        fn = lambda: torch.mm(a, b, out=c)
    elif row == "bmm":
        a, b, c = r(32, 256, 256), r(32, 256, 256), torch.empty(32, 256, 256, device=dev)
        fn = lambda: torch.bmm(a, b, out=c)
    elif row == "conv3x3":
        x, w = r(8, 32, 56, 56), r(32, 32, 3, 3)
        fn = lambda: torch.nn.functional.conv2d(x, w, padding=1)
    elif row == "rowsum":
        a = r(4096, 4096)
        fn = lambda: a.sum(dim=1)
    else:
        sys.exit("gpu_torch.py: unknown row " + row)
    print("ms %.4f" % timed(fn, secs))


if __name__ == "__main__":
    main()
