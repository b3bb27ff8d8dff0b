"""Checkpoints of a cuda model (kernels emulated on the host): training state saved after
device-side updates equals the CPU model's, and a checkpoint loaded into the cuda model
reaches the kernels (its forward then equals the CPU model's).
usage: checkpoint_cuda.py ROOT CPU.so CUDA.so WORKDIR  (TDSL_CUDA_EMULATE set)"""
import os
import sys

import numpy as np

root, cpu_so, cuda_so, work = sys.argv[1:5]
sys.path.insert(0, os.path.join(root, "python"))
os.environ["TDSL_LIBRARY"] = os.path.join(root, "build", "libtdslrt.so")
import tdsl  # noqa: E402

xs = np.linspace(-1, 1, 18).reshape(6, 3)
ts = np.cos(np.arange(12.0)).reshape(6, 2)
models = {"cpu": tdsl.load(cpu_so), "cuda": tdsl.load(cuda_so)}
for name, m in models.items():
    m.init(7)
    m["x"], m["target"] = xs, ts
    for _ in range(3):
        m.call("train_step")
    m.save(os.path.join(work, name + ".safetensors"))
a = open(os.path.join(work, "cpu.safetensors"), "rb").read()
b = open(os.path.join(work, "cuda.safetensors"), "rb").read()
print("saved states equal:", a == b)

cu = models["cuda"]
cu.init(99)
cu.load(os.path.join(work, "cpu.safetensors"))
cu["x"] = xs
cu.call("y.forward")
cpu = models["cpu"]
cpu.call("y.forward")
print("forward after load equal:", np.array_equal(cu["y"], cpu["y"]))
