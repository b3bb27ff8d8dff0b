"""Every primitive op (OCANNL's syntax extensions: interpret_unop/binop/ternop) through
tdslc --run --json, against numpy on edge values (0, -0, +-1, 0.5, -2.5, 3, +-1e30,
+-inf, NaN): pointwise in %cd (`r =: relu a`, `r =: a -?/ b`, `r =: where (a, b, c)`)
and as accumulators (`z =: a; z =@^ b`). usage: ops_numpy.py TDSLC WORKDIR [FLAGS...]
With --emit-c among the flags, the --emit-c rendering (the other flags apply to it) is
compiled by cc -O2 and run through libtdslrt instead of --run. With --cuda, the model runs
through the CUDA backend, emulated on the host: the --emit-cuda source (the other flags
apply to it) compiled as C with testsuite/cuda/shim.h, TDSL_CUDA_EMULATE. Zeros must have
numpy's sign.
Prints one line per mismatch and exits 1 if any."""
import json, os, subprocess, sys
import warnings
import numpy as np

tdslc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
cuda = "--cuda" in flags
flags = [f for f in flags if f != "--cuda"]
if os.sep in tdslc:  # it runs in WORKDIR
    tdslc = os.path.abspath(tdslc)
dbl = "--precision=double" in flags
ft = np.float64 if dbl else np.float32
os.makedirs(work, exist_ok=True)

E = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
E3 = [0.0, 1.0, -2.5, np.inf, np.nan]
n2 = len(E) ** 2
def arr(v):  # inputs travel as float32 files (--load), whatever the precision
    return np.array(v, dtype=np.float32).astype(ft)

a2 = arr([x for x in E for _ in E])
b2 = arr([y for _ in E for y in E])
a3 = arr([x for x in E3 for _ in E3 for _ in E3])
b3 = arr([y for _ in E3 for y in E3 for _ in E3])
c3 = arr([z for _ in E3 for _ in E3 for z in E3])

def w(c, t, f):  # where, as the OCANNL: c != 0 selects t
    return np.where(c != 0, t, f)

def power(a, b):  # C's pow (numpy's power) for every exponent, integer ones included
    with np.errstate(all="ignore"):
        return np.power(a, b)

one, zero = ft(1), ft(0)
UN = {
    "id": ("id a", lambda a: a), "relu": ("relu a", lambda a: w(a >= 0, a, zero)),
    "sat01": ("sat01 a", lambda a: w(a <= 0, zero, w(a >= 1, one, a))),
    "exp": ("exp a", np.exp), "log": ("log a", np.log), "exp2": ("exp2 a", np.exp2),
    "log2": ("log2 a", np.log2), "sin": ("sin a", np.sin), "cos": ("cos a", np.cos),
    "sqrt": ("sqrt a", np.sqrt), "recip": ("recip a", lambda a: one / a),
    "recip_sqrt": ("recip_sqrt a", lambda a: one / np.sqrt(a)), "neg": ("neg a", np.negative),
    "tanh": ("tanh a", np.tanh), "not": ("not a", lambda a: w(a == 0, one, zero)),
}
BIN = {
    "fst": ("-@>", lambda a, b: a), "snd": ("-/>", lambda a, b: b), "add": ("+", np.add),
    "sub": ("-", np.subtract), "mul": ("*", np.multiply), "div": ("/", np.divide),
    "pow": ("**", power), "relu_gate": ("-?/", lambda a, b: w(a > 0, b, zero)),
    "sat01_gate": ("-?^", lambda a, b: w((a > 0) & (a < 1), b, zero)),
    "lt": ("<", lambda a, b: (a < b).astype(ft)), "eq": ("=", lambda a, b: (a == b).astype(ft)),
    "ne": ("<>", lambda a, b: (a != b).astype(ft)),
    "or": ("||", lambda a, b: ((a != 0) | (b != 0)).astype(ft)),
    "and": ("&&", lambda a, b: ((a != 0) & (b != 0)).astype(ft)),
    "mod": ("%", np.fmod), "max": ("@^", np.maximum), "min": ("@-", np.minimum),
}
ACC = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "relu_gate": "?/",
       "sat01_gate": "?^", "or": "||", "and": "&&", "max": "@^", "min": "@-"}
TER = {"where": ("where (a3, b3, c3)", lambda a, b, c: w(a != 0, b, c)),
       "fma": ("fma (a3, b3, c3) ~logic:\".\"", lambda a, b, c: a * b + c)}

lines = [f"let%cd a = {{ a; o = [ {n2} ] }}", f"let%cd b = {{ b; o = [ {n2} ] }}",
         f"let%cd a3 = {{ a3; o = [ {len(a3)} ] }}", f"let%cd b3 = {{ b3; o = [ {len(a3)} ] }}",
         f"let%cd c3 = {{ c3; o = [ {len(a3)} ] }}"]
