#!/usr/bin/python3
"""Same-run A/B of two tdslc builds (bench/RESULTS-cpu.md, 2026-11-27 21:45): each row is
compiled -O3 by DIR_A/tdslc and DIR_B/tdslc (each opened through the libtdslrt.so beside
it), and the rounds interleave A, B and the reference (numpy, memcpy, OpenBLAS, torch) on
one pinned CPU ($CPU, default 1), in thread CPU time. Prints, per row, A's and B's median
ratio to the reference (min-max) and throughput, and B/A: the median of the per-round
ratios t_A / t_B (> 1: B faster). A build directory is any place tdslc finds its lib
from (build/ of a worktree, or a copy of tdslc + libtdslrt.so two levels under a
directory holding lib -> the source lib/).
usage: bench/cpu_ab.py DIR_A DIR_B ROUNDS ROW...
ROW: sum permute sgemm bmm conv (the bench/cpu.py shapes), tr (transposes of several
shapes), tgrad (a permute's gradient step), small (permutes whose contiguous extents are 16-32 cells, 4-64 MiB), thr (permutes of 8-32 MiB alone and followed by a sum: the streamed-store
threshold), sumL2 (sums that fit in L2/L3), exp (exp, tanh, log, softmax and log_softmax forward)."""
import ctypes, os, statistics, subprocess, sys, tempfile, time
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np
try:
    import torch; torch.set_num_threads(1)
except Exception:
    torch = None
A, B, ROUNDS, ROWS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
WORK = tempfile.mkdtemp(prefix="ab-")
def rtlib(d):
    rt = ctypes.CDLL(os.path.join(d, "libtdslrt.so"))
    rt.tdsl_open.restype = ctypes.c_void_p
    rt.tdsl_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    rt.tdsl_init.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    rt.tdsl_call.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    rt.tdsl_set_num_threads.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return rt
RT = {A: rtlib(A), B: rtlib(B)}
def model(d, name, src, flags=()):
    path = os.path.join(WORK, name + ".tdsl"); open(path, "w").write(src)
    # a path of its own per call: dlopen hands back an open library of the same path
    so = os.path.join(WORK, "%s-%d.so" % (name, len(os.listdir(WORK))))
    subprocess.run([os.path.join(d, "tdslc"), "-O3", *flags, path, "-o", so], check=True)
    rt = RT[d]; err = ctypes.create_string_buffer(512)
    m = rt.tdsl_open(so.encode(), err, 512)
    assert m, err.value
    rt.tdsl_init(m, 1); rt.tdsl_set_num_threads(m, 1)
    return lambda routine: (lambda: rt.tdsl_call(m, routine.encode()))
def timed(f, reps):
    t = time.thread_time()
    for _ in range(reps): f()
    return (time.thread_time() - t) / reps
def cmp3(name, fa, fb, fr, work, unit):
    for f in (fa, fb, fr): f()
    t0 = time.perf_counter(); fa(); one = time.perf_counter() - t0
    reps = max(1, int(0.05 / max(one, 1e-6)))
    ra, rb, ta, tb = [], [], [], []
    for _ in range(ROUNDS):
        a = timed(fa, reps); b = timed(fb, reps); r = timed(fr, reps)
        ra.append(r / a); rb.append(r / b); ta.append(a); tb.append(b)
    fmt = lambda rs: "%.2fx (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs))
    print("%-26s A %s %6.1f %s | B %s %6.1f %s | B/A %.2f" % (name, fmt(ra), work / statistics.median(ta) / 1e9, unit,
          fmt(rb), work / statistics.median(tb) / 1e9, unit, statistics.median([x / y for x, y in zip(ta, tb)])), flush=True)
def param(name, dims):
    return "let%%op %s = { %s = uniform (); %s }\n" % (name, name, "; ".join("%s = [ %s ]" % (k, "; ".join(map(str, v))) for k, v in dims))
