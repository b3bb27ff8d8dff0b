"""check_init.py TDSLC FILE: runs init_expr.tdsl and checks its parameters against
numpy: exact values for the deterministic initializers, ranges and moments (within
several standard errors) for the random ones, the kaiming / xavier bounds computed
here from the declared shapes (fan_in = product of input dims, fan_out = of output
dims). Prints OK/FAIL per check."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from init_run import check, run as run_init  # noqa: E402

tdslc, path = sys.argv[1], sys.argv[2]


def run(seed):
    return run_init(tdslc, path, ["u", "n", "n2", "k", "x", "w", "d", "e", "s", "t"], seed)


v = run(1)
u = v["u"]
check("u range", u.min() >= -0.09 and u.max() < 0.09 and u.max() > 0.089, (u.min(), u.max()))
check("u mean", abs(u.mean()) < 4 * 0.18 / np.sqrt(12 * len(u)), u.mean())
check("u var", abs(u.var() / (0.18 ** 2 / 12) - 1) < 0.05, u.var())
n = v["n"]
check("n mean", abs(n.mean()) < 4 / np.sqrt(len(n)), n.mean())
check("n std", abs(n.std() - 1) < 0.03, n.std())
check("n tails", abs((np.abs(n) > 1.96).mean() - 0.05) < 0.01, (np.abs(n) > 1.96).mean())
n2 = v["n2"]
check("n2 moments", abs(n2.mean() - 0.5) < 0.1 and abs(n2.std() - 2) < 0.06, (n2.mean(), n2.std()))
for name, bound in (("k", np.sqrt(6 / 48)), ("x", np.sqrt(6 / (80 + 120))), ("w", np.sqrt(6 / 30))):
    a = v[name]
    check(name + " bound", np.abs(a).max() <= bound * (1 + 1e-6) and np.abs(a).max() > 0.98 * bound,
          (np.abs(a).max(), bound))
    check(name + " var", abs(a.var() / (bound ** 2 / 3) - 1) < 0.1, (a.var(), bound ** 2 / 3))
check("d", np.allclose(v["d"], np.arange(4) * 0.5 - np.array([1, 2, 3, 4.])), v["d"])
check("e", np.allclose(v["e"], np.exp((np.arange(3) + 1.) ** 2 / 10), rtol=1e-6), v["e"])
check("s", np.allclose(v["s"], np.maximum(np.arange(5) - 2., 0) + np.sqrt(np.arange(5.))), v["s"])
t = v["t"]
# the difference of two independent U[0,1): triangular on (-1, 1), variance 1/6
check("t independent", abs(t.var() * 6 - 1) < 0.05 and t.min() < -0.9 and t.max() > 0.9, (t.var(), t.min()))
again, other = run(1), run(2)
check("reproducible", all(np.array_equal(v[k], again[k]) for k in v))
check("seeded", not np.array_equal(v["n"], other["n"]) and not np.array_equal(v["u"], other["u"]))
