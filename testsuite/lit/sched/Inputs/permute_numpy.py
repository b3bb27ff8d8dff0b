"""Runs Inputs/permute.tdsl (tdslc --run --json) on random inputs and compares both
permutes with numpy's transpose. usage: permute_numpy.py TDSLC WORKDIR [FLAGS...]."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import load_args, run_and_compare  # noqa: E402

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "permute.tdsl")
rng = np.random.default_rng(5)
ins = {"x": rng.uniform(-1, 1, (64, 3, 2, 64)).astype(np.float32), "z": rng.uniform(-1, 1, (64, 3, 128)).astype(np.float32)}
loads = load_args(work, ins)
want = {"w": ins["x"].transpose(3, 2, 1, 0), "v": ins["z"].transpose(2, 1, 0)}
run_and_compare([tdslc, "--run", "--json", src] + flags + loads, want, 1e-6)
