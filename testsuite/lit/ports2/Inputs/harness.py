"""Shared driver of the ports2 tests: cases written as tdsl expressions over host-loaded
tensors, PyTorch (forward and autograd, float64 and float32) as the oracle.

A driver script builds a Suite, adds cases and refused programs, and calls
suite.main(). Usage of such a script:  SCRIPT TDSLC WORKDIR [--filter S] [--list]
[--no-check] [--cuda]

A case is one tdsl result over inputs $0, $1, ... (parameters declared with the input's
dims, filled with --load), the torch function it stands for, and the upstream test it
comes from (src). Text substitutions in the expression and the extra lines: $0..$9 the
inputs, $r the result tensor's name, $n a prefix unique to the case (for captured
labels, which are visible to every later item of the file).
Variants:
  f32    single precision; values against torch float32, gradients against its autograd
  f64    --precision=double against torch float64
  check  tdslc --check -O3 (optimized vs plain naive code) on the single-precision
         program, every CHECK_EVERY-th case, in programs of 8 cases
With --cuda, instead: the CUDA backend, its kernels emulated on the host (the
--emit-cuda source compiled as C with testsuite/cuda/shim.h, TDSL_CUDA_EMULATE), in
single (cuda) and double precision (cuda-f64). The lit tests do not run it (minutes per
driver: the emulated kernels compile as one large C file); by hand, e.g.
conv_transpose.py build/tdslc /tmp/ct --cuda.
The gradient of a differentiable case is that of sum(result * w) for fixed weights w.
Each variant is one program (one compile); when it fails, each case runs alone so that
the failing ones are named. Prints PASS/FAIL per case and variant, then ALL-OK or
FAILURES (exit 1)."""
import json
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import torch

torch.set_num_threads(1)


class Case:
    pass


def _subst(s, c):
    s = s.replace("$r", c.name + "_r").replace("$n", c.name + "_")
    for k in range(9, -1, -1):
        s = s.replace("$%d" % k, "%s_x%d" % (c.name, k))
    return s


