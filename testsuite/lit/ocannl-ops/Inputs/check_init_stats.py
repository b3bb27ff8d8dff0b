"""Statistics of initialized parameters, from tdslc --run --json lines on stdin. Each
argument NAME:MEAN:STD:TOL checks the realized mean and standard deviation of NAME within
TOL and that its values do not repeat along an axis (at least 99% distinct: a counter
shaped smaller than the parameter would repeat them 50 or 100 times)."""
import json
import sys

import numpy as np

t = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        t[o["name"]] = np.array(o["values"], dtype=np.float64)
for case in sys.argv[1:]:
    name, mean, std, tol = case.split(":")
    v = t[name]
    ok = (abs(v.mean() - float(mean)) <= float(tol) and abs(v.std() - float(std)) <= float(tol)
          and len(set(v)) >= 0.99 * len(v))
    print(name, "ok" if ok else "BAD mean %g std %g distinct %d of %d" % (v.mean(), v.std(), len(set(v)), len(v)))