body, want = [], {}
with np.errstate(all="ignore"):
    for k, (src, f) in UN.items():
        lines.append(f"let%cd u_{k} = {{ u_{k}; o = [ {n2} ] }}")
        body.append(f"u_{k} =: {src}"); want[f"u_{k}"] = f(a2)
    for k, (tok, f) in BIN.items():
        lines.append(f"let%cd b_{k} = {{ b_{k}; o = [ {n2} ] }}")
        body.append(f"b_{k} =: a {tok} b"); want[f"b_{k}"] = f(a2, b2)
    for k, tok in ACC.items():
        lines.append(f"let%cd z_{k} = {{ z_{k}; o = [ {n2} ] }}")
        body.append(f"z_{k} =: a"); body.append(f"z_{k} ={tok} b"); want[f"z_{k}"] = BIN[k][1](a2, b2)
    for k, (src, f) in TER.items():
        lines.append(f"let%cd t_{k} = {{ t_{k}; o = [ {len(a3)} ] }}")
        body.append(f"t_{k} =: {src}"); want[f"t_{k}"] = f(a3, b3, c3)
lines.append("let%cd run_ops = " + "; ".join(body))
with open(os.path.join(work, "ops.tdsl"), "w") as fh:
    fh.write("\n".join(lines) + "\n")
inputs = [("a", a2), ("b", b2), ("a3", a3), ("b3", b3), ("c3", c3)]
got = {}
if "--emit-c" in flags:
    import ctypes
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sched", "Inputs"))
    from numpy_compare import open_model, runtime
    c_src, so = os.path.join(work, "ops.c"), os.path.join(work, "ops.so")
    with open(c_src, "w") as fh:
        res = subprocess.run([tdslc, "ops.tdsl"] + flags, cwd=work, stdout=fh, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        print("tdslc failed:", res.returncode, res.stderr[:2000]); sys.exit(1)
    res = subprocess.run(["cc", "-std=c11", "-O2", "-shared", "-fPIC", "-o", so, c_src, "-lm"], capture_output=True, text=True)
    if res.returncode != 0:
        print("cc failed:", res.stderr[:2000]); sys.exit(1)
    rt = runtime(tdslc)
    for fn in ("tdsl_read_f64", "tdsl_write_f64"):
        getattr(rt, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long]
    m = open_model(rt, so)
    ok = rt.tdsl_init(m, 0) == 0
    for name, arr in inputs:
        v = np.ascontiguousarray(arr, dtype=np.float64)
        ok = ok and rt.tdsl_write_f64(m, name.encode(), v.ctypes.data, v.size) == 0
    ok = ok and rt.tdsl_call(m, b"run_ops") == 0
    for name, e in want.items():
        buf = np.zeros(e.size, dtype=np.float64)
        ok = ok and rt.tdsl_read_f64(m, name.encode(), buf.ctypes.data, buf.size) == 0
        got[name] = buf
    rt.tdsl_close(m)
    if not ok:
        print("the --emit-c model failed"); sys.exit(1)
else:
    args = [tdslc, "--run", "ops.tdsl", "--json", "--call", "run_ops"] + flags
    env = None
    if cuda:
        shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "cuda", "shim.h")
        with open(os.path.join(work, "ops.cu"), "w") as fh:
            res = subprocess.run([tdslc, "--backend=cuda", "--emit-cuda", "ops.tdsl"] + flags, cwd=work, stdout=fh,
                                 stderr=subprocess.PIPE, text=True)
        if res.returncode != 0:
            print("tdslc --emit-cuda failed:", res.returncode, res.stderr[:2000]); sys.exit(1)
        res = subprocess.run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", shim, "-x", "c", "ops.cu",
                              "-shared", "-fPIC", "-o", "ops.emu.so", "-lm"], cwd=work, capture_output=True, text=True)
        if res.returncode != 0:
            print("cc failed:", res.stderr[:2000]); sys.exit(1)
        env = dict(os.environ, TDSL_CUDA_EMULATE=os.path.join(os.path.abspath(work), "ops.emu.so"))
        args.insert(1, "--backend=cuda")
    for name, arr in inputs:
        arr.astype("<f4").tofile(os.path.join(work, name + ".bin"))
        args += ["--load", f"{name}={name}.bin"]
    for name in want:
        args += ["--print", name]
    res = subprocess.run(args, cwd=work, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print("tdslc failed:", res.returncode, res.stderr[:2000]); sys.exit(1)
    for line in res.stdout.splitlines():
        o = json.loads(line, parse_int=float)  # keeps the sign of "-0"
        got[o["name"]] = np.array([float(v) for v in o["values"]], dtype=np.float64)
bad = 0
rtol = 1e-13 if dbl else 2e-6
ins = {1: (a2,), 2: (a2, b2), 3: (a3, b3, c3)}
for name, exp in want.items():
    g, e = got[name], exp.astype(np.float64)
    with np.errstate(all="ignore"):
        same = (g == e) & (np.signbit(g) == np.signbit(e))  # -0 is not 0
        ok = (np.isnan(e) & np.isnan(g)) | same | ((g != e) & np.isfinite(e) & (np.abs(g - e) <= rtol * np.abs(e) + 1e-30))
    for i in np.nonzero(~ok)[0][:3]:
        bad += 1
        src = a3 if name.startswith("t_") else a2
        print(f"{name}[{i}] (a={src[i]}, b={(b3 if name.startswith('t_') else b2)[i]}): got {g[i]!r}, numpy {e[i]!r}")
print(f"{len(want)} ops checked, {bad} mismatches")
sys.exit(1 if bad else 0)
