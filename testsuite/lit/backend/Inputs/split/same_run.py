"""A model compiled as groups (split compile, linked .so) computes what the same model
compiled in one context computes: tdslc --run --no-split (in memory) is the reference.
Runs one train_step from the same init and inputs in both and compares every tensor
--run prints, bitwise.
usage: same_run.py ROOT TDSLC MODEL.tdsl WORKDIR SO..."""
import json
import os
import subprocess
import sys

import numpy as np

root, tdslc, model, work = sys.argv[1:5]
sos = sys.argv[5:]
sys.path.insert(0, os.path.join(root, "python"))
os.environ["TDSL_LIBRARY"] = os.path.join(root, "build", "libtdslrt.so")
import tdsl  # noqa: E402

rng = np.random.default_rng(0)
first = tdsl.load(sos[0])
xs = (rng.standard_normal(first["xs"].shape) * 0.5).astype(np.float32)
ys = np.sign(rng.standard_normal(first["ys"].shape)).astype(np.float32)
np.save(os.path.join(work, "xs.npy"), xs)
np.save(os.path.join(work, "ys.npy"), ys)
names = sorted(n for n in first.tensors if not n.startswith("t#"))
cmd = [tdslc, "--run", "--no-split", model, "--seed", "5", "--load", "xs=" + os.path.join(work, "xs.npy"),
       "--load", "ys=" + os.path.join(work, "ys.npy"), "--call", "train_step", "--json"]
for n in names:
    cmd += ["--print", n]
out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
ref = {}
for line in out.splitlines():
    r = json.loads(line)
    ref[r["name"]] = np.array(r["values"], dtype=np.float32)
for so in sos:
    m = tdsl.load(so)
    m.init(5)
    m["xs"], m["ys"] = xs, ys
    m.call("train_step")
    bad = [n for n in names if not np.array_equal(np.asarray(m[n], np.float32).ravel(), ref[n], equal_nan=True)]
    print(os.path.basename(so), "tensors:", len(names), "differing:", len(bad), bad[:3])
