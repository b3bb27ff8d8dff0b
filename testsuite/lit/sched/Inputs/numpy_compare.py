"""Shared by the sched lit scripts: load_args writes the host inputs as raw float32 files
for --load; run_and_compare runs `tdslc --run --json` printing every tensor of `want`,
compares each with its numpy value (max abs error <= rtol * (1 + max |want|)), prints
"N results checked, M mismatches" and exits 1 on any mismatch."""
import json, os, subprocess, sys
import numpy as np


def load_args(work, ins):
    """Writes each array of ins (name -> float32 array) under work; the --load options."""
    os.makedirs(work, exist_ok=True)
    loads = []
    for k, v in ins.items():
        path = os.path.join(work, k + ".bin")
        v.tofile(path)
        loads += ["--load", "%s=%s" % (k, path)]
    return loads


def run_and_compare(cmd, want, rtol):
    for k in want:
        cmd = cmd + ["--print", k]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("tdslc failed: " + out.stderr)
    bad = 0
    for line in out.stdout.splitlines():
        t = json.loads(line)
        got, exp = np.array(t["values"], dtype=np.float64), want[t["name"]].ravel()
        err = np.max(np.abs(got - exp)) if got.size == exp.size else np.inf
        tol = rtol * (1 + np.max(np.abs(exp)))
        if not err <= tol:
            print("%s: max error %g > %g" % (t["name"], err, tol))
            bad += 1
    print("%d results checked, %d mismatches" % (len(want), bad))
    sys.exit(1 if bad else 0)
