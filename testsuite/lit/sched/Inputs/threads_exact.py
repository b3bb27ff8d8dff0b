"""Results do not depend on the thread count (schedule.h, Threads). A model with every
kind of parallel statement the schedule makes (kernels split by row tiles and by column
panels, parallel pointwise nests, a column sum split over tiles of its inner loop) runs
through libtdslrt on 1, 2 and 3 threads, compiled by tdslc (a .so) and as the --emit-c
rendering compiled by cc: each rendering gives the same bits at every thread count, the
two renderings agree to float rounding (gcc may contract a*b+c differently), and numpy
checks the contractions and the column sum.
usage: threads_exact.py TDSLC WORKDIR
prints one line per check: "NAME: N results, M differ"."""
import os, subprocess, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import mlp_src, open_model, runtime  # noqa: E402

tdslc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
B, H = 600, 128
src = os.path.join(work, "threads.tdsl")
with open(src, "w") as f:
    f.write(mlp_src(B, H) + """let%op a = { a = uniform (); o = [ 8 ]; i = [ 512 ] }
let%op bm = { bm = uniform (); o = [ 512 ]; i = [ 1024 ] }
let%op c = a * bm
let%op cl = c ++ "...|...->... => 0"
let%cd cstep = grad_update cl
let%op x = { x = uniform (); b = [ 600 ]; o = [ 128 ] }
let%op cs = x ++ "b|o => o"
""")
rng = np.random.default_rng(7)
xs = rng.uniform(-1, 1, (B, 2)).astype(np.float32)
ys = np.where(xs[:, :1] * xs[:, 1:] > 0, 1, -1).astype(np.float32)
sizes = {"w1": H * 2, "b1": H, "w2": H * H, "b2": H, "w3": H, "scalar_loss": 1, "a": 8 * 512, "bm": 512 * 1024,
         "c": 8 * 1024, "a.grad": 8 * 512, "bm.grad": 512 * 1024, "x": 600 * 128, "cs": 128}


def run(rt, so, threads):
    """{name: float32 values} after two training steps, cstep and cs.forward."""
    m = open_model(rt, so)
    ok = rt.tdsl_init(m, 1) == 0 and rt.tdsl_set_num_threads(m, threads) == 0
    ok = ok and rt.tdsl_write(m, b"xs", xs.ctypes.data, xs.size) == 0 and rt.tdsl_write(m, b"ys", ys.ctypes.data, ys.size) == 0
    for r in (b"train_step", b"train_step", b"cstep", b"cs.forward"):
        ok = ok and rt.tdsl_call(m, r) == 0
    got = {}
    for k, n in sizes.items():
        got[k] = np.zeros(n, dtype=np.float32)
        ok = ok and rt.tdsl_read(m, k.encode(), got[k].ctypes.data, n) == 0
    ok = ok and rt.tdsl_get_num_threads(m) == threads
    rt.tdsl_close(m)
    if not ok:
        sys.exit("%s on %d threads failed" % (so, threads))
    return got


def report(name, pairs):
    """pairs: (got, want, rtol); rtol 0 asks for the same bits."""
    bad = 0
    for got, want, rtol in pairs:
        if rtol == 0:
            bad += not np.array_equal(got.view(np.uint32), want.view(np.uint32))
        else:
            bad += not np.max(np.abs(got.astype(np.float64) - want)) <= rtol * (1 + np.max(np.abs(want)))
    print("%s: %d results, %d differ" % (name, len(pairs), bad))
    return bad


so_jit, c_src, so_c = os.path.join(work, "threads.so"), os.path.join(work, "threads_c.c"), os.path.join(work, "threads_c.so")
subprocess.run([tdslc, "-O2", src, "-o", so_jit], check=True)
with open(c_src, "w") as f:
    subprocess.run([tdslc, "--emit-c", src], stdout=f, check=True)
subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", so_c, c_src, "-lm"], check=True)
rt = runtime(tdslc)
jit = {t: run(rt, so_jit, t) for t in (1, 2, 3)}
emc = {t: run(rt, so_c, t) for t in (1, 2, 3)}
bad = report("tdslc, 2 and 3 threads against 1", [(r[k], jit[1][k], 0) for r in (jit[2], jit[3]) for k in sizes])
bad += report("--emit-c, 2 and 3 threads against 1", [(r[k], emc[1][k], 0) for r in (emc[2], emc[3]) for k in sizes])
bad += report("--emit-c against tdslc, 2 threads", [(emc[2][k], jit[2][k].astype(np.float64), 1e-5) for k in sizes])
g = {k: v.astype(np.float64) for k, v in jit[2].items()}
a, bm, x = g["a"].reshape(8, 512), g["bm"].reshape(512, 1024), g["x"].reshape(600, 128)
bad += report("numpy", [(g["c"], (a @ bm).ravel(), 1e-5), (g["a.grad"], np.repeat(bm.sum(1)[None, :], 8, 0).ravel(), 1e-5),
                        (g["bm.grad"], np.repeat(a.sum(0)[:, None], 1024, 1).ravel(), 1e-5), (g["cs"], x.sum(0), 1e-5)])
sys.exit(1 if bad else 0)
