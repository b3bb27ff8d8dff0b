"""A cuda model with a dynamic batch against the CPU model of the same source: both
train at batch 10, then predict at batch 1, 7, 65, 129, 800 and 10 again (each size reallocates
the batch tensors, on the device too, and makes the routines capture their CUDA graphs
anew). Every parameter and prediction must agree: exactly in the emulation (the same
operations in the same order), within 1e-4 on a GPU (its math functions differ by ulps).
usage: moons_dyn_cuda.py ROOT CPU.so CUDA.so [--gpu]  (TDSL_CUDA_EMULATE set unless --gpu)"""
import os
import sys

import numpy as np

root, cpu_so, cuda_so = sys.argv[1:4]
gpu = "--gpu" in sys.argv[4:]
sys.path.insert(0, os.path.join(root, "python"))
os.environ["TDSL_LIBRARY"] = os.path.join(root, "build", "libtdslrt.so")
import tdsl  # noqa: E402


def moons(n, seed):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    upper = rng.integers(0, 2, n)
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return np.stack([x, y], 1) + rng.normal(0, 0.1, (n, 2)), np.where(upper, 1.0, -1.0)


def same(what, a, b):
    ok = np.array_equal(a, b) if not gpu else np.allclose(a, b, rtol=1e-4, atol=1e-5)
    print("%s: %s" % (what, "same" if ok else "DIFFERENT (max diff %g)" % np.max(np.abs(a - b))))


pts, cls = moons(800, 0)
models = {"cpu": tdsl.load(cpu_so), "cuda": tdsl.load(cuda_so)}
for m in models.values():
    m.init(seed=3)
    m["moons_flat"] = pts.reshape(80, 10, 2)  # sets batch = 10
    m["moons_classes"] = cls.reshape(80, 10, 1)
    for step in range(80):
        m.batch_n = step
        m.step_n = step
        m.call("train_step")
cpu, cu = models["cpu"], models["cuda"]
print("batch:", cu.batch)
for w in ("w1", "b1", "w2", "b2", "w3"):
    same("trained " + w, cpu[w], cu[w])
for n in (1, 7, 65, 129, 800, 10):
    q = moons(n, n)[0]
    for m in models.values():
        m["point"] = q  # sets batch = n
        m.call("infer")
    print("batch:", cu.batch, "result shape:", cu["mlp_result"].shape)
    same("prediction at batch %d" % n, cpu["mlp_result"], cu["mlp_result"])
