"""Shared by check_init.py and check_init_ops.py: run a model's init through `tdslc --run
--json` and print named checks."""
import json
import subprocess
import sys

import numpy as np


def run(tdslc, path, names, seed):
    """The values of the tensors names after init with seed (name -> float64 array);
    exits 1 with tdslc's message when it fails."""
    cmd = [tdslc, "--run", path, "--json", "--seed", str(seed)]
    for nm in names:
        cmd += ["--print", nm]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        print("FAIL tdslc", out.stderr)
        sys.exit(1)
    return {r["name"]: np.array(r["values"], dtype=float) for r in map(json.loads, out.stdout.splitlines())}


def check(name, ok, detail=""):
    print(("OK " if ok else "FAIL ") + name + ("" if ok else ": %s" % (detail,)))