os.sched_setaffinity(0, {int(os.environ.get("CPU", "1"))})
print("A=%s B=%s rounds=%d load %s" % (A, B, ROUNDS, os.getloadavg()))
for row in ROWS:
    if row == "sum":
        src = param("z", [("o", [4096]), ("i", [4096])]) + 'let%op rs = z ++ "i->o => o"\nlet%op fs = z ++ "i->o => 0"\n'
        ma, mb = model(A, "sums", src), model(B, "sums", src)
        z = np.random.rand(4096, 4096).astype(np.float32)
        cmp3("row sum", ma("rs.forward"), mb("rs.forward"), lambda: z.sum(axis=1), 4 * 4096**2, "GB/s")
        cmp3("full sum", ma("fs.forward"), mb("fs.forward"), lambda: z.sum(), 4 * 4096**2, "GB/s")
    elif row == "permute":
        src = param("x", [("o", [64, 64, 64, 64])]) + 'let%op y = x ++ "abcd=>acbd"\nlet%op w = x ++ "abcd=>dcba"\n'
        ma, mb = model(A, "perm", src), model(B, "perm", src)
        s, d = np.random.rand(64**4).astype(np.float32), np.empty(64**4, np.float32)
        cp = lambda: np.copyto(d, s)
        cmp3("permute acbd", ma("y.forward"), mb("y.forward"), cp, 8 * 64**4, "GB/s")
        cmp3("permute dcba", ma("w.forward"), mb("w.forward"), cp, 8 * 64**4, "GB/s")
    elif row == "sumL2":
        for (r_, c_) in ((256, 1024), (64, 4096), (2048, 2048)):
            src = param("z", [("o", [r_]), ("i", [c_])]) + 'let%op rs = z ++ "i->o => o"\nlet%op fs = z ++ "i->o => 0"\n'
            ma, mb = model(A, "sums%d" % r_, src), model(B, "sums%d" % r_, src)
            z = np.random.rand(r_, c_).astype(np.float32)
            cmp3("row sum %dx%d" % (r_, c_), ma("rs.forward"), mb("rs.forward"), lambda: z.sum(axis=1), 4 * r_ * c_, "GB/s")
            cmp3("full sum %dx%d" % (r_, c_), ma("fs.forward"), mb("fs.forward"), lambda: z.sum(), 4 * r_ * c_, "GB/s")
    elif row == "thr":
        for dims in ([64, 64, 64, 8], [64, 64, 64, 16], [64, 64, 64, 32]):
            for spec in ("abcd=>dcba", "abcd=>acbd"):
                src = param("x", [("o", dims)]) + 'let%%op w = x ++ "%s"\nlet%%op s = w ++ "...|... => 0"\n' % spec
                tag = "thr" + "_".join(map(str, dims)) + spec.replace("=>", "")
                ma, mb = model(A, tag, src), model(B, tag, src)
                n = int(np.prod(dims))
                s_, d_ = np.random.rand(n).astype(np.float32), np.empty(n, np.float32)
                mbytes = n * 4 >> 20
                cmp3("%s %dMiB" % (spec, mbytes), ma("w.forward"), mb("w.forward"), lambda: np.copyto(d_, s_), 8 * n, "GB/s")
                fa, fb = ma("w.forward"), mb("w.forward"); ga, gb = ma("s.forward"), mb("s.forward")
                def both(f, g):
                    return lambda: (f(), g())
                cmp3("%s %dMiB +sum" % (spec, mbytes), both(fa, ga), both(fb, gb), lambda: (np.copyto(d_, s_), d_.sum()), 12 * n, "GB/s")
    elif row == "tr":
        cases = [("4d 64^4 dcba", [64, 64, 64, 64], "abcd=>dcba"), ("4d 32^4 dcba", [32, 32, 32, 32], "abcd=>dcba"),
                 ("4d 48^4 dcba", [48, 48, 48, 48], "abcd=>dcba"),
                 ("2d 4096^2", [4096, 4096], "ab=>ba"), ("2d 2048^2", [2048, 2048], "ab=>ba"), ("2d 1024^2", [1024, 1024], "ab=>ba"),
                 ("2d 1000^2", [1000, 1000], "ab=>ba"), ("2d 512^2", [512, 512], "ab=>ba"), ("3d 64x512x512 abc=>acb", [64, 512, 512], "abc=>acb")]
        for name, dims, spec in cases:
            src = param("x", [("o", dims)]) + 'let%%op w = x ++ "%s"\n' % spec
            tag = "tr" + "_".join(map(str, dims)) + spec.replace("=>", "")
            ma, mb = model(A, tag, src), model(B, tag, src)
            n = int(np.prod(dims))
            s_, d_ = np.random.rand(n).astype(np.float32), np.empty(n, np.float32)
            cmp3(name, ma("w.forward"), mb("w.forward"), lambda: np.copyto(d_, s_), 8 * n, "GB/s")
    elif row == "small":
        cases = [("32^4 dcba 4MiB", [32, 32, 32, 32], "abcd=>dcba"), ("64x64x64x32 dcba 32MiB", [64, 64, 64, 32], "abcd=>dcba"),
                 ("16x16x128x32 bhsd=>bshd 4MiB", [16, 16, 128, 32], "bhsd=>bshd"),
                 ("64x16x512x32 bhsd=>bshd 64MiB", [64, 16, 512, 32], "bhsd=>bshd"),
                 ("16x16x128x32 bhsd=>bhds 4MiB", [16, 16, 128, 32], "bhsd=>bhds"),
                 ("64x16x512x32 bhsd=>bhds 64MiB", [64, 16, 512, 32], "bhsd=>bhds"),
                 ("64x32x512x16 bhsd=>bhds 64MiB", [64, 32, 512, 16], "bhsd=>bhds"),
                 ("128x256x32 abc=>cba 4MiB", [128, 256, 32], "abc=>cba"), ("512x512x32 abc=>cba 32MiB", [512, 512, 32], "abc=>cba"),
                 ("1024x1024x16 abc=>cba 64MiB", [1024, 1024, 16], "abc=>cba")]
        for name, dims, spec in cases:
            src = param("x", [("o", dims)]) + 'let%%op w = x ++ "%s"\n' % spec
            tag = "sm" + "_".join(map(str, dims)) + spec.replace("=>", "")
            ma, mb = model(A, tag, src), model(B, tag, src)
            n = int(np.prod(dims))
            s_, d_ = np.random.rand(n).astype(np.float32), np.empty(n, np.float32)
            cmp3(name, ma("w.forward"), mb("w.forward"), lambda: np.copyto(d_, s_), 8 * n, "GB/s")
    elif row == "tgrad":
        # a permute's backward pass: the step zeroes x.grad and adds the permuted
        # gradient (fused: one overwriting store of 0 + cell), and with a second permute
        # of x adds another (an accumulating store); the reference is numpy doing the
        # same (np.add of the transposes into the target)
        for dims, twice in (([64] * 4, False), ([48] * 4, False), ([32] * 4, False), ([32] * 4, True), ([64, 64, 64, 32], True)):
            src = param("x", [("o", dims)]) + 'let%op w = x ++ "abcd=>dcba"\n'
            loss = '(w ++ "...|... => 0")'
            if twice:
                src += 'let%op v = x ++ "abcd=>dcba"\n'
                loss += ' + (v ++ "...|... => 0")'
            src += "let%%op l = %s\nlet%%cd step = grad_update l\n" % loss
            tag = "tg" + "_".join(map(str, dims)) + ("x2" if twice else "")
            ma, mb = model(A, tag, src), model(B, tag, src)
            n = int(np.prod(dims))
            g, d_ = np.random.rand(*dims[::-1]).astype(np.float32), np.empty(dims, np.float32)
            gt = g.transpose(3, 2, 1, 0)
            ref = (lambda: (np.copyto(d_, gt), np.add(d_, gt, out=d_))) if twice else (lambda: np.copyto(d_, gt))
            name = "dcba grad %s%s" % ("x".join(map(str, dims)), " x2" if twice else "")
            cmp3(name, ma("step"), mb("step"), ref, (16 if twice else 8) * n, "GB/s")
    elif row == "sgemm":
        for n in (256, 1024):
            src = param("a", [("o", [n]), ("i", [n])]) + param("b", [("o", [n]), ("i", [n])]) + "let%op c = a * b\n"
            ma, mb = model(A, "sg%d" % n, src), model(B, "sg%d" % n, src)
            a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
            cmp3("sgemm %d" % n, ma("c.forward"), mb("c.forward"), lambda: a @ b, 2 * n**3, "GF/s")
    elif row == "bmm":
        bt, mm, kk, nn = 16, 512, 64, 512
        src = (param("p", [("b", [bt]), ("o", [mm]), ("i", [kk])]) + param("q", [("b", [bt]), ("o", [kk]), ("i", [nn])]) + "let%op r = p * q\n")
        ma, mb = model(A, "bmm", src), model(B, "bmm", src)
        x, y = torch.rand(bt, mm, kk), torch.rand(bt, kk, nn)
        cmp3("bmm 16x512x64x512", ma("r.forward"), mb("r.forward"), lambda: torch.bmm(x, y), 2 * bt * mm * kk * nn, "GF/s")
    elif row == "conv":
        conv = (param("img", [("b", [8]), ("o", [56, 56, 32])]) + param("kern", [("o", [32]), ("i", [3, 3, 32])]) +
                'let%op out = img +* "b|oh=+kh, ow=+kw, ic; kh, kw, ic -> oc => b|oh, ow, oc" kern\n'
                'let%op l = out ++ "...|... => 0"\nlet%cd step = grad_update l\n')
        ma, mb = model(A, "conv", conv), model(B, "conv", conv)
        x = torch.rand(8, 32, 56, 56); k = torch.rand(32, 32, 3, 3)
        cmp3("conv fwd", ma("out.forward"), mb("out.forward"), lambda: torch.nn.functional.conv2d(x, k, padding=1), 2*8*56*56*32*32*9, "GF/s")
        xg = torch.rand(8, 32, 56, 56, requires_grad=True); kg = torch.rand(32, 32, 3, 3, requires_grad=True)
        def bw():
            xg.grad = kg.grad = None
            torch.nn.functional.conv2d(xg, kg, padding=1).sum().backward()
        cmp3("conv fwd+bwd (step)", ma("step"), mb("step"), bw, 3*2*8*56*56*32*32*9, "GF/s")
    elif row == "exp":
        # exp, tanh and log alone (against numpy's), a softmax and a log-softmax over rows
        # (against torch's), each forward only
        n = 1 << 22
        src = param("x", [("o", [n])]) + "let%op y = exp x\n"
        ma, mb = model(A, "exp", src), model(B, "exp", src)
        xs, ys = (np.random.rand(n).astype(np.float32) * 20 - 10), np.empty(n, np.float32)
        cmp3("exp 4M", ma("y.forward"), mb("y.forward"), lambda: np.exp(xs, out=ys), 8 * n, "GB/s")
        src = param("x", [("o", [n])]) + "let%op y = tanh x\n"
        ma, mb = model(A, "tanh", src), model(B, "tanh", src)
        cmp3("tanh 4M", ma("y.forward"), mb("y.forward"), lambda: np.tanh(xs, out=ys), 8 * n, "GB/s")
        src = param("x", [("o", [n])]) + "let%op y = log x\n"  # x from uniform (): in [0, 1)
        ma, mb = model(A, "log", src), model(B, "log", src)
        xp = np.random.rand(n).astype(np.float32)
        cmp3("log 4M", ma("y.forward"), mb("y.forward"), lambda: np.log(xp, out=ys), 8 * n, "GB/s")
        # in %cd routines, as a training step runs them (fused where the schedule can); at
        # 2048 rows (32 MiB a tensor, past L3) row fusion keeps a row's passes in cache
        for rows in (256, 2048):
            src = (param("x", [("b", [rows]), ("o", [4096])]) + "let%op s = softmax x\nlet%op ls = log_softmax x\n"
                   "let%cd sm = s.forward\nlet%cd lsm = ls.forward\n")
            ma, mb = model(A, "softmax%d" % rows, src), model(B, "softmax%d" % rows, src)
            xt = torch.rand(rows, 4096)
            cmp3("softmax %dx4096" % rows, ma("sm"), mb("sm"), lambda: torch.softmax(xt, 1), 8 * rows * 4096, "GB/s")
            cmp3("log_softmax %dx4096" % rows, ma("lsm"), mb("lsm"), lambda: torch.log_softmax(xt, 1), 8 * rows * 4096, "GB/s")

print("load", os.getloadavg())
