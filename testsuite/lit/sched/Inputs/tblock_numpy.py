"""Runs Inputs/tblock.tdsl (block transposes, schedule.c block_transpose) through
libtdslrt, compiled by tdslc (a .so, for the target the host's gcc names: a fake gcc
on PATH plays another), on 1 and 2 threads, and compares every permute with numpy's
transpose bit for bit (a permute computes nothing; numpy_compare.bitwise_threads).
usage: tblock_numpy.py TDSLC WORKDIR OPT [FLAGS...]
prints "N threads: 5 results, M differ" per run."""
import os, subprocess, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import bitwise_threads, runtime  # noqa: E402

tdslc, work, opt, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
os.makedirs(work, exist_ok=True)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tblock.tdsl")
rng = np.random.default_rng(7)
shapes = {"x": (32, 32, 32, 32), "z": (64, 48, 16), "a": (2, 3, 64, 32), "b": (64, 3, 2, 64), "e": (17, 32, 32)}
ins = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
want = {"w": ins["x"].transpose(3, 2, 1, 0), "v": ins["z"].transpose(2, 1, 0), "t": ins["a"].transpose(0, 1, 3, 2),
        "u": ins["b"].transpose(3, 2, 1, 0), "f": ins["e"].transpose(2, 1, 0)}
rt = runtime(tdslc)
so = os.path.join(work, "tblock.so")
subprocess.run([tdslc, opt] + flags + [src, "-o", so], check=True)
bad = bitwise_threads(rt, so, ins, [k + ".forward" for k in want], want)
sys.exit(1 if bad else 0)
