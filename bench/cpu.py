#!/usr/bin/python3
"""CPU code generation benchmark (make bench-cpu): tdslc-compiled models against the usual
alternative, side by side in one process. Each row compiles a small .tdsl with tdslc
-O3, opens it through libtdslrt (ctypes), and alternates rounds of the tdslc routine
and the reference (numpy/OpenBLAS, torch, memcpy, or tdslc itself on one thread);
prints the median over the rounds of the per-round ratio (reference time / tdslc time:
> 1 means tdslc is faster) with min-max, from thread CPU time (single-thread rows,
pinned to CPU 0) or wall time (thread-count rows: 2 threads against 1, which also
print the ratio of process CPU time, 1 thread / 2 threads: 1.0 when the second thread
adds no work, what a loaded machine's wall clock cannot show).
usage: bench/cpu.py [TDSLC] [ROUNDS] [GROUPS]   (make bench: build/tdslc, 7 rounds, all rows;
GROUPS: a comma-separated subset of sgemm,bmm,sum,permute,conv,pointwise,threads, e.g. "sum,permute"
for the memory-bound rows alone)"""
import ctypes, os, statistics, subprocess, sys, tempfile, time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
import numpy as np

try:
    import torch
    torch.set_num_threads(1)
except Exception:  # torch rows are skipped without it
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TDSLC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tdslc")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
GROUPS = ("sgemm", "bmm", "sum", "permute", "conv", "pointwise", "threads")
WANTED = sys.argv[3].split(",") if len(sys.argv) > 3 else GROUPS
if set(WANTED) - set(GROUPS):
    sys.exit("bench: unknown row group(s) %s (known: %s)" % (",".join(sorted(set(WANTED) - set(GROUPS))), ",".join(GROUPS)))
rt = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(TDSLC)), "libtdslrt.so"))
rt.tdsl_open.restype = ctypes.c_void_p
rt.tdsl_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
for f in ("tdsl_init", "tdsl_call", "tdsl_set_num_threads", "tdsl_close"):
    getattr(rt, f).argtypes = [ctypes.c_void_p] + ([ctypes.c_uint64] if f == "tdsl_init" else
                                                    [ctypes.c_char_p] if f == "tdsl_call" else
                                                    [ctypes.c_int] if f == "tdsl_set_num_threads" else [])
WORK = tempfile.mkdtemp(prefix="tdsl-bench-")


def model(name, src, threads=1):
    path = os.path.join(WORK, name + ".tdsl")
    with open(path, "w") as f:
        f.write(src)
    so = os.path.join(WORK, name + ".so")
    subprocess.run([TDSLC, "-O3", path, "-o", so], check=True)
    err = ctypes.create_string_buffer(512)
    m = rt.tdsl_open(so.encode(), err, 512)
    if not m:
        sys.exit("bench: " + err.value.decode())
    rt.tdsl_init(m, 1)
    rt.tdsl_set_num_threads(m, threads)
    return m


def caller(m, routine):
    r = routine.encode()
    def call():
        if rt.tdsl_call(m, r):
            sys.exit("bench: tdsl_call %s failed" % routine)
    return call


def timed(f, clock, reps):
    t = clock()
    for _ in range(reps):
        f()
    return (clock() - t) / reps


def compare(f_tdsl, f_ref, wall=False):
    """Per-round ratios t_ref / t_tdsl, rounds interleaved; also the tdslc median time and,
    for wall-clock rows (thread counts), the median of the per-round ratios of process
    CPU time (all threads: ref / tdslc), which a loaded machine disturbs less."""
    clock = time.perf_counter if wall else time.thread_time
    f_tdsl(), f_ref()
    one = max(timed(f_tdsl, time.perf_counter, 1), 1e-6)
    reps = max(1, int(0.05 / one))
    ratios, ts, cpu = [], [], []
    for _ in range(ROUNDS):
        c0 = time.process_time()
        a = timed(f_tdsl, clock, reps)
        c1 = time.process_time()
        b = timed(f_ref, clock, reps)
        c2 = time.process_time()
        ratios.append(b / a if a > 0 else float("inf"))
        cpu.append((c2 - c1) / (c1 - c0) if c1 > c0 else float("inf"))
        ts.append(a)
    return statistics.median(ratios), min(ratios), max(ratios), statistics.median(ts), statistics.median(cpu) if wall else None


