#!/usr/bin/env python3
"""Checks tdslc's CUDA backend on every conformance case that has "values".

  check_cases.py [--tdslc PATH] [--cases DIR]... [--gpu] [--tf32] [--filter SUBSTR] [-v] [-j N]

Cases: the shared conformance suite (../shared/conformance/cases) and this backend's own
(testsuite/cuda/cases, same format). Without --gpu (make check; no GPU needed), for each
case:
  1. the CPU backend runs it (tdslc --run ... --json), as the conformance runner does;
     a case the CPU backend cannot run is skipped (not this backend's failure);
  2. tdslc --backend=cuda -o NAME.so compiles it (NVRTC), and --emit-ptx gives PTX that
     ptxas assembles for sm_80 and sm_90 (skipped without the CUDA toolkit);
  3. emulation: the --emit-cuda source, compiled as host C with shim.h, runs through the
     runtime's TDSL_CUDA_EMULATE mode (tdslc --backend=cuda --run) and must print the
     CPU backend's numbers.
With --gpu (make check-gpu): step 3 runs on the GPU instead of the emulation. With --tf32
every CUDA step compiles with --tf32 (fp32 contractions on TF32 tensor cores) and the
numbers must agree within TF32's precision (the tolerance of close_tf32).
Prints PASS/FAIL/SKIP per case and "N passed, M failed, K skipped"; exit 1 on failure.
"""

