"""Every built-in tensor operation of the prelude and stdlib at special values (NaN, +-inf,
-0, denormals, huge and tiny numbers, kinks: relu/sat01 at 0 and 1, max ties, sqrt/log/
recip at 0, division by 0, pow with negative bases and exponents 0, 1, 2, 0.5, 3, -1,
2.5) and the reductions (sum, max, softmax, log_softmax, cross entropy, mean, mse,
layer_norm, matmul) over rows of 1, 7, 8, 17 and 33 cells with NaN, infinities, ties and
overflow at the start, middle and end: values and gradients (one grad_update).

usage: fp_ops.py TDSLC WORKDIR MODE [FLAGS...]
MODE torch: tdslc --run FLAGS against PyTorch's forward and autograd (float32, or float64
  with --precision=double): NaN for NaN, infinities and zeros with their sign, finite
  values within a few ulps (libm vs PyTorch's kernels). The differences tdsl(7) documents
  (Special values) are the KNOWN table below, checked to still be what they say.
MODE same: every FLAGS configuration, separated by `,`, against the first, bit for bit
  (NaN for NaN): e.g. `-O0 , -O3 , -O3 env:TDSL_NUM_THREADS=3 , emit-c , so , cuda`.
  `emit-c`: the --emit-c source built by cc -O2 and run through libtdslrt; `so`: tdslc -o
  x.so run through libtdslrt; `cuda`: the --emit-cuda source emulated on the host
  (testsuite/cuda/shim.h); `check`: tdslc --check must pass.
Prints one line per mismatch (at most 4 per tensor) and a summary; exits 1 on any."""
import ctypes, json, os, subprocess, sys
import numpy as np

tdslc, work, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
tdslc = os.path.abspath(tdslc) if os.sep in tdslc else tdslc
os.makedirs(work, exist_ok=True)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

# ---- inputs: every pair of special values (elementwise ops), rows of patterns (reductions)
V = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, 1.2e-38, 3e38, -3e38, 1.0, -1.0, 0.5, -2.0, 3.0,
     1.0 + 2.0 ** -23]
A = np.array([x for x in V for _ in V])
B = np.array([y for _ in V for y in V])
C3 = np.array([z for _ in range(len(V)) for z in [1.0, 0.0, np.nan, -0.0, -1.0] * 3])
# fma's one-rounding point: a * b + c with a * b = 1 - 2^-46 exactly (rounds to 1 in float).
A3, B3 = A.copy(), B.copy()
A3[:4] = [1 + 2.0 ** -23] * 4
B3[:4] = [1 - 2.0 ** -23] * 4
C3[:4] = [-1.0] * 4
# --big: every input repeated (300 times the pairs, 170 times the rows), enough work
# for parallel loops and the vector bodies of long loops
BIG = "--big" in rest
rest = [f for f in rest if f != "--big"]
if BIG:
    A, B, C3, A3, B3 = (np.tile(v, 300) for v in (A, B, C3, A3, B3))
N = len(A)

