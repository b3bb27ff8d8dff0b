"""Compares --run --print NAME --json output (one JSON object per line) with the
oracle's .npy (big_literal.py) times the factor each name gets: `w` 1, `y` 2.

usage: check_big_literal.py EXPECTED.npy RUN_OUTPUT"""
import json
import sys

import numpy as np

want = np.load(sys.argv[1])
factor = {"w": 1.0, "y": 2.0}
for line in open(sys.argv[2]):
    t = json.loads(line)
    got = np.array(t["values"], dtype=np.float64)
    exp = (want * factor[t["name"]]).astype(np.float32).ravel()
    ok = got.shape == exp.shape and np.allclose(got, exp, rtol=1e-6, atol=0)
    print(t["name"], t["batch"], t["output"], t["input"], "ok" if ok else "WRONG")
