"""exp, tanh or log of float32 inputs spread over its whole range (every STEP-th bit
pattern between -110 and 90 for exp, -20 and 20 for tanh, +0 and +inf for log and every
STEP * 64-th below -0 there, plus the special values), computed by
tdslc's generated code, against the correctly rounded value: numpy's double-precision
function rounded to float32 (a double rounding that can differ only for results within
a double ULP of a float midpoint: about 1 input in 2^29). The gccjit backend computes
them in double and rounds once (backends/gccjit/jit_stmt.c exp_f32, tanh_f32, log_f32);
glibc's expf differs from the correctly rounded value at about 1 input in 13 000, its
tanhf at about 1 in 40, its logf at about 1 in 5 400.

usage: exp_grid.py TDSLC WORKDIR FN STEP [FLAGS...]   (FN: exp, tanh or log)
FLAGS: tdslc options (-O0, -O3, --strict-fp, ...), or `emit-c`: the --emit-c source built
by cc -O2 -march=native and run through libtdslrt. Prints a summary line; exits 1 on
any difference (NaN matches NaN)."""
import ctypes, json, os, subprocess, sys
import numpy as np

tdslc, work, fn, step, flags = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
assert fn in ("exp", "tanh", "log")
os.makedirs(work, exist_ok=True)
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))

special = [np.nan, np.inf, -np.inf, 88.72283, 88.72284, 88.7228394, -87.33654, -103.27893,
           -103.972084, -104.0, -104.00001, 1e-45, -1e-45, 1e-30, 3e38, -3e38,
           9.0, 9.01, 9.02, 10.0, 10.000001, -9.02, 2e-4, -2e-4, 0.3465, 0.3466, -0.3466]
if fn == "log":  # +0 .. +inf; below -0 only NaN, so fewer
    pos = np.arange(0, 0x7f800001, step, dtype=np.uint32)
    neg = np.arange(0x80000000, 0xff800001, step * 64, dtype=np.uint32)
    special += [-np.nan, 0.0, -0.0, 1.0, np.nextafter(1, 2), np.nextafter(1, 0), 0.70710677, 0.7071068, 1.4142135, 1.4142137,
                2.0, 0.5, 3.4028235e38, 1.1754942e-38, 1.1754944e-38, 2e-45, np.float32(-1e-45)]
else:
    lo, hi = np.float32(-110 if fn == "exp" else -20).view(np.uint32), np.float32(90 if fn == "exp" else 20).view(np.uint32)
    pos = np.arange(0, int(hi), step, dtype=np.uint32)               # +0 .. hi
    neg = np.arange(0x80000000, int(lo), step, dtype=np.uint32)      # -0 .. lo
x = np.concatenate([pos.view(np.float32), neg.view(np.float32), np.array(special, np.float32)])
np.save(os.path.join(work, "x.npy"), x)
with open(os.path.join(work, "m.tdsl"), "w") as f:
    f.write("let%%op x = { x; o = [ %d ] }\nlet%%op y = %s x\nlet%%cd run = y.forward\n" % (len(x), fn))

def run_tdslc():
    out = subprocess.run([tdslc, "--run", *flags, os.path.join(work, "m.tdsl"), "--load", "x=" + os.path.join(work, "x.npy"),
                          "--call", "run", "--print", "y", "--json"], check=True, capture_output=True, text=True).stdout
    return np.array(json.loads(out, parse_int=float)["values"], np.float32)  # "-0" is -0.0

def run_emit_c():
    src, so = os.path.join(work, "m.c"), os.path.join(work, "m.so")
    with open(src, "w") as f:
        subprocess.run([tdslc, "--emit-c", os.path.join(work, "m.tdsl")], check=True, stdout=f)
    subprocess.run(["cc", "-O2", "-march=native", "-shared", "-fPIC", "-o", so, src, "-lm"], check=True)
    rt = ctypes.CDLL(os.path.join(ROOT, "build", "libtdslrt.so"))
    rt.tdsl_open.restype = ctypes.c_void_p
    rt.tdsl_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    for fn in ("tdsl_init", "tdsl_call", "tdsl_write", "tdsl_read"):
        getattr(rt, fn).restype = ctypes.c_int
    err = ctypes.create_string_buffer(256)
    m = rt.tdsl_open(so.encode(), err, 256)
    assert m, err.value
    rt.tdsl_init(ctypes.c_void_p(m), ctypes.c_uint64(1))
    p = ctypes.POINTER(ctypes.c_float)
    assert rt.tdsl_write(ctypes.c_void_p(m), b"x", x.ctypes.data_as(p), ctypes.c_long(len(x))) == 0
    assert rt.tdsl_call(ctypes.c_void_p(m), b"run") == 0
    y = np.empty_like(x)
    assert rt.tdsl_read(ctypes.c_void_p(m), b"y", y.ctypes.data_as(p), ctypes.c_long(len(y))) == 0
    return y

y = run_emit_c() if flags == ["emit-c"] else run_tdslc()
with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
    want = getattr(np, fn)(x.astype(np.float64)).astype(np.float32)
same = (y.view(np.uint32) == want.view(np.uint32)) | (np.isnan(y) & np.isnan(want))
bad = np.flatnonzero(~same)
for i in bad[:8]:
    print("%s(%r): got %r, correctly rounded %r" % (fn, float(x[i]), float(y[i]), float(want[i])))
print("%s of %d floats: %d differ from the correctly rounded value" % (fn, len(x), len(bad)))
sys.exit(1 if len(bad) else 0)
