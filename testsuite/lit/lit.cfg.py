# lit configuration for the tdslc testsuite. TDSLC (environment) selects the compiler
# binary under test, so the same tests run against the plain and the sanitized build.
import os
import lit.formats

config.name = "tdslc"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".tdsl", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
root = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))
tdslc = os.environ.get("TDSLC", os.path.join(root, "build", "tdslc"))
# FileCheck: $FILECHECK, else the newest /usr/lib/llvm-N's, else one on PATH.
import glob, shutil, subprocess
def _llvm_version(p):
    v = p.split("/llvm-")[1].split("/")[0]
    return int(v) if v.isdigit() else 0
_found = sorted(glob.glob("/usr/lib/llvm-*/bin/FileCheck"), key=_llvm_version, reverse=True)
filecheck = os.environ.get("FILECHECK") or (_found[0] if _found else shutil.which("FileCheck") or "FileCheck")
config.substitutions.append(("%tdslc", tdslc))
config.substitutions.append(("%root", root))
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("%not", os.path.join(config.test_source_root, "not.sh")))
config.environment["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
config.environment["LSAN_OPTIONS"] = "suppressions=" + os.path.join(root, "testsuite", "lsan.supp")
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
# tdslc's compile cache (src/cache.c) for tests: under build/, not the user's ~/.cache.
config.environment["XDG_CACHE_HOME"] = os.path.join(root, "build", "test-cache")
for k in ("PATH", "HOME", "TMPDIR"):
    if k in os.environ:
        config.environment[k] = os.environ[k]

# %memcap CMD: CMD with at most ~4 GB of memory, so that an allocation a test must not
# make fails loudly instead of succeeding on a large machine. An ASan build reserves
# terabytes of address space (no address-space limit), so it gets ASan's own cap.
try:
    _asan = "libasan" in subprocess.run(["ldd", tdslc], capture_output=True, text=True, timeout=60).stdout
except Exception:
    _asan = False
# "asan": the compiler under test is the sanitized build. The long oracle sweeps (emulated
# CUDA over the numpy cases, the dynamic-size driver) skip it: what they add is numbers,
# which the plain build checks; their compiler paths run sanitized in the other tests.
if _asan:
    config.available_features.add("asan")
config.substitutions.append(("%memcap", "env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:"
                             "max_allocation_size_mb=4000" if _asan else "prlimit --as=4000000000 --"))

# Tests of generated code need the whole front end (parser, staging, inference): the
# "pipeline" feature says tdslc can get a small model through --dump-shapes.
import subprocess, tempfile
with tempfile.TemporaryDirectory() as d:
    probe = os.path.join(d, "probe.tdsl")
    with open(probe, "w") as f:
        f.write("let%op x = range 2\n")
    try:
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        if subprocess.run([tdslc, "--dump-shapes", probe], capture_output=True, env=env, timeout=60).returncode == 0:
            config.available_features.add("pipeline")
    except Exception:
        pass

# The host's vector extensions ("avx2", "avx512f"): tests that run code a fake gcc
# (backend/Inputs/host-target) planned for such a target need the host to execute it.
try:
    with open("/proc/cpuinfo") as f:
        _flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    for _x in ("avx2", "avx512f"):
        if _x in _flags:
            config.available_features.add(_x)
except OSError:
    pass
