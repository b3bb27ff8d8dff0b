"""Runs Inputs/join.tdsl with a of n rows and b of m rows, per (n, m) pair given, and
compares c = a + 10 b (numpy broadcasting) and the gradients of s = sum(c^2) with
numpy; a pair numpy cannot broadcast must fail the call with the check's message.
usage: join_check.py TDSLC DIR [--cuda] N,M..."""
import json, os, subprocess, sys
import numpy as np

tdslc, work = sys.argv[1:3]
cuda = sys.argv[3] == "--cuda"
pairs = [tuple(int(x) for x in p.split(",")) for p in sys.argv[4 if cuda else 3:]]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "join.tdsl")
for n, m in pairs:
    a = np.arange(3.0 * n).reshape(n, 3) + 1
    b = np.cos(np.arange(3.0 * m)).reshape(m, 3)
    np.save(os.path.join(work, "a.npy"), a)
    np.save(os.path.join(work, "b.npy"), b)
    cmd = [tdslc] + (["--backend=cuda"] if cuda else []) + [
        "--run", src, "--load", "a=" + os.path.join(work, "a.npy"), "--load", "b=" + os.path.join(work, "b.npy"),
        "--call", "step", "--json"]
    for t in ("c", "a.grad", "b.grad"):
        cmd += ["--print", t]
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        c = a + 10 * b
    except ValueError:
        print("n=%d m=%d: numpy cannot broadcast; tdslc exit %d: %s" % (n, m, out.returncode, next((l for l in out.stderr.splitlines() if "error:" in l), out.stderr.strip())))
        continue
    if out.returncode:
        sys.exit("n=%d m=%d: tdslc failed: %s" % (n, m, out.stderr))
    want = {"c": c, "a.grad": np.broadcast_to(2 * c, c.shape), "b.grad": 20 * c}
    # a side of 1 row broadcast to c's rows (more, or 0) gets their sum (0 rows: zeros)
    want["a.grad"] = (2 * c).sum(0, keepdims=True) if n == 1 and c.shape[0] != 1 else 2 * c
    want["b.grad"] = (20 * c).sum(0, keepdims=True) if m == 1 and c.shape[0] != 1 else 20 * c
    bad = []
    for line in out.stdout.splitlines():
        t = json.loads(line)
        got, exp = np.array(t["values"], dtype=np.float64), want[t["name"]].ravel()
        if got.size != exp.size or not np.allclose(got, exp, rtol=1e-5):
            bad.append(t["name"])
    print("n=%d m=%d: c has %d rows; %s" % (n, m, c.shape[0], "mismatch in " + ", ".join(bad) if bad else "c and the gradients match numpy"))
