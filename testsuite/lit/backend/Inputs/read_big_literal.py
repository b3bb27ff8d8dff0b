"""Loads a compiled model of eval/Inputs/big_literal.py's literal through the runtime
(python/tdsl), runs init and y.forward, and compares w and y (= 2 w) with the oracle.

usage: read_big_literal.py MODEL.so EXPECTED.npy"""
import sys

import numpy as np
import tdsl

m = tdsl.load(sys.argv[1])
m.init()
m.call("y.forward")
want = np.load(sys.argv[2])
for name, factor in (("w", 1.0), ("y", 2.0)):
    got = m[name]
    exp = (want * factor).astype(np.float32)
    ok = got.shape == exp.shape and np.allclose(got, exp, rtol=1e-6, atol=0)
    print(name, list(got.shape), "ok" if ok else "WRONG")
