"""expect.py TDSLC FILE NAME=EXPR...: runs FILE with tdslc --run --json and compares each
printed tensor NAME with the numpy expression EXPR (np in scope), to rtol 1e-5. Prints
`OK NAME` or `FAIL NAME: got ... want ...`; extra tdslc flags go after `--`."""
import json
import subprocess
import sys

import numpy as np

tdslc, path = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
flags = rest[rest.index("--") + 1:] if "--" in rest else []
pairs = [a.split("=", 1) for a in (rest[:rest.index("--")] if "--" in rest else rest)]
cmd = [tdslc, "--run", path, "--json"] + flags
for name, _ in pairs:
    cmd += ["--print", name]
out = subprocess.run(cmd, capture_output=True, text=True)
if out.returncode != 0:
    print("FAIL tdslc exit", out.returncode, out.stderr)
    sys.exit(1)
got = {}
for line in out.stdout.splitlines():
    rec = json.loads(line)
    got[rec["name"]] = np.array(rec["values"], dtype=float)
for name, expr in pairs:
    want = np.asarray(eval(expr, {"np": np}), dtype=float).ravel()
    g = got.get(name)
    if g is None or g.shape != want.shape or not np.allclose(g, want, rtol=1e-5, atol=1e-6):
        print("FAIL %s: got %s want %s" % (name, g, want))
    else:
        print("OK", name)
