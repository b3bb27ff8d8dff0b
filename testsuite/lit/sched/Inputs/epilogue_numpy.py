"""Runs Inputs/epilogue.tdsl's `infer` (tdslc --run --json) on random inputs and compares
h = relu(b + x w^T) with numpy. usage: epilogue_numpy.py TDSLC WORKDIR [FLAGS...]."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import load_args, run_and_compare  # noqa: E402

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "epilogue.tdsl")
rng = np.random.default_rng(3)
ins = {"x": rng.uniform(-1, 1, (70, 40)), "w": rng.uniform(-1, 1, (50, 40)), "b": rng.uniform(-1, 1, 50)}
ins = {k: v.astype(np.float32) for k, v in ins.items()}
loads = load_args(work, ins)
x, w, b = (ins[k].astype(np.float64) for k in ("x", "w", "b"))
run_and_compare([tdslc, "--run", "--json", src, "--call", "infer"] + flags + loads, {"h": np.maximum(b + x @ w.T, 0)}, 1e-5)
