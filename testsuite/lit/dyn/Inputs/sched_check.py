"""Runs Inputs/sched.tdsl (the CPU schedule over dynamic sizes: parallel outer loops,
partial sums) compiled by tdslc and as its --emit-c rendering compiled by cc, at
n x 512 and m x 512, and compares y, the row and column sums, the sums of the transpose, s and p.grad with numpy.
usage: sched_check.py ROOT TDSLC WORKDIR N M   (TDSL_NUM_THREADS picks the threads)"""
import os, subprocess, sys
import numpy as np

root, tdslc, work, n, m = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, os.path.join(root, "python"))
os.environ["TDSL_LIBRARY"] = os.path.join(root, "build", "libtdslrt.so")
import tdsl  # noqa: E402

src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sched.tdsl")
os.makedirs(work, exist_ok=True)
jit_so, c, emit_so = (os.path.join(work, f) for f in ("jit.so", "sched.c", "emit.so"))
subprocess.run([tdslc, "-O3", src, "-o", jit_so], check=True)
with open(c, "w") as f:
    subprocess.run([tdslc, "--emit-c", src], stdout=f, check=True)
subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", emit_so, c, "-lm"], check=True)

rng = np.random.default_rng(5)
x, p = rng.uniform(-1, 1, (n, 512)), rng.uniform(-1, 1, (m, 512))
y = 2 * x + 1
z = p + y
rows = max(n, m)
want = {"y": y, "rows": y.sum(1, keepdims=True), "cols": y.sum(0, keepdims=True), "tsum": y.sum(0)[:, None], "s": np.array([z.sum()]),
        "p.grad": np.full((m, 512), rows / m)}
for so in (jit_so, emit_so):
    mod = tdsl.load(so)
    mod.init(0)
    mod["x"], mod["p"] = x, p
    for r in ("step", "rows.forward", "cols.forward", "tsum.forward"):
        mod.call(r)
    bad = [k for k, v in want.items() if not np.allclose(mod[k].reshape(v.shape), v, rtol=1e-4, atol=1e-3)]
    print("%s, n=%d m=%d: %s" % ("tdslc" if so == jit_so else "--emit-c", n, m,
                                 "mismatch in " + ", ".join(bad) if bad else "all match numpy"))
    mod.close()
