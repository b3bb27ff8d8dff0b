#!/usr/bin/env python3
"""tf32_check.py OUT.json: c of Inputs/tf32.tdsl (tdslc --print c --json) against numpy in
float64: within TF32 precision (3e-3 relative), and not fp32-exact (the operands k/7 and
k/3 need rounding to TF32's 10-bit mantissa, so a run that skipped it would be off by
no more than fp32's 1e-6)."""
import json
import sys

import numpy as np

a = np.arange(48 * 72, dtype=np.float64).reshape(48, 72) / 7
b = np.arange(72 * 40, dtype=np.float64).reshape(72, 40) / 3
want = (a @ b).ravel()
got = None
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["name"] == "c":
        got = np.array(o["values"], dtype=np.float64)
if got is None or got.shape != want.shape:
    sys.exit("tf32_check: no c of %d values" % want.size)
rel = np.abs(got - want) / (1 + np.abs(want))
print("max relative error %.3g" % rel.max())
if rel.max() > 3e-3:
    sys.exit("tf32_check: beyond TF32 precision")
if rel.max() < 1e-5:
    sys.exit("tf32_check: fp32-exact: the operands were not rounded to TF32")
print("ok")
