"""Runs the routine of Inputs/fusion_legal.tdsl on a random `a` and compares b, c, s with
numpy. usage: fusion_legal.py TDSLC WORKDIR [FLAGS...]; prints "N results checked, M mismatches"."""
import json, os, subprocess, sys
import numpy as np

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fusion_legal.tdsl")
a = np.random.default_rng(5).uniform(-1, 1, (8, 8)).astype(np.float32)
path = os.path.join(work, "a.bin")
a.tofile(path)
b = a.astype(np.float64) + 1
c = b.T.copy()
b = c * 2
s = b.sum(axis=1)
want = {"b": b, "s": s, "c": s[None, :] + np.zeros((8, 1)) + 1}
prints = []
for k in want: prints += ["--print", k]
out = subprocess.run([tdslc, "--run", "--json", src, "--load", "a=" + path, "--call", "step"] + flags + prints,
                     capture_output=True, text=True)
if out.returncode:
    sys.exit("tdslc failed: " + out.stderr)
bad = 0
for line in out.stdout.splitlines():
    t = json.loads(line)
    got, exp = np.array(t["values"], dtype=np.float64), want[t["name"]].ravel()
    if got.size != exp.size or not np.max(np.abs(got - exp)) <= 1e-5 * (1 + np.max(np.abs(exp))):
        print("%s differs" % t["name"])
        bad += 1
print("%d results checked, %d mismatches" % (len(want), bad))
sys.exit(1 if bad else 0)
