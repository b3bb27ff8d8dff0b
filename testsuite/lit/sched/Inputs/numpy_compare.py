"""Shared by the sched lit scripts: load_args writes the host inputs as raw float32 files
for --load; run_and_compare runs `tdslc --run --json` printing every tensor of `want`,
compares each with its numpy value (max abs error <= rtol * (1 + max |want|)), prints
"N results checked, M mismatches" and exits 1 on any mismatch; libtdslrt through
ctypes, for the scripts that open compiled models themselves; emit_c_results, a
model's --emit-c rendering compiled by cc and run; and bitwise_threads, a model's
results against numpy bit for bit on 1 and 2 threads."""
import ctypes, json, os, subprocess, sys
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


def mlp_src(B, H):
    """The moons MLP training step (2-H-H-1, relu, hinge loss, SGD with weight decay) at
    batch B: the model of bench/train_b*_h*.tdsl."""
    return """let%%cd xs = { xs; b = [ %d ]; o = [ 2 ] }
let%%cd ys = { ys; b = [ %d ]; o = [ 1 ] }
let%%op mlp x = { w3 } * relu ({ b2; o = [ %d ] } + ({ w2 } * relu ({ b1; o = [ %d ] } + ({ w1 } * x))))
let%%op margin_loss = relu (1 - (ys *. mlp xs))
let%%op scalar_loss = (margin_loss ++ "...|... => 0") /. !..%d
let%%cd train_step = grad_update scalar_loss; sgd_update ~learning_rate:0.1 ~weight_decay:0.0001 scalar_loss
""" % (B, B, H, H, B)


def runtime(tdslc):
    """libtdslrt next to the tdslc in use, or the plain build's (the sanitized build has
    none), with the argument types of the functions the scripts call."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
    libs = [os.path.join(os.path.dirname(os.path.abspath(tdslc)), "libtdslrt.so"), os.path.join(root, "build", "libtdslrt.so")]
    rt = ctypes.CDLL(next((p for p in libs if os.path.exists(p)), libs[0]))
    rt.tdsl_open.restype = ctypes.c_void_p
    rt.tdsl_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    for fn in ("tdsl_init", "tdsl_call", "tdsl_write", "tdsl_read", "tdsl_get_num_threads", "tdsl_set_num_threads", "tdsl_close"):
        getattr(rt, fn).argtypes = [ctypes.c_void_p] + {"tdsl_init": [ctypes.c_uint64], "tdsl_call": [ctypes.c_char_p],
                                                        "tdsl_set_num_threads": [ctypes.c_int],
                                                        "tdsl_write": [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long],
                                                        "tdsl_read": [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long]}.get(fn, [])
    return rt


def open_model(rt, so):
    err = ctypes.create_string_buffer(512)
    m = rt.tdsl_open(so.encode(), err, 512)
    if not m:
        sys.exit("tdsl_open: " + err.value.decode())
    return m


def emit_c_results(tdslc, src, ins, calls, want, threads=0):
    """Compiles the --emit-c rendering of the model file src with cc and opens it through
    libtdslrt (on `threads` threads; 0: the runtime's default), writes ins (name ->
    float32 array), runs the routines calls in turn; returns ({name: float32 array} for
    each name of want, an array of its size; the thread count). Exits on any failure."""
    c, so = src[:-5] + ".c", src[:-5] + ".so"
    with open(c, "w") as f:
        subprocess.run([tdslc, "--emit-c", src], stdout=f, check=True)
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", so, c, "-lm"], check=True)
    rt = runtime(tdslc)
    m = open_model(rt, so)
    ok = rt.tdsl_init(m, 1) == 0 and (not threads or rt.tdsl_set_num_threads(m, threads) == 0)
    for k, v in ins.items():
        ok = ok and rt.tdsl_write(m, k.encode(), v.ctypes.data, v.size) == 0
    for call in calls:
        ok = ok and rt.tdsl_call(m, call.encode()) == 0
    got = {}
    for k, v in want.items():
        got[k] = buf = np.zeros(v.size, dtype=np.float32)
        ok = ok and rt.tdsl_read(m, k.encode(), buf.ctypes.data, buf.size) == 0
    nthreads = rt.tdsl_get_num_threads(m)
    rt.tdsl_close(m)
    if not ok:
        sys.exit("the --emit-c model failed")
    return got, nthreads


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


def bitwise_threads(rt, so, ins, calls, want):
    """Opens the compiled model so on 1 and 2 threads: writes ins (name -> float32
    array), runs the routines calls, and compares each tensor of want with its array bit
    for bit (signs of zeros included). Prints "N threads: R results, D differ" per run;
    returns the number that differ."""
    bad = 0
    for threads in (1, 2):
        m = open_model(rt, so)
        ok = rt.tdsl_init(m, 1) == 0 and rt.tdsl_set_num_threads(m, threads) == 0
        for k, v in ins.items():
            ok = ok and rt.tdsl_write(m, k.encode(), v.ctypes.data, v.size) == 0
        for c in calls:
            ok = ok and rt.tdsl_call(m, c.encode()) == 0
        differ = 0
        for k, v in want.items():
            got = np.zeros(v.size, dtype=np.float32)
            ok = ok and rt.tdsl_read(m, k.encode(), got.ctypes.data, got.size) == 0
            differ += not np.array_equal(got.view(np.uint32), np.ascontiguousarray(v, np.float32).ravel().view(np.uint32))
        rt.tdsl_close(m)
        if not ok:
            sys.exit("%d threads failed" % threads)
        print("%d threads: %d results, %d differ" % (threads, len(want), differ))
        bad += differ
    return bad
