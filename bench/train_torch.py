#!/usr/bin/python3
"""train_torch.py: the moons MLP training step (bench/train.tdsl) in PyTorch eager mode,
single thread (BENCH_THREADS=N: N threads): 2-H-H-1 MLP with ReLU, hinge loss averaged over the batch, backward, SGD
with weight decay; DEVICE cuda (bench/gpu.sh) runs it on the GPU instead.
usage: train_torch.py BATCH HIDDEN [SECONDS [DEVICE]]  ->  "steps/s N" """
import os
import sys
import time

import torch


def main():
    B, H = int(sys.argv[1]), int(sys.argv[2])
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    dev = sys.argv[4] if len(sys.argv) > 4 else "cpu"
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
    g = torch.Generator().manual_seed(1)
    x = torch.rand(B, 2, generator=g) * 2 - 1
    y = torch.where(x[:, :1] * x[:, 1:] > 0, 1.0, -1.0)
    w1 = (torch.rand(H, 2, generator=g) - 0.5).requires_grad_()
    b1 = torch.zeros(H, requires_grad=True)
    w2 = ((torch.rand(H, H, generator=g) - 0.5) / 4).requires_grad_()
    b2 = torch.zeros(H, requires_grad=True)
    w3 = (torch.rand(1, H, generator=g) - 0.5).requires_grad_()
    if dev != "cpu":
        x, y = x.to(dev), y.to(dev)
        w1, b1, w2, b2, w3 = (p.detach().to(dev).requires_grad_() for p in (w1, b1, w2, b2, w3))
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    params = [w1, b1, w2, b2, w3]
    lr, wd = 0.1, 0.0001

    def step():
        for p in params:
            p.grad = None
        h1 = torch.relu(x @ w1.T + b1)
        h2 = torch.relu(h1 @ w2.T + b2)
        loss = torch.relu(1 - y * (h2 @ w3.T)).sum() / B
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= lr * (p.grad + wd * p)
        return loss

    for _ in range(3):
        step()
    sync()
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(8):
            loss = step()
        steps += 8
        sync()
        t = time.perf_counter() - t0
        if t >= secs:
            break
    print("steps/s %.1f\ncpu steps/s %.1f\nloss %.6f" % (steps / t, steps / (time.process_time() - c0), float(loss)))


if __name__ == "__main__":
    main()
