"""Runs Inputs/contractions.tdsl through tdslc --run --json on random host inputs and
compares every result with numpy (float64 sums of the same float32 inputs).
usage: sched_numpy.py TDSLC WORKDIR [FLAGS...]; prints "N results checked, M mismatches"."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import load_args, run_and_compare  # noqa: E402

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contractions.tdsl")
rng = np.random.default_rng(7)
shapes = {"a": (67, 63), "b": (63, 65), "x": (65, 100), "w": (33, 100), "p": (8, 40, 30), "q": (8, 30, 50),
          "z": (97, 1000)}
ins = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
loads = load_args(work, ins)
d = {k: v.astype(np.float64) for k, v in ins.items()}
want = {"c": d["a"] @ d["b"], "y": d["x"] @ d["w"].T, "r": d["p"] @ d["q"], "rs": d["z"].sum(axis=1),
        "fs": d["z"].sum().reshape(1)}
run_and_compare([tdslc, "--run", "--json", src] + flags + loads, want, 1e-4)
