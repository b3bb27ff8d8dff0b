"""Runs the routine of Inputs/fusion_legal.tdsl on a random `a` and compares b, c, s with
numpy. usage: fusion_legal.py TDSLC WORKDIR [FLAGS...]; prints "N results checked, M mismatches"."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import run_and_compare  # noqa: E402

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fusion_legal.tdsl")
a = np.random.default_rng(5).uniform(-1, 1, (8, 8)).astype(np.float32)
path = os.path.join(work, "a.bin")
a.tofile(path)
b = a.astype(np.float64) + 1
c = b.T.copy()
b = c * 2
s = b.sum(axis=1)
want = {"b": b, "s": s, "c": s[None, :] + np.zeros((8, 1)) + 1}
run_and_compare([tdslc, "--run", "--json", src, "--load", "a=" + path, "--call", "step"] + flags, want, 1e-5)
