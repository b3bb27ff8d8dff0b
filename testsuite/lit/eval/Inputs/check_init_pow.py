"""`**.` in an initializer (evaluated by libtdslrt's init) and the same expression in
forward code (the JIT) must give the same doubles, bit for bit, and both must be the
correctly rounded power (exact rational arithmetic for integer exponents, where repeated
squaring is off by ulps; Python's math.pow otherwise; numpy's power is not the oracle
here: its SIMD pow is off by an ulp on these bases). Usage: check_init_pow.py TDSLC WORKDIR [FLAGS...]. Prints one line per
exponent and ALL-OK."""
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
EXPS = [3.0, 7.0, -3.0, 10.0, 31.0, 2.5, -0.5]
base = "(range 8 *. 0.1 + 1.1)"
base_np = np.arange(8) * 0.1 + 1.1
nbase = "(range 8 *. 0.3 - 1.15)"
nbase_np = np.arange(8) * 0.3 - 1.15

lines, names = ["let%%op x = { x = %s }" % base, "let%%op n = { n = %s }" % nbase], []
for k, e in enumerate(EXPS):
    ee = "(%r)" % e if e < 0 else repr(e)
    lines.append("let%%op w%d = { w%d = %s **. %s }" % (k, k, base, ee))
    lines.append("let%%op y%d = x **. %s" % (k, ee))
    names.append(("w%d" % k, "y%d" % k, base_np, e))
    if e == int(e):  # negative bases only have integer powers
        lines.append("let%%op v%d = { v%d = %s **. %s }" % (k, k, nbase, ee))
        lines.append("let%%op z%d = n **. %s" % (k, ee))
        names.append(("v%d" % k, "z%d" % k, nbase_np, e))
src = os.path.join(work, "pow.tdsl")
with open(src, "w") as f:
    f.write("\n".join(lines) + "\n")
cmd = [tdslc, "--run", src, "--precision=double", "--json"] + flags
for a, b, _, _ in names:
    cmd += ["--print", a, "--print", b]
out = subprocess.run(cmd, capture_output=True, text=True)
if out.returncode != 0:
    print("FAIL tdslc:", out.stderr)
    sys.exit(1)
vals = {}
for line in out.stdout.splitlines():
    j = json.loads(line)
    vals[j["name"]] = np.array(j["values"], dtype=np.float64)
ok = True
for a, b, bn, e in names:
    if e == int(e):
        want = np.array([float(Fraction(v) ** int(e)) for v in bn.tolist()])
    else:
        want = np.array([math.pow(v, e) for v in bn.tolist()])
    same = np.array_equal(vals[a], vals[b]) and np.array_equal(vals[a], want)
    ok &= same
    print("%s %s/%s **. %r" % ("OK" if same else "FAIL", a, b, e))
    if not same:
        print("  init    ", vals[a].tolist())
        print("  forward ", vals[b].tolist())
        print("  oracle  ", want.tolist())
print("ALL-OK" if ok else "MISMATCH")
