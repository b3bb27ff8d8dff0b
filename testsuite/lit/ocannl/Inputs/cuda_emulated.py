#!/usr/bin/env python3
"""Runs every `%tdslc --run %s ...` RUN line of the given OCANNL ports through the CUDA
backend, emulated on the host (the --emit-cuda source compiled as C with
testsuite/cuda/shim.h, TDSL_CUDA_EMULATE), and compares its numbers with the CPU
backend's on the same command (whose numbers the ports check against OCANNL / numpy).

  cuda_emulated.py TDSLC WORKDIR FILE.tdsl...

Prints PASS/FAIL per RUN line and "N passed, M failed"."""
import json, math, os, re, shlex, subprocess, sys

tdslc, work, files = sys.argv[1], sys.argv[2], sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.abspath(os.path.join(HERE, "..", "..", "..", "cuda", "shim.h"))
os.makedirs(work, exist_ok=True)
# the conformance comparison's tolerance (split reductions add in another order)
sys.path.insert(0, os.path.dirname(SHIM))
from check_cases import close  # noqa: E402


def run(cmd, env=None):
    e = dict(os.environ)
    e.pop("TDSL_CUDA_EMULATE", None)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=e)
    return p.returncode, p.stdout, p.stderr


def values(out):
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            o = json.loads(line, parse_constant=lambda c: {"NaN": math.nan, "Infinity": math.inf,
                                                            "-Infinity": -math.inf}[c])
            got[o["name"]] = (o["shape"], o["values"])
    return got


passed = failed = 0
for f in files:
    base = os.path.splitext(os.path.basename(f))[0]
    runs = []
    for line in open(f):
        m = re.match(r"\s*//\s*RUN:\s*%tdslc (--run [^|>]*)", line)
        if m and "%not" not in line:
            runs.append(shlex.split(m.group(1).replace("%s", f).replace("%S", os.path.dirname(f))))
    for k, args in enumerate(runs):
        name = "%s#%d" % (base, k)
        opts = [a for a in args if re.match(r"-O[0-3]$", a) or a.startswith("--precision")]
        cu, lib = os.path.join(work, name + ".cu"), os.path.join(work, name + ".so")
        rc, src, err = run([tdslc, "--backend=cuda", "--emit-cuda"] + opts + [f])
        if rc == 0:
            open(cu, "w").write(src)
            rc, _, err = run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", SHIM, "-x", "c",
                              cu, "-shared", "-fPIC", "-o", lib, "-lm"])
        if rc != 0:
            print("FAIL: %s: %s" % (name, err.strip()[:400])); failed += 1
            continue
        rc1, out1, err1 = run([tdslc] + args)
        rc2, out2, err2 = run([tdslc, "--backend=cuda"] + args, {"TDSL_CUDA_EMULATE": lib})
        cpu, gpu = values(out1), values(out2)
        bad = None
        if rc1 != 0 or rc2 != 0:
            bad = "exit %d (cpu) / %d (cuda): %s" % (rc1, rc2, (err1 + err2).strip()[:400])
        elif set(cpu) != set(gpu) or not cpu:
            bad = "tensors %s vs %s" % (sorted(cpu), sorted(gpu))
        else:
            for t in cpu:
                if cpu[t][0] != gpu[t][0] or len(cpu[t][1]) != len(gpu[t][1]) or \
                   not all(close(float(a), float(b)) for a, b in zip(cpu[t][1], gpu[t][1])):
                    bad = "%s differs: %s vs %s" % (t, str(cpu[t])[:200], str(gpu[t])[:200])
                    break
        if bad:
            print("FAIL: %s: %s" % (name, bad)); failed += 1
        else:
            print("PASS: %s" % name); passed += 1
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
