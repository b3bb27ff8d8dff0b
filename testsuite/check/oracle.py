#!/usr/bin/env python3
"""Runs tdslc --check (the differential oracle) over the conformance cases and samples.

  oracle.py [--tdslc PATH] [--levels 0,1,2,3] [--threads 1,2] [--cuda] [--filter SUBSTR]
            [-j N] [FILE.tdsl...]

Every conformance case that has "values" (with its "args": --set/--load), every sample
model and the models of testsuite/check/Inputs/ (parallel loops) are checked at each -O level and each thread count of the runtime's pool
(TDSL_NUM_THREADS: parallel loops split among that many threads): the optimized build
must agree with the plain -O0 loop IR on every routine. With --cuda, the candidate is the CUDA backend under the
runtime's emulation (the --emit-cuda source compiled as host C with
testsuite/cuda/shim.h, TDSL_CUDA_EMULATE). A model with "oracle-args: ARGS" lines (a
dynamic one: --set its dims) is checked once per line, with those arguments. Prints
PASS/FAIL per case and level and a last line "N passed, M failed"; exit 1 on failure.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SHIM = os.path.join(ROOT, "testsuite", "cuda", "shim.h")


def suite_dir():
    for d in (os.path.join(ROOT, "..", "shared", "conformance", "cases"), "/work/shared/conformance/cases"):
        if os.path.isdir(d):
            return os.path.abspath(d)
    return None


def model_args(path):
    """The argument lists of the model's oracle-args lines, or one empty list."""
    with open(path) as f:
        lines = [ln.split("oracle-args:", 1)[1] for ln in f if "oracle-args:" in ln]
    return [shlex.split(ln.replace("*)", "")) for ln in lines] or [[]]


def cases(filters):
    """(path, extra args) of each model to check."""
    out = []
    d = suite_dir()
    for exp_path in sorted(glob.glob(os.path.join(d, "*.expect.json"))) if d else []:
        with open(exp_path) as f:
            exp = json.load(f)
        if "values" in exp:
            out.append((exp_path[: -len(".expect.json")] + ".tdsl", list(exp.get("args", []))))
    for p in sorted(glob.glob(os.path.join(ROOT, "samples", "*", "*.tdsl"))):
        out.append((p, []))
    # models large enough for parallel loops (the thread counts matter there)
    for p in sorted(glob.glob(os.path.join(HERE, "Inputs", "*.tdsl"))):
        out.extend((p, args) for args in model_args(p))
    return [c for c in out if not filters or any(f in c[0] for f in filters)]


def run(cmd, cwd, env=None, timeout=600):
    e = dict(os.environ)
    e.pop("TDSL_CUDA_EMULATE", None)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return 124, "timeout after %ds" % timeout


def emulation_lib(tdslc, path, args, tmp):
    """The kernels of the model as a host library for TDSL_CUDA_EMULATE, or an error."""
    name = os.path.splitext(os.path.basename(path))[0]
    rc, src = run([tdslc, "--backend=cuda", "--emit-cuda", path], os.path.dirname(path))
    if rc:
        return None, "--emit-cuda: exit %d: %s" % (rc, src.strip()[:400])
    cu, lib = os.path.join(tmp, name + ".cu.c"), os.path.join(tmp, name + ".emu.so")
    with open(cu, "w") as f:
        f.write(src)
    rc, err = run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", SHIM, "-x", "c", cu,
                   "-shared", "-fPIC", "-lm", "-o", lib], tmp)
    return (lib, None) if rc == 0 else (None, "emulation build: " + err.strip()[:400])


def check_one(tdslc, path, args, level, threads, cuda):
    name = os.path.relpath(path, ROOT) if path.startswith(ROOT) else os.path.basename(path)
    label = "%s%s -O%d%s%s" % (name, "".join(" " + x for x in args), level, " cuda" if cuda else "",
                                " threads=%d" % threads if threads else "")
    cmd = [tdslc, "--check", "-O%d" % level, path] + args
    env = {"TDSL_NUM_THREADS": str(threads)} if threads else {}
    with tempfile.TemporaryDirectory() as tmp:
        if cuda:
            lib, err = emulation_lib(tdslc, path, args, tmp)
            if not lib:
                return False, label, err
            cmd.append("--backend=cuda")
            env["TDSL_CUDA_EMULATE"] = lib
        rc, out = run(cmd, os.path.dirname(path), env)
    return rc == 0, label, out.strip().splitlines()[-1] if rc == 0 and out.strip() else out.strip()[:1500]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("--levels", default="0,1,2,3")
    ap.add_argument("--threads", default="1,2", help="thread counts (CPU backend; the cuda one ignores it)")
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    todo = [(os.path.abspath(f), args) for f in a.files for args in model_args(f)] or cases(a.filter)
    if not todo:
        print("SKIP: no conformance suite or samples found")
    tdslc = os.path.abspath(a.tdslc)
    levels = [int(x) for x in a.levels.split(",")]
    threads = [None] if a.cuda else [int(x) for x in a.threads.split(",")]
    jobs = [(p, args, lv, t) for p, args in todo for lv in levels for t in threads]
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
        for ok, label, msg in ex.map(lambda j: check_one(tdslc, j[0], j[1], j[2], j[3], a.cuda), jobs):
            if ok:
                passed += 1
                if a.v:
                    print("PASS %s: %s" % (label, msg))
            else:
                failed += 1
                print("FAIL %s: %s" % (label, msg))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
