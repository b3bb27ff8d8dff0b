"""Runs Inputs/stream.tdsl (streamed transposes, schedule.h) through libtdslrt, compiled
by tdslc (a .so) and as its --emit-c rendering compiled by cc, on 1 and 2 threads, and
compares both permutes with numpy's transpose bit for bit (a permute computes nothing).
usage: stream_numpy.py TDSLC WORKDIR OPT [--precision=double]
prints "RENDERING, N threads: 4 results, M differ" per run."""
import ctypes, os, subprocess, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import open_model, runtime  # noqa: E402

tdslc, work, opt, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
f64 = "--precision=double" in flags
dt = np.float64 if f64 else np.float32
os.makedirs(work, exist_ok=True)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stream.tdsl")
rng = np.random.default_rng(11)
ins = {"x": rng.uniform(-1, 1, (64, 32, 64, 64)).astype(dt), "z": rng.uniform(-1, 1, (66, 32, 64, 64)).astype(dt)}
want = {"w": ins["x"].transpose(3, 2, 1, 0).ravel(), "y": ins["x"].transpose(0, 2, 1, 3).ravel(),
        "r": np.maximum(ins["x"], 0).ravel(), "v": ins["z"].transpose(3, 2, 1, 0).ravel()}
rt = runtime(tdslc)
ptr = ctypes.POINTER(ctypes.c_double)
for fn in ("tdsl_write_f64", "tdsl_read_f64"):
    getattr(rt, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long]
write, read = (rt.tdsl_write_f64, rt.tdsl_read_f64) if f64 else (rt.tdsl_write, rt.tdsl_read)

so, c_src, so_c = (os.path.join(work, n) for n in ("stream.so", "stream.c", "stream_c.so"))
subprocess.run([tdslc, opt] + flags + [src, "-o", so], check=True)
with open(c_src, "w") as f:
    subprocess.run([tdslc, "--emit-c"] + flags + [src], stdout=f, check=True)
subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", so_c, c_src, "-lm"], check=True)
bad = 0
for name, lib in (("tdslc", so), ("--emit-c", so_c)):
    for threads in (1, 2):
        m = open_model(rt, lib)
        ok = rt.tdsl_init(m, 1) == 0 and rt.tdsl_set_num_threads(m, threads) == 0
        for k, v in ins.items():
            ok = ok and write(m, k.encode(), v.ctypes.data, v.size) == 0
        for k in want:
            ok = ok and rt.tdsl_call(m, k.encode() + b".forward") == 0
        differ = 0
        for k, v in want.items():
            got = np.zeros(v.size, dtype=dt)
            ok = ok and read(m, k.encode(), got.ctypes.data, got.size) == 0
            differ += not np.array_equal(got, v)
        rt.tdsl_close(m)
        if not ok:
            sys.exit("%s on %d threads failed" % (name, threads))
        print("%s, %d threads: %d results, %d differ" % (name, threads, len(want), differ))
        bad += differ
sys.exit(1 if bad else 0)