def row(name, against, res, work=None, unit="GFLOP/s"):
    med, lo, hi, t, cpu = res
    extra = "  tdslc %.1f %s" % (work / t / 1e9, unit) if work else ""
    if cpu is not None:
        extra += "  cpu-time efficiency %.2f" % cpu
    print("%-34s %-14s %6.2fx  (%.2f-%.2f)%s" % (name, against, med, lo, hi, extra), flush=True)


def pin(cpus):
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        pass


def param(name, dims):
    return "let%%op %s = { %s = uniform (); %s }\n" % (name, name, "; ".join("%s = [ %s ]" % (k, "; ".join(map(str, v)))
                                                                        for k, v in dims))


def sgemm_src(n):
    return param("a", [("o", [n]), ("i", [n])]) + param("b", [("o", [n]), ("i", [n])]) + "let%op c = a * b\n"


def main():
    print("tdslc CPU benchmark: ratio = reference time / tdslc time (> 1: tdslc faster), median of %d "
          "interleaved rounds (min-max); load average %.1f" % (ROUNDS, os.getloadavg()[0]))
    pin({0})
    for g in GROUPS:
        if g in WANTED:
            globals()[g + "_rows"]()
    print("load average %.1f at the end" % os.getloadavg()[0])
    print("(training steps against PyTorch and hand-written C: the table of bench/train.sh below)")


def sgemm_rows():
    for n in (64, 256, 512, 1024, 2048):
        m = model("sgemm%d" % n, sgemm_src(n))
        a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
        row("sgemm N=%d" % n, "OpenBLAS", compare(caller(m, "c.forward"), lambda: a @ b), 2 * n ** 3)
        rt.tdsl_close(m)


def bmm_rows():
    for (bt, mm, kk, nn) in ((64, 128, 128, 128), (16, 512, 64, 512)):
        src = (param("p", [("b", [bt]), ("o", [mm]), ("i", [kk])]) + param("q", [("b", [bt]), ("o", [kk]), ("i", [nn])]) +
               "let%op r = p * q\n")
        m = model("bmm%d" % bt, src)
        if torch is not None:
            x, y = torch.rand(bt, mm, kk), torch.rand(bt, kk, nn)
            ref, who = (lambda: torch.bmm(x, y)), "torch.bmm"
        else:
            x, y = np.random.rand(bt, mm, kk).astype(np.float32), np.random.rand(bt, kk, nn).astype(np.float32)
            ref, who = (lambda: np.matmul(x, y)), "numpy matmul"
        row("bmm %d x %dx%dx%d" % (bt, mm, kk, nn), who, compare(caller(m, "r.forward"), ref), 2 * bt * mm * kk * nn)
        rt.tdsl_close(m)


def sum_rows():
    src = param("z", [("o", [4096]), ("i", [4096])]) + 'let%op rs = z ++ "i->o => o"\nlet%op fs = z ++ "i->o => 0"\n'
    m = model("sums", src)
    z = np.random.rand(4096, 4096).astype(np.float32)
    row("row sum 4096^2", "numpy", compare(caller(m, "rs.forward"), lambda: z.sum(axis=1)), 4 * 4096 ** 2, "GB/s")
    row("full sum 4096^2", "numpy", compare(caller(m, "fs.forward"), lambda: z.sum()), 4 * 4096 ** 2, "GB/s")
    rt.tdsl_close(m)


