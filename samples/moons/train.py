#!/usr/bin/env python3
"""Trains the moons MLP (moons.tdsl) from Python through the tdsl package, then saves a
PNG with the loss curve and the learned decision boundary (matplotlib) and a checkpoint.

    python3 train.py [--seed N] [--epochs N] [--out moons.png] [--checkpoint moons.safetensors]

Needs the tdsl package (`make install`, or `pip install ./python` with tdslc on PATH),
numpy and matplotlib. Exit status 0 when training succeeded (100% training accuracy or a
final loss < 0.1), else 3. The data set is generated here, as main.c does."""
import argparse
import os
import sys

import numpy as np

import tdsl

N_BATCHES, BATCH = 80, 10
HERE = os.path.dirname(os.path.abspath(__file__))


def make_moons(seed, noise=0.1):
    """Two interleaved half-moons (as scikit-learn's make_moons), classes +1 / -1."""
    rng = np.random.default_rng(seed)
    n = N_BATCHES * BATCH
    t = np.pi * rng.random(n)
    upper = np.arange(n) % 2 == 0
    x = np.where(upper, np.cos(t), 1 - np.cos(t)) + noise * rng.standard_normal(n)
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t)) + noise * rng.standard_normal(n)
    return np.stack([x, y], 1), np.where(upper, 1.0, -1.0)


def predict(m, points):
    out = np.empty(len(points))
    for i, p in enumerate(points):
        m["point"] = p
        m.call("infer")
        out[i] = m["mlp_result"][0]
    return out


def plot(path, losses, m, xy, cls):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.5))
    a.plot(np.arange(1, len(losses) + 1), losses)
    a.set_xlabel("epoch")
    a.set_ylabel("mean margin loss")
    a.set_yscale("log")
    a.set_title("training loss")
    gx, gy = np.meshgrid(np.linspace(-1.6, 2.6, 90), np.linspace(-1.1, 1.6, 60))
    z = predict(m, np.stack([gx.ravel(), gy.ravel()], 1)).reshape(gx.shape)
    b.contourf(gx, gy, z, levels=[-1e9, 0, 1e9], colors=["#f4c7c3", "#c6dbef"])
    b.contour(gx, gy, z, levels=[0], colors="k", linewidths=1)
    b.scatter(xy[cls > 0, 0], xy[cls > 0, 1], s=8, c="#2166ac", label="class +1")
    b.scatter(xy[cls < 0, 0], xy[cls < 0, 1], s=8, c="#b2182b", label="class -1")
    b.set_title("decision boundary (mlp = 0)")
    b.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--out", default="moons.png")
    ap.add_argument("--checkpoint", default="moons.safetensors")
    args = ap.parse_args()
    if args.epochs > 60:
        ap.error("moons.tdsl's learning-rate schedule covers at most 60 epochs")

    m = tdsl.load(tdsl.compile(os.path.join(HERE, "moons.tdsl"), out="moons_py.so", O=3))
    m.init(args.seed)
    xy, cls = make_moons(args.seed)
    m["moons_flat"] = xy.reshape(N_BATCHES, BATCH, 2)
    m["moons_classes"] = cls.reshape(N_BATCHES, BATCH, 1)
    losses = []
    step = 0
    for epoch in range(args.epochs):
        total = 0.0
        for batch in range(N_BATCHES):
            m.batch_n, m.step_n = batch, step
            m.call("train_step")
            total += float(m["scalar_loss"][0])
            step += 1
        losses.append(total / N_BATCHES)
        if epoch % 10 == 0 or epoch == args.epochs - 1:
            print("epoch %3d  loss %.4f" % (epoch, losses[-1]))
    accuracy = float(np.mean(np.sign(predict(m, xy)) == cls))
    print("training accuracy %.1f%%" % (100 * accuracy))
    m.save(args.checkpoint, "params")
    plot(args.out, losses, m, xy, cls)
    print("wrote %s and %s" % (args.out, args.checkpoint))
    return 0 if accuracy == 1.0 or losses[-1] < 0.1 else 3


if __name__ == "__main__":
    sys.exit(main())