import argparse
import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SHIM = os.path.join(HERE, "shim.h")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def run(cmd, cwd, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("TDSL_CUDA_EMULATE", None)
    if env:
        e.update(env)
    try:
        p = subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"


def run_args(name, exp):
    """The --run arguments of the conformance runner for this case."""
    args = ["--run", name + ".tdsl"] + list(exp.get("args", []))
    for r in exp.get("call", []):
        args += ["--call", r]
    for t in exp["values"]:
        args += ["--print", t]
    return args + ["--json"]


def parse_values(out):
    vals = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            o = json.loads(line, parse_constant=lambda c: {"NaN": math.nan, "Infinity": math.inf,
                                                            "-Infinity": -math.inf}[c])
            vals[o["name"]] = [math.nan if v is None else float(v) for v in o["values"]]
    return vals


def close(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    # The conformance suite's tolerance: split reductions add in another order.
    return abs(a - b) <= 1e-5 + 1e-4 * abs(a)


def close_tf32(a, b, scale):
    """TF32 keeps 10 of fp32's 23 mantissa bits (relative rounding 2^-11 per operand): a
    sum of products is within about 1e-3 of the largest magnitude among the values of its
    tensor (scale), more for long sums of cancelling terms."""
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return close(a, b)
    return abs(a - b) <= 1e-5 + 3e-3 * scale


def compare(cpu, other, tf32=False):
    for name, xs in cpu.items():
        ys = other.get(name)
        if ys is None:
            return "%s not printed" % name
        if len(ys) != len(xs):
            return "%s: %d values, cpu %d" % (name, len(ys), len(xs))
        scale = max([abs(x) for x in xs if math.isfinite(x)] or [0])
        for i, (x, y) in enumerate(zip(xs, ys)):
            if not (close_tf32(x, y, scale) if tf32 else close(x, y)):
                return "%s[%d] = %r, cpu %r" % (name, i, y, x)
    return None


class Checker:
    def __init__(self, opts, toolkit):
        self.o = opts
        self.toolkit = toolkit

    def case(self, path):
        name = os.path.basename(path)[: -len(".expect.json")]
        cdir = os.path.dirname(path)
        with open(path) as f:
            exp = json.load(f)
        args = run_args(name, exp)
        tdslc = self.o.tdslc
        rc, out, err = run([tdslc] + args, cdir)
        if rc != 0:
            return "SKIP", name, "the cpu backend cannot run it: " + (err.strip().splitlines() or ["?"])[0]
        cpu = parse_values(out)
        tmp = tempfile.mkdtemp(prefix="tdsl-cuda-case-")
        try:
            return self.cuda_checks(name, cdir, tmp, args, cpu)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def cuda_checks(self, name, cdir, tmp, args, cpu):
        tdslc = self.o.tdslc
        cuda = ["--backend=cuda"] + (["--tf32"] if self.o.tf32 else [])
        if self.toolkit:
            so = os.path.join(tmp, name + ".so")
            rc, _, err = run([tdslc] + cuda + [name + ".tdsl", "-o", so], cdir)
            if rc != 0 or not os.path.exists(so):
                return "FAIL", name, "--backend=cuda -o: exit %d: %s" % (rc, err.strip()[-2000:])
            ptx = os.path.join(tmp, name + ".ptx")
            rc, _, err = run([tdslc] + cuda + ["--emit-ptx", name + ".tdsl", "-o", ptx], cdir)
            if rc != 0:
                return "FAIL", name, "--emit-ptx: exit %d: %s" % (rc, err.strip()[-2000:])
            for arch in ("sm_80", "sm_90"):
                rc, _, err = run([os.path.join(CUDA_HOME, "bin", "ptxas"), "-arch=" + arch, ptx, "-o", os.devnull], cdir)
                if rc != 0:
                    return "FAIL", name, "ptxas %s: %s" % (arch, err.strip()[-2000:])
        env = None
        if not self.o.gpu:
            rc, src, err = run([tdslc] + cuda + ["--emit-cuda", name + ".tdsl"], cdir)
            if rc != 0:
                return "FAIL", name, "--emit-cuda: exit %d: %s" % (rc, err.strip())
            cu = os.path.join(tmp, name + ".cu")
            lib = os.path.join(tmp, name + ".emu.so")
            with open(cu, "w") as f:
                f.write(src)
            rc, _, err = run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", SHIM, "-x", "c", cu,
                              "-shared", "-fPIC", "-o", lib, "-lm"], tmp)
            if rc != 0:
                return "FAIL", name, "the kernels do not compile as host C: " + err.strip()[-2000:]
            env = {"TDSL_CUDA_EMULATE": lib}
        rc, out, err = run([tdslc] + cuda + args, cdir, env)
        if rc != 0:
            return "FAIL", name, "--backend=cuda --run: exit %d: %s" % (rc, err.strip()[-2000:])
        diff = compare(cpu, parse_values(out), self.o.tf32)
        if diff:
            return "FAIL", name, ("gpu" if self.o.gpu else "emulation") + " differs from cpu: " + diff
        return "PASS", name, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("--cases", action="append",
                    help="a directory of cases (repeatable; default: the shared conformance cases and "
                         "testsuite/cuda/cases)")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--filter", default="")
    ap.add_argument("-v", action="store_true")
    # Mostly waiting on compilers and the linker: more jobs than cores.
    ap.add_argument("-j", type=int, default=4 * (os.cpu_count() or 2))
    o = ap.parse_args()
    o.tdslc = os.path.abspath(o.tdslc)
    dirs = o.cases or [os.path.join(ROOT, "..", "shared", "conformance", "cases"), os.path.join(HERE, "cases")]
    cases = []
    for d in dirs:
        if not os.path.isdir(d):
            print("no cases at %s" % d)
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".expect.json") and o.filter in f:
                p = os.path.join(d, f)
                with open(p) as fh:
                    if "values" in json.load(fh) and os.path.exists(p[: -len(".expect.json")] + ".tdsl"):
                        cases.append(p)
    # The toolkit: tdslc built with NVRTC and ptxas present.
    linked = run(["ldd", o.tdslc], ROOT)[1]
    toolkit = "libnvrtc" in linked and os.path.exists(os.path.join(CUDA_HOME, "bin", "ptxas"))
    if not toolkit:
        print("no CUDA toolkit (NVRTC in tdslc, ptxas): PTX checks skipped")
    chk = Checker(o, toolkit)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=o.j) as ex:
        for status, name, why in ex.map(chk.case, cases):
            counts[status] += 1
            if status == "PASS" or (status == "SKIP" and not o.v):
                print("%s %s" % (status, name))
            else:
                print("%s %s: %s" % (status, name, why))
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