def permute_rows():
    src = param("x", [("o", [64, 64, 64, 64])]) + 'let%op y = x ++ "abcd=>acbd"\nlet%op w = x ++ "abcd=>dcba"\n'
    m = model("permute", src)
    s, d = np.random.rand(64 ** 4).astype(np.float32), np.empty(64 ** 4, np.float32)
    memcpy = lambda: np.copyto(d, s)
    row("permute abcd=>acbd 64^4", "memcpy", compare(caller(m, "y.forward"), memcpy), 2 * 4 * 64 ** 4, "GB/s")
    row("permute abcd=>dcba 64^4", "memcpy", compare(caller(m, "w.forward"), memcpy), 2 * 4 * 64 ** 4, "GB/s")
    rt.tdsl_close(m)


def conv_rows():
    conv = (param("img", [("b", [8]), ("o", [56, 56, 32])]) + param("kern", [("o", [32]), ("i", [3, 3, 32])]) +
            'let%op out = img +* "b|oh=+kh, ow=+kw, ic; kh, kw, ic -> oc => b|oh, ow, oc" kern\n'
            'let%op l = out ++ "...|... => 0"\nlet%cd step = grad_update l\n')
    if torch is not None:
        m = model("conv", conv)
        x = torch.rand(8, 32, 56, 56, requires_grad=True)
        k = torch.rand(32, 32, 3, 3, requires_grad=True)
        fw = lambda: torch.nn.functional.conv2d(x, k, padding=1)
        def bw():
            x.grad = k.grad = None
            torch.nn.functional.conv2d(x, k, padding=1).sum().backward()
        flops = 2 * 8 * 56 * 56 * 32 * 32 * 9
        row("conv 3x3 8x32->32x56x56 fwd", "torch conv2d", compare(caller(m, "out.forward"), fw), flops)
        row("conv 3x3 fwd+bwd (step)", "torch", compare(caller(m, "step"), bw), 3 * flops)
        rt.tdsl_close(m)


def pointwise_rows():
    n = 1 << 22
    xs, ys = np.random.rand(n).astype(np.float32) * 20 - 10, np.empty(n, np.float32)
    xp = np.random.rand(n).astype(np.float32)  # log's: in [0, 1), as the model's uniform ()
    for fn in ("exp", "tanh", "log"):
        m = model(fn, param("x", [("o", [n])]) + "let%%op y = %s x\n" % fn)
        f, xi = getattr(np, fn), xp if fn == "log" else xs
        row("%s of 4M floats" % fn, "numpy", compare(caller(m, "y.forward"), lambda: f(xi, out=ys)), 8 * n, "GB/s")
        rt.tdsl_close(m)
    if torch is not None:
        m = model("softmax", param("x", [("b", [256]), ("o", [4096])]) + "let%op s = softmax x\nlet%op ls = log_softmax x\n"
                  "let%cd sm = s.forward\nlet%cd lsm = ls.forward\n")
        xt = torch.rand(256, 4096)
        row("softmax 256x4096", "torch", compare(caller(m, "sm"), lambda: torch.softmax(xt, 1)), 8 * 256 * 4096, "GB/s")
        row("log_softmax 256x4096", "torch", compare(caller(m, "lsm"), lambda: torch.log_softmax(xt, 1)), 8 * 256 * 4096, "GB/s")
        rt.tdsl_close(m)


def threads_rows():
    pin({0, 1})
    m1, m2 = model("sgemm1024t1", sgemm_src(1024), 1), model("sgemm1024t2", sgemm_src(1024), 2)
    row("sgemm N=1024, 2 threads", "1 thread", compare(caller(m2, "c.forward"), caller(m1, "c.forward"), wall=True))
    rt.tdsl_close(m1), rt.tdsl_close(m2)
    mlp = open(os.path.join(ROOT, "bench", "train_b1000_h256.tdsl")).read()
    m1, m2 = model("mlp1", mlp, 1), model("mlp2", mlp, 2)
    row("MLP step b1000 h256, 2 threads", "1 thread", compare(caller(m2, "train_step"), caller(m1, "train_step"), wall=True))
    rt.tdsl_close(m1), rt.tdsl_close(m2)


main()