class Suite:
    def __init__(self, header="", check_every=2):
        self.header = header  # tdsl lines every program starts with (op definitions)
        self.cases, self.errors, self.results = [], [], []
        self.check_every = check_every
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
        self.flags = [a for a in sys.argv[1:] if a.startswith("--")]
        self.tdslc, self.work = args[0], args[1]
        self.filt = None
        for i, a in enumerate(sys.argv):
            if a == "--filter":
                self.filt = sys.argv[i + 1]
        os.makedirs(self.work, exist_ok=True)

    # ------------------------------------------------------------ declaring cases
    def case(self, group, name, src, shapes, expr, fn, grad=True, vals=None, kinds=None,
             low=-2.0, high=2.0, rshape=None, tol=None, differs=None, nodiff=(), extra=(),
             cd=False, ints=False, dyn=None):
        """shapes: dims of the inputs; kinds: per input (nb, no, ni), how its axes split
        into batch, output and input rows (default: all output axes), in order, so memory
        order is torch's; fn(*tensors): the torch result, whose row-major order must be
        tdsl's memory order; rshape: the tdsl result's dims (batch, output, input
        concatenated) when they are not torch's (then the values are compared
        flattened); cd: expr is %cd code that computes $r (no gradient); ints: inputs
        are small integers (exact in every precision, ties in max/min); dyn: per input,
        the indices of its axes declared ? (a dynamic dimension, set by the loaded
        array: tdsl(7) Dynamic dimensions)."""
        assert re.match(r"^[a-z][a-z0-9_]*$", name), name
        assert all(c.name != name for c in self.cases), name
        c = Case()
        c.group, c.name, c.src, c.expr, c.fn, c.grad, c.differs = group, name, src, expr, fn, grad, differs
        rng = np.random.RandomState(zlib.crc32(name.encode()))
        if vals is not None:
            c.ins = [np.array(v, dtype=np.float64) for v in vals]
        elif ints:
            c.ins = [rng.randint(-8, 9, size=s).astype(np.float64) for s in shapes]
        else:
            c.ins = [rng.uniform(low, high, size=s) for s in shapes]
        c.ins = [a.astype(np.float32).astype(np.float64) for a in c.ins]
        c.kinds = kinds or [None] * len(c.ins)
        c.rshape, c.tol, c.nodiff, c.cd = rshape, tol, nodiff, cd
        c.dyn = dyn or [()] * len(c.ins)
        if dyn:  # the result's dims, for the weights' declaration
            c.oshape = tuple(fn(*[torch.tensor(a) for a in c.ins]).shape)
        c.extra = [_subst(l, c) for l in extra]
        if cd:
            c.grad = False
        self.cases.append(c)
        return c

    def error(self, name, src, program, want, line):
        """A program tdslc must refuse (exit 1) with a located diagnostic at line that
        contains want."""
        self.errors.append((name, src, program, want, line))

    # ------------------------------------------------------------ programs
    def tname(self, c, k):
        return "%s_x%d" % (c.name, k)

    @staticmethod
    def dims_decl(shape, kinds, dyn=()):
        nb, no, ni = kinds if kinds is not None else (0, len(shape), 0)
        shape = ["?" if k in dyn else d for k, d in enumerate(shape)]
        lst = lambda ds: "[ " + "; ".join(str(d) for d in ds) + " ]"
        return "b = %s; i = %s; o = %s" % (lst(shape[:nb]), lst(shape[nb + no:]), lst(shape[nb:nb + no]))

    def fwd_lines(self, c):
        L = ["(* %s/%s: %s *)" % (c.group, c.name, c.src)]
        L += ["let%%op %s = { %s; %s }" % (self.tname(c, k), self.tname(c, k), self.dims_decl(a.shape, kd, dy))
              for k, (a, kd, dy) in enumerate(zip(c.ins, c.kinds, c.dyn))]
        if c.cd:
            L.append("let%%cd %s_f = %s" % (c.name, _subst(c.expr, c)))
        else:
            L.append("let%%op %s_r = %s" % (c.name, _subst(c.expr, c)))
        return L + c.extra

    def program(self, cases, shp):
        L, fwd, total = self.header.strip().splitlines(), [], []
        for c in cases:
            L += self.fwd_lines(c)
            if c.grad:
                b, o, i = shp[c.name] if not any(c.dyn) else ([], list(c.oshape), [])
                L.append("let%%op %s_w = { %s_w; %s }" % (c.name, c.name,
                                                          self.dims_decl(b + o + i, (len(b), len(o), len(i)))))
                L.append("let%%op %s_loss = (%s_r *. %s_w) ++ \"...|...->... => \"" % (c.name, c.name, c.name))
                total.append(c.name + "_loss")
            else:
                fwd.append(c.name + ("_f" if c.cd else "_r.forward"))
        if total:
            # one loss for all: the parameters are disjoint, so each case's gradients are
            # those of its own loss. One expression, not a chain of named partial sums:
            # every named tensor has its own forward routine, and a chain's would hold
            # every case before it (quadratic code, and --check runs each routine)
            L.append("let%%op total = %s" % " + ".join(total))
            L.append("let%cd step = grad_update total")
        if fwd:
            L.append("let%%cd fwd_all = %s" % "; ".join(fwd))
        return "\n".join(L) + "\n"

    def run(self, cmd, env=None):
        try:
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        except subprocess.TimeoutExpired:
            return 124, "", "timeout"
        return pr.returncode, pr.stdout, pr.stderr

    def shapes_of(self, cases, dirn):
        """{case: tdsl result (batch, output, input) dims}, or None and why."""
        os.makedirs(dirn, exist_ok=True)
        src = os.path.join(dirn, "shapes.tdsl")
        with open(src, "w") as f:
            f.write("\n".join(self.header.strip().splitlines() + [l for c in cases for l in self.fwd_lines(c)]) + "\n")
        rc, out, err = self.run([self.tdslc, "--dump-shapes", "--json", src])
        if rc != 0:
            return None, "exit %d: %s" % (rc, err.strip()[:700])
        got = {}
        for line in out.splitlines():
            o = json.loads(line)
            if "name" in o:  # (not the run-time checks of dynamic dimensions)
                got[o["name"]] = (o["batch"], o["output"], o["input"])
        return {c.name: got.get(c.name + "_r") for c in cases}, None

    @staticmethod
    def weights(c, shp):
        b, o, i = shp if not any(c.dyn) else ([], list(c.oshape), [])
        rng = np.random.RandomState(zlib.crc32((c.name + "w").encode()))
        return rng.randint(1, 9, size=tuple(b + o + i)) / 4.0

    def write_inputs(self, cases, shp, dirn, dt):
        args = []
        for c in cases:
            arrs = [(self.tname(c, k), a) for k, a in enumerate(c.ins)]
            if c.grad:
                arrs.append((c.name + "_w", self.weights(c, shp[c.name])))
            for nm, a in arrs:
                p = os.path.join(dirn, nm + ".npy")
                np.save(p, np.ascontiguousarray(a, dtype=dt))
                args += ["--load", "%s=%s" % (nm, p)]
        return args

    def run_variant(self, cases, shp, variant, dirn):
        """{tensor: float64 array}, or None and why."""
        os.makedirs(dirn, exist_ok=True)
        src = os.path.join(dirn, "m.tdsl")
        with open(src, "w") as f:
            f.write(self.program(cases, shp))
        dbl = variant in ("f64", "cuda-f64")
        loads = self.write_inputs(cases, shp, dirn, np.float64 if dbl else np.float32)
        if variant == "check":
            rc, out, err = self.run([self.tdslc, "--check", "-O3", src] + loads)
            return (True, None) if rc == 0 else (None, "exit %d: %s" % (rc, (out + err).strip()[-800:]))
        cmd = [self.tdslc, "--run", src, "--json"] + loads + (["--precision=double"] if dbl else [])
        env = None
        if variant.startswith("cuda"):
            cu, lib = os.path.join(dirn, "m.cu"), os.path.join(dirn, "emu.so")
            rc, out, err = self.run([self.tdslc, "--backend=cuda", "--emit-cuda", src] +
                                    (["--precision=double"] if dbl else []))
            if rc != 0:
                return None, "--emit-cuda: exit %d: %s" % (rc, err.strip()[:600])
            with open(cu, "w") as f:
                f.write(out)
            shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "cuda", "shim.h")
            rc, _, err = self.run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", shim, "-x", "c", cu,
                                   "-shared", "-fPIC", "-o", lib, "-lm"])
            if rc != 0:
                return None, "the kernels do not compile as host C: " + err.strip()[:600]
            env = dict(os.environ, TDSL_CUDA_EMULATE=lib)
            cmd = cmd[:1] + ["--backend=cuda"] + cmd[1:]
        if any(c.grad for c in cases):
            cmd += ["--call", "step"]
        if any(not c.grad for c in cases):
            cmd += ["--call", "fwd_all"]
        for c in cases:
            cmd += ["--print", c.name + "_r"]
            if c.grad:
                cmd += [a for k in range(len(c.ins)) if k not in c.nodiff
                        for a in ("--print", "%s.grad" % self.tname(c, k))]
        rc, out, err = self.run(cmd, env)
        if rc != 0:
            return None, "exit %d: %s" % (rc, err.strip()[:800])
        got = {}
        for line in out.splitlines():
            o = json.loads(line)
            got[o["name"]] = np.array([float(v) for v in o["values"]], dtype=np.float64)
            got[o["name"] + "#dims"] = (o["batch"], o["output"], o["input"])
        return got, None

    # ------------------------------------------------------------ oracle
    def oracle(self, c, shp, dt):
        ts = [torch.tensor(a, dtype=dt, requires_grad=c.grad and k not in c.nodiff)
              for k, a in enumerate(c.ins)]
        out = c.fn(*ts)
        if not torch.is_tensor(out):
            out = torch.tensor(out, dtype=dt)
        want = out.detach().double().numpy().reshape(-1)
        grads = []
        if c.grad:
            w = torch.tensor(self.weights(c, shp).reshape(out.shape), dtype=dt)
            (out * w).sum().backward()
            grads = [(k, (t.grad if t.grad is not None else torch.zeros_like(t)).double().numpy().reshape(-1))
                     for k, t in enumerate(ts) if k not in c.nodiff]
        return tuple(out.shape), want, grads

    @staticmethod
    def close(got, want, tol):
        if got.shape != want.shape:
            return False, "size %d, torch %d" % (got.size, want.size)
        gn, wn = np.isnan(got), np.isnan(want)
        if (gn != wn).any():
            i = int(np.argmax(gn != wn))
            return False, "cell %d: %r, torch %r" % (i, got[i], want[i])
        fin = np.isfinite(want)
        bad = (np.isinf(got) != np.isinf(want)) | ((got != want) & ~fin & ~wn)
        if bad.any():
            i = int(np.argmax(bad))
            return False, "cell %d: %r, torch %r" % (i, got[i], want[i])
        if not fin.any():
            return True, ""
        scale = max(1.0, float(np.max(np.abs(want[fin]))))
        err = np.abs(got[fin] - want[fin])
        bad = err > tol * (np.abs(want[fin]) + scale)
        if bad.any():
            i = int(np.flatnonzero(fin)[np.argmax(bad)])
            return False, "cell %d: %r, torch %r (max err %.3g)" % (i, got[i], want[i], float(err.max()))
        return True, ""

    def check_case(self, c, shp, got, variant):
        if any(c.dyn):  # the dims inference left open: as the run set them
            shp = got[c.name + "_r#dims"]
        dt = torch.float64 if variant in ("f64", "cuda-f64") else torch.float32
        tol = 1e-10 if variant in ("f64", "cuda-f64") else max(2e-5, c.tol or 0)
        tshape, want, grads = self.oracle(c, shp, dt)
        rdims = tuple(shp[0] + shp[1] + shp[2])
        exp = tuple(c.rshape) if c.rshape is not None else tshape
        if rdims != exp:
            return False, "shape %s, expected %s" % (rdims, exp)
        ok, msg = self.close(got[c.name + "_r"], want, tol)
        if not ok:
            return False, "value " + msg
        for k, g in grads:
            v = got.get("%s.grad" % self.tname(c, k))
            if v is None:
                return False, "no gradient of input %d" % k
            ok, msg = self.close(v, g, tol * 10 if variant == "f32" else tol)
            if not ok:
                return False, "gradient of input %d: %s" % (k, msg)
        return True, ""

    # ------------------------------------------------------------ running
    def report(self, c, variant, ok, msg):
        self.results.append(ok)
        tag = " (differs: %s)" % c.differs if c.differs and ok else ""
        print("%s: %s/%s [%s]%s%s" % ("PASS" if ok else "FAIL", c.group, c.name, variant,
                                      "" if ok else " " + msg, tag))
        sys.stdout.flush()

    def run_errors(self):
        for name, src, prog, want, line in self.errors:
            if self.filt is not None and self.filt not in name:
                continue
            d = os.path.join(self.work, "errors")
            os.makedirs(d, exist_ok=True)
            p = os.path.join(d, name + ".tdsl")
            with open(p, "w") as f:
                f.write(prog)
            rc, out, err = self.run([self.tdslc, "--dump-shapes", p])
            loc = "%s.tdsl:%d:" % (name, line)
            ok = rc == 1 and want.lower() in err.lower() and re.search(re.escape(loc) + r"\d+: error:", err)
            self.results.append(bool(ok))
            print("%s: refused/%s%s" % ("PASS" if ok else "FAIL", name,
                                       "" if ok else " exit %d: %s" % (rc, err.strip()[:400])))

    def main(self):
        import time
        t0 = time.time()
        cases = [c for c in self.cases if self.filt is None or self.filt in c.name]
        if "--list" in self.flags:
            for c in cases:
                print("\n".join(self.fwd_lines(c)))
            return 0
        shp, err = self.shapes_of(cases, os.path.join(self.work, "shapes"))
        if shp is None:  # isolate the cases inference refuses
            shp, good = {}, []
            for c in cases:
                s, e = self.shapes_of([c], os.path.join(self.work, "shapes", c.name))
                if s is None:
                    for v in ("f32", "f64"):
                        self.report(c, v, False, "--dump-shapes: " + e)
                else:
                    shp.update(s)
                    good.append(c)
            cases = good
        missing = [c for c in cases if shp.get(c.name) is None]
        for c in missing:
            self.report(c, "f32", False, "no result tensor %s_r in --dump-shapes" % c.name)
        cases = [c for c in cases if c not in missing]
        cuda = "--cuda" in self.flags
        for variant in (("cuda", "cuda-f64") if cuda else ("f32", "f64")):
            got, err = self.run_variant(cases, shp, variant, os.path.join(self.work, variant))
            print("time: %s ran at %.1f s" % (variant, time.time() - t0), file=sys.stderr)
            for c in cases:
                g, e = got, err
                if g is None:
                    g, e = self.run_variant([c], shp, variant, os.path.join(self.work, variant, c.name))
                if g is None:
                    self.report(c, variant, False, e)
                else:
                    ok, msg = self.check_case(c, shp[c.name], g, variant)
                    self.report(c, variant, ok, msg)
        if "--no-check" not in self.flags and not cuda:
            sub = cases if self.filt is not None else cases[::self.check_every]
            for k in range(0, len(sub), 8):
                chunk = sub[k:k + 8]
                ok, err = self.run_variant(chunk, shp, "check", os.path.join(self.work, "check", str(k)))
                for c in chunk:
                    o1, e1 = ok, err
                    if ok is None:
                        o1, e1 = self.run_variant([c], shp, "check", os.path.join(self.work, "check", c.name))
                    self.report(c, "check", o1 is not None, e1 or "")
            print("time: check ran at %.1f s" % (time.time() - t0), file=sys.stderr)
        self.run_errors()
        nfail = self.results.count(False)
        groups = {}
        for c in cases:
            groups[c.group] = groups.get(c.group, 0) + 1
        print("cases per group: " + ", ".join("%s %d" % kv for kv in groups.items()))
        print("%d checks, %d failed" % (len(self.results), nfail))
        print("ALL-OK" if nfail == 0 else "FAILURES")
        return 1 if nfail else 0