def rows(n, rng):
    base = rng.uniform(-3, 3, n).round(3)
    r = [base.copy() for _ in range(12)]
    r[1][0] = np.nan
    r[2][-1] = np.nan
    r[3][n // 2] = np.nan
    r[4][-1] = np.inf
    r[5][0] = -np.inf
    r[6][:] = -np.inf
    r[7][0], r[7][-1] = np.inf, -np.inf
    r[8][:] = -0.0
    r[9][0] = r[9][-1] = 5.0  # a tie at the maximum
    r[10][:] = 3e38
    r[11][:] = 1e-45
    return np.stack(r)

SIZES = [1, 7, 8, 17, 33]
rng = np.random.default_rng(7)
ROWS = {n: rows(n, rng) for n in SIZES}
R = 12 * (170 if BIG else 1)
if BIG:
    ROWS = {n: np.tile(v, (170, 1)) for n, v in ROWS.items()}
TGT = {n: np.eye(n)[np.arange(R) % n] for n in SIZES}

UNARY = {  # name: (tdsl, torch)
    "relu": ("relu {a}", lambda t, a: t.relu(a)),
    "sat01": ("sat01 {a}", lambda t, a: t.clamp(a, 0, 1)),
    "exp": ("exp {a}", lambda t, a: t.exp(a)), "log": ("log {a}", lambda t, a: t.log(a)),
    "exp2": ("exp2 {a}", lambda t, a: t.exp2(a)), "log2": ("log2 {a}", lambda t, a: t.log2(a)),
    "sin": ("sin {a}", lambda t, a: t.sin(a)), "cos": ("cos {a}", lambda t, a: t.cos(a)),
    "sqrt": ("sqrt {a}", lambda t, a: t.sqrt(a)), "recip": ("recip {a}", lambda t, a: t.reciprocal(a)),
    "recip_sqrt": ("recip_sqrt {a}", lambda t, a: t.rsqrt(a)), "neg": ("~-{a}", lambda t, a: -a),
    "tanh": ("tanh {a}", lambda t, a: t.tanh(a)), "id": ("id {a}", lambda t, a: a * 1),
    "sigmoid": ("sigmoid {a}", lambda t, a: t.sigmoid(a)), "silu": ("silu {a}", lambda t, a: t.nn.functional.silu(a)),
    "erf": ("erf {a}", lambda t, a: t.erf(a)), "gelu": ("gelu {a}", lambda t, a: t.nn.functional.gelu(a)),
}
for p in ["0.", "1.", "2.", "3.", "0.5", "-1.", "2.5", "-2."]:
    UNARY["pow" + p.rstrip(".").replace(".", "_").replace("-", "m")] = ("{a} **. " + p, lambda t, a, p=float(p): t.pow(a, p))
BINARY = {
    "add": ("{a} + {b}", lambda t, a, b: a + b), "sub": ("{a} - {b}", lambda t, a, b: a - b),
    "mul": ("{a} *. {b}", lambda t, a, b: a * b), "div": ("{a} /. {b}", lambda t, a, b: a / b),
    "max2": ("max2 {a} {b}", lambda t, a, b: t.maximum(a, b)), "min2": ("min2 {a} {b}", lambda t, a, b: t.minimum(a, b)),
}
NODIFF = {
    "lt": ("{a} < {b}", lambda t, a, b: (a < b).to(a.dtype)), "eq": ("{a} = {b}", lambda t, a, b: (a == b).to(a.dtype)),
    "ne": ("{a} <> {b}", lambda t, a, b: (a != b).to(a.dtype)), "not": ("not {a}", lambda t, a, b: (a == 0).to(a.dtype)),
}
TERNARY = {
    "where": ("where {c} {a} {b}", lambda t, a, b, c: t.where(c != 0, a, b)),
    "fma": ("fma {a} {b} {c}", lambda t, a, b, c: a * b + c),
}
SPEC = '"...|...->... => ...|...->0"'
REDUCE = {  # over the output axis of 12 rows; t: targets (one-hot rows)
    "sum": ("{r} ++ " + SPEC, lambda t, F, r, g: r.sum(-1, keepdim=True)),
    "max": ("{r} @^^ " + SPEC, lambda t, F, r, g: r.amax(-1, keepdim=True)),
    "softmax": ("softmax {r}", lambda t, F, r, g: t.softmax(r, -1)),
    "log_softmax": ("log_softmax {r}", lambda t, F, r, g: t.log_softmax(r, -1)),
    "xent": ("cross_entropy {r} (stop_gradient {g})", lambda t, F, r, g: F.cross_entropy(r, g)),
    "xent_idx": ("cross_entropy_indices ~classes:{n} {r} (stop_gradient i{n})",
                 lambda t, F, r, g: F.cross_entropy(r, g.argmax(-1))),
    "mean": ("mean {r}", lambda t, F, r, g: r.mean()),
    "mse": ("mse {r} (stop_gradient {g})", lambda t, F, r, g: F.mse_loss(r, g)),
    "layer_norm": ("layer_norm () {r}", lambda t, F, r, g: F.layer_norm(r, r.shape[-1:], eps=1e-5)),
    "dot": ("{r} +* \"b|i;b|i=>b|0\" {g}", lambda t, F, r, g: (r * g).sum(-1, keepdim=True)),
}

def program():
    L, outs, grads = [], [], []
    def param(name, n, b=None):
        L.append("let%%op %s = { %s;%s o = [ %d ] }" % (name, name, " b = [ %d ];" % b if b else "", n))
    for k, (src, _) in UNARY.items():
        param("a_" + k, N)
        L.append("let%%op y_%s = %s" % (k, src.format(a="a_" + k)))
        outs.append("y_" + k); grads.append("a_" + k)
    for k, (src, _) in BINARY.items():
        param("a_" + k, N); param("b_" + k, N)
        L.append("let%%op y_%s = %s" % (k, src.format(a="a_" + k, b="b_" + k)))
        outs.append("y_" + k); grads += ["a_" + k, "b_" + k]
    for k, (src, _) in NODIFF.items():
        L.append("let%%op y_%s = %s" % (k, src.format(a="aa", b="bb")))
        outs.append("y_" + k)
    for k, (src, _) in TERNARY.items():
        param("a_" + k, N); param("b_" + k, N); param("c_" + k, N)
        L.append("let%%op y_%s = %s" % (k, src.format(a="a_" + k, b="b_" + k, c="c_" + k)))
        outs.append("y_" + k); grads += ["a_" + k, "b_" + k] + (["c_" + k] if k == "fma" else [])
    for n in SIZES:
        L.append("let%%op g%d = { g%d; b = [ %d ]; o = [ %d ] }" % (n, n, R, n))
        L.append("let%%op i%d = { i%d; b = [ %d ]; o = [ 1 ] }" % (n, n, R))
        for k, (src, _) in REDUCE.items():
            if k == "layer_norm" and n == 1:  # a gain of dimension 1 broadcasts: not inferable
                continue
            r = "r_%s_%d" % (k, n)
            param(r, n, R)
            L.append("let%%op y_%s_%d = %s" % (k, n, src.format(r=r, g="g%d" % n, n=n)))
            outs.append("y_%s_%d" % (k, n)); grads.append(r)
    L.insert(0, "let%%op aa = { aa; o = [ %d ] }\nlet%%op bb = { bb; o = [ %d ] }" % (N, N))
    diff = [o for o in outs if not any(o == "y_" + k for k in NODIFF)]
    L.append("let%op loss = " + " + ".join("(%s ++ \"...|...->... => 0\")" % o for o in diff))
    L.append("let%cd step = grad_update loss")
    L.append("let%%cd fwd = %s" % "; ".join(o + ".forward" for o in outs if o not in diff))
    return "\n".join(L) + "\n", outs, [g + ".grad" for g in grads]

def inputs():
    d = {"aa": A, "bb": B}
    for k in list(UNARY) + list(BINARY) + list(TERNARY):
        d["a_" + k] = A3 if k == "fma" else A
        if k not in UNARY:
            d["b_" + k] = B3 if k == "fma" else B
        if k in TERNARY:
            d["c_" + k] = C3
    for n in SIZES:
        d["g%d" % n] = TGT[n]
        d["i%d" % n] = TGT[n].argmax(-1).reshape(R, 1).astype(np.float64)
        for k in REDUCE:
            if not (k == "layer_norm" and n == 1):
                d["r_%s_%d" % (k, n)] = ROWS[n]
    return d

SRC, OUTS, GRADS = program()
INS = inputs()
with open(os.path.join(work, "fp.tdsl"), "w") as f:
    f.write(SRC)
PRINTS = OUTS + GRADS

def split_env(flags):
    env = dict(os.environ)
    for f in [f for f in flags if f.startswith("env:")]:
        k, v = f[4:].split("=", 1)
        env[k] = v
    return [f for f in flags if not f.startswith("env:")], env

def run_tdslc(flags, tag, sizes=None):
    """{tensor: float64 array} from one configuration; single precision values rounded
    to float32 (--print writes the shortest decimal that reads back as the float)."""
    got = run_raw(flags, tag, sizes)
    if got is not None and "--precision=double" not in flags:
        got = {k: v.astype(np.float32).astype(np.float64) for k, v in got.items()}
    return got

def run_raw(flags, tag, sizes):
    flags, env = split_env(flags)
    dbl = "--precision=double" in flags
    dt = np.float64 if dbl else np.float32
    for k, v in INS.items():
        np.save(os.path.join(work, k + ".npy"), v.astype(dt))
    loads = sum([["--load", "%s=%s.npy" % (k, k)] for k in INS], [])
    kind = next((f for f in flags if f in ("emit-c", "so", "cuda", "check")), None)
    flags = [f for f in flags if f not in ("emit-c", "so", "cuda", "check")]
    if kind == "check":
        r = subprocess.run([tdslc, "--check", "fp.tdsl"] + flags + loads, cwd=work, capture_output=True, text=True, env=env)
        if r.returncode:
            print("FAIL %s: tdslc --check exit %d: %s" % (tag, r.returncode, (r.stdout + r.stderr)[-1500:]))
        return None
    if kind in ("emit-c", "so"):
        so = os.path.join(work, "fp_%s.so" % kind)
        if kind == "emit-c":
            with open(os.path.join(work, "fp.c"), "w") as fh:
                r = subprocess.run([tdslc, "--emit-c", "fp.tdsl"] + flags, cwd=work, stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
            if r.returncode == 0:
                r = subprocess.run(["cc", "-std=c11", "-O2", "-march=native", "-fno-math-errno", "-shared", "-fPIC", "-o", so, "fp.c", "-lm"], cwd=work,
                                   capture_output=True, text=True)
        else:
            r = subprocess.run([tdslc, "fp.tdsl", "-o", so] + flags, cwd=work, capture_output=True, text=True, env=env)
        if r.returncode:
            sys.exit("%s: build failed: %s" % (tag, r.stderr[-1500:]))
        sys.path.insert(0, os.path.join(ROOT, "testsuite", "lit", "sched", "Inputs"))
        from numpy_compare import open_model, runtime
        rt = runtime(tdslc)
        for fn in ("tdsl_read_f64", "tdsl_write_f64"):
            getattr(rt, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long]
        m = open_model(rt, so)
        ok = rt.tdsl_init(m, 0) == 0
        for k in INS:
            if True:
                v = np.ascontiguousarray(np.load(os.path.join(work, k + ".npy")), dtype=np.float64)
                ok = ok and rt.tdsl_write_f64(m, k.encode(), v.ctypes.data, v.size) == 0
        ok = ok and rt.tdsl_call(m, b"step") == 0 and rt.tdsl_call(m, b"fwd") == 0
        got = {}
        for k in PRINTS:
            buf = np.zeros(sizes[k], dtype=np.float64)
            ok = ok and rt.tdsl_read_f64(m, k.encode(), buf.ctypes.data, buf.size) == 0
            got[k] = buf
        rt.tdsl_close(m)
        if not ok:
            sys.exit("%s: the model failed" % tag)
        return got
    args = [tdslc, "--run", "fp.tdsl", "--json", "--call", "step", "--call", "fwd"] + flags + loads
    if kind == "cuda":
        shim = os.path.join(ROOT, "testsuite", "cuda", "shim.h")
        with open(os.path.join(work, "fp.cu"), "w") as fh:
            r = subprocess.run([tdslc, "--backend=cuda", "--emit-cuda", "fp.tdsl"] + flags, cwd=work, stdout=fh,
                               stderr=subprocess.PIPE, text=True)
        if r.returncode == 0:
            r = subprocess.run(["cc", "-std=c11", "-O0", "-w", "-DTDSL_EMULATE", "-include", shim, "-x", "c", "fp.cu",
                                "-shared", "-fPIC", "-o", "fp.emu.so", "-lm"], cwd=work, capture_output=True, text=True)
        if r.returncode:
            sys.exit("%s: cuda build failed: %s" % (tag, r.stderr[-1500:]))
        env["TDSL_CUDA_EMULATE"] = os.path.join(os.path.abspath(work), "fp.emu.so")
        args.insert(1, "--backend=cuda")
    for p in PRINTS:
        args += ["--print", p]
    r = subprocess.run(args, cwd=work, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit("%s: tdslc exit %d: %s" % (tag, r.returncode, r.stderr[-1500:]))
    got = {}
    for line in r.stdout.splitlines():
        o = json.loads(line, parse_int=float)  # keeps the sign of "-0"
        got[o["name"]] = np.array([float(v) for v in o["values"]], dtype=np.float64)
    return got

def same_bits(g, e):
    with np.errstate(all="ignore"):
        return (np.isnan(g) & np.isnan(e)) | ((g == e) & (np.signbit(g) == np.signbit(e)))

def where_input(name, i):
    """The input cell a result cell i of tensor name comes from, for messages."""
    base = name.split(".")[0]
    if base.startswith("r_") or any(base == "y_%s_%d" % (k, n) for k in REDUCE for n in SIZES):
        n = int(base.rsplit("_", 1)[1])
        return "row %d col %d" % (i // n, i % n) if base.startswith("r_") else "cell %d" % i
    return "a=%r b=%r" % (A[i], B[i]) if i < N else ""

def reduction(name):
    base = name.split(".")[0]
    return base.startswith("r_") or any(base == "y_%s_%d" % (k, n) for k in REDUCE for n in SIZES)

def known(name, i):
    """The documented difference from PyTorch (tdsl(7), Special values) that cell i of
    tensor name shows, or None."""
    base = name.split(".")[0]
    if base in ("y_relu", "a_relu") and np.isnan(A[i]):
        return "relu-nan: relu NaN = 0 and its gradient 0 (the seed's Relu; torch: NaN, 1)"
    if base == "a_sat01" and A[i] in (0.0, 1.0):
        return "sat01-kinks: gradient 0 at 0 and 1 (OCANNL's Satur01_gate; torch.clamp: 1)"
    if base in ("y_pow0_5", "a_pow0_5") and (A[i] == -np.inf or (A[i] == 0 and np.signbit(A[i]))):
        return "pow-half: C's pow: (-inf) **. 0.5 = inf, gradient 0; at -0 gradient +inf (torch: sqrt: NaN, -inf)"
    if base.startswith("r_max_") and name.endswith(".grad"):
        n = int(base.rsplit("_", 1)[1])
        row = ROWS[n][i // n]
        if np.isnan(row).any():
            return "max-nan: max over a row with NaN is NaN, its gradient 0 everywhere (torch.amax: NaN)"
        if (row == row.max()).sum() > 1:
            return "max-ties: each tied maximum gets the whole gradient (OCANNL; torch.amax splits it)"
    return None

bad = 0
if mode == "same":
    cfgs, cur = [], []
    for f in rest + [","]:
        if f == ",":
            if cur:
                cfgs.append(cur)
            cur = []
        else:
            cur.append(f)
    ref = None
    strict = all("--strict-fp" in c or "check" in c for c in cfgs)
    for cfg in cfgs:
        tag = " ".join(cfg)
        got = run_tdslc(cfg, tag, ref and {k: len(v) for k, v in ref.items()})
        if got is None:
            bad += 0
            continue
        if ref is None:
            ref, reftag = got, tag  # the first: a --run (the .so paths need its sizes)
            continue
        for k in PRINTS:
            e, g = ref[k], got.get(k)
            if g is None or g.shape != e.shape:
                print("FAIL %s: %s missing or reshaped" % (tag, k)); bad += 1; continue
            ok = same_bits(g, e)
            if reduction(k) and not strict:
                # sums may reassociate (tdslc(1), --strict-fp): the same NaNs, infinities
                # and zeros up to sign, finite values within rounding of the row
                tol = (2.0 ** -52 if "--precision=double" in cfg else 2.0 ** -23) * 4096
                scale = np.nanmax(np.where(np.isfinite(e), np.abs(e), 0), initial=1.0)
                with np.errstate(all="ignore"):
                    ok = ok | (np.isfinite(e) & np.isfinite(g) & (np.abs(g - e) <= tol * np.maximum(np.abs(e), scale * 1e-3)))
                if "layer_norm" in k:  # rows of 3e38: x - mean is the mean's rounding (torch mode)
                    n = int(k.split(".")[0].rsplit("_", 1)[1])
                    ok |= (np.arange(len(e)) // n) % 12 == 10
            for i in np.nonzero(~ok)[0][:4]:
                print("FAIL %s vs %s: %s[%d] (%s): %r vs %r" % (tag, reftag, k, i, where_input(k, i), g[i], e[i]))
            bad += int((~ok).sum())
    print("%d configurations, %d tensors, %d differences" % (len(cfgs), len(PRINTS), bad))
    sys.exit(1 if bad else 0)

# ---- mode torch
import torch
import torch.nn.functional as F
dbl = "--precision=double" in rest
dt = torch.float64 if dbl else torch.float32

def T(v, grad=True):
    x = torch.tensor(np.asarray(v), dtype=dt)
    return x.requires_grad_(grad)

want = {}
def record(out, name, params):
    want[name] = out.detach().double().numpy().reshape(-1)
    if params:
        out.backward(torch.ones_like(out))
        for pn, p in params:
            want[pn + ".grad"] = (p.grad if p.grad is not None else torch.zeros_like(p)).double().numpy().reshape(-1)

for k, (_, f) in UNARY.items():
    a = T(A); record(f(torch, a), "y_" + k, [("a_" + k, a)])
for k, (_, f) in BINARY.items():
    a, b = T(A), T(B); record(f(torch, a, b), "y_" + k, [("a_" + k, a), ("b_" + k, b)])
for k, (_, f) in NODIFF.items():
    record(f(torch, T(A, False), T(B, False)), "y_" + k, [])
for k, (_, f) in TERNARY.items():
    a, b, c = T(A3 if k == "fma" else A), T(B3 if k == "fma" else B), T(C3)
    record(f(torch, a, b, c), "y_" + k, [("a_" + k, a), ("b_" + k, b)] + ([("c_" + k, c)] if k == "fma" else []))
for n in SIZES:
    for k, (_, f) in REDUCE.items():
        if k == "layer_norm" and n == 1:
            continue
        r = T(ROWS[n]); record(f(torch, F, r, T(TGT[n], False)), "y_%s_%d" % (k, n), [("r_%s_%d" % (k, n), r)])

got = run_tdslc(rest, " ".join(rest))
kn = {}
ulps = 64
eps = 2.0 ** -52 if dbl else 2.0 ** -23
tiny = 1e-300 if dbl else 1e-37
for k in PRINTS:
    e, g = want[k], got[k]
    if g.shape != e.shape:
        print("FAIL %s: shape %s vs torch %s" % (k, g.shape, e.shape)); bad += 1; continue
    atol = tiny
    if k.startswith("r_"):  # a reduction's gradient may cancel to rounding noise
        atol = 64 * eps
    if "layer_norm" in k:  # 1 / sqrt (eps) = 316 scales the noise of the cancelling sum
        atol = 65536 * eps
        n = int(k.split(".")[0].rsplit("_", 1)[1])
        ok_rows = np.ones(len(e), bool)
        # the rows of 3e38: their mean rounds, and x - mean, 1e-16 of 3e38, is normalized to
        # +-1 (tdslc) or garbage (torch): no special value, an ill-conditioned input
        ok_rows[(np.arange(len(e)) // (1 if k.startswith("y_") else n) // (n if k.startswith("y_") else 1)) == 10] = False
        g, e = g[ok_rows], e[ok_rows]
    with np.errstate(all="ignore"):
        ok = same_bits(g, e) | (np.isfinite(e) & np.isfinite(g) & (np.abs(g - e) <= ulps * eps * np.abs(e) + atol))
    nb = []
    for i in np.nonzero(~ok)[0]:
        why = known(k, i)
        if why:
            kn[why] = kn.get(why, 0) + 1
        else:
            nb.append(i)
    if len(nb):
        print("DIFF %s: %d cells, e.g. " % (k, len(nb)) + "; ".join("[%d] (%s): tdslc %r torch %r" % (i, where_input(k, i), g[i], e[i]) for i in nb[:3]))
    bad += len(nb)
for why in sorted(kn):
    print("KNOWN %s: %d cells" % (why, kn[why]))
print("%d tensors vs torch, %d differences" % (len(PRINTS), bad))
sys.exit(1 if bad else 0)
