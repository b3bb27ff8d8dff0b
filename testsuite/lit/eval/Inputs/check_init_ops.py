"""check_init_ops.py TDSLC FILE: runs init_ops.tdsl and checks its parameters against
numpy (exact for the deterministic ones; values and frequency for the random mask).
Prints OK/FAIL per check."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from init_run import check, run  # noqa: E402

tdslc, path = sys.argv[1], sys.argv[2]
v = run(tdslc, path, ["un", "cmp", "ter", "nan", "mask", "ones", "cd"], 3)


r = np.arange(6.0)
want = {
    "un": np.clip(r * 0.5 - 0.5, 0, 1) + 2 ** r + np.log2(r + 1) + 1 / np.sqrt(r + 1),
    "cmp": (r - 2 == 0) * 1.0 + (r < 2) + (r == 2) + (r != 2),
    "ter": np.where(r < 2, r, 10.0) + r * r + 1 + np.where(r != 0, r, r),
    "nan": r,  # a NaN condition is true: where takes its second argument
    "ones": np.ones(8),
    "cd": ((r - 1 != 0) | False) * 1.0 + np.fmod(r, 4),
}
for name, w in want.items():
    check(name, v[name].shape == w.shape and np.allclose(v[name], w, rtol=1e-6), (v[name], w))
m = v["mask"]
check("mask values", set(np.unique(m)) <= {0.0, 1.0}, np.unique(m))
# a Bernoulli(0.25) mean over 40000 cells: standard error 0.0022
check("mask frequency", abs(m.mean() - 0.25) < 0.01, m.mean())
