"""Checks sgd_update (stdlib) against a numpy re-implementation of OCANNL's sgd_one:
two training steps on loss = sum(w *. w *. c), with weight decay, momentum and
nesterov variants. Usage: check_sgd.py TDSLC WORKDIR. Prints ALL-OK on success."""
import json
import os
import subprocess
import sys

import numpy as np

tdslc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
W0 = np.array([0.5, -1.0, 2.0])
C = np.array([1.0, 2.0, 0.5])

def oracle(lr, wd, mom, nest, steps):
    w = W0.copy()
    buf = np.zeros_like(w)
    for _ in range(steps):
        g = 2 * w * C
        delta = g + wd * w
        if mom > 0:
            buf = mom * buf + delta
            delta = delta + mom * buf if nest else buf
        w = w - lr * delta
    return w

ok = True
for lr, wd, mom, nest in [(0.1, 0.0, 0.0, False), (0.1, 0.01, 0.0, False), (0.05, 0.0, 0.9, False),
                          (0.05, 0.001, 0.9, True)]:
    prog = ("let%%op loss = ({ w = [ %s ] } *. w *. [ %s ]) ++ \"...|...->... => 0\"\n"
            "let%%cd step = grad_update loss; sgd_update ~learning_rate:%r ~weight_decay:%r ~momentum:%r"
            " ~nesterov:%s loss\n" % ("; ".join(map(repr, W0)), "; ".join(map(repr, C)), lr, wd, mom,
                                      "true" if nest else "false"))
    path = os.path.join(work, "sgd.tdsl")
    open(path, "w").write(prog)
    r = subprocess.run([tdslc, "--run", path, "--call", "step", "--call", "step", "--print", "w", "--json"],
                       capture_output=True, text=True)
    want = oracle(lr, wd, mom, nest, 2)
    if r.returncode != 0:
        print("FAIL", lr, wd, mom, nest, r.stderr[-400:])
        ok = False
        continue
    got = np.array(json.loads(r.stdout.splitlines()[0])["values"])
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        print("FAIL", lr, wd, mom, nest, got.tolist(), want.tolist())
        ok = False
print("ALL-OK" if ok else "SOME-FAILED")
