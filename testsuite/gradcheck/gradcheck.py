#!/usr/bin/python3
"""Gradient checks for tdslc: every differentiable prelude op and a few composite models.

For each case of cases.py, the driver writes a model

    <case body, which defines the tensor f from literal parameters>
    let%op wts = <literal of f's shape, distinct values>
    let%op loss = (f *. wts) ++ "<all axes> => 0"
    let%cd step = grad_update loss

and compares the gradients that tdslc computes

    tdslc --run M.tdsl --precision=double --call step --print loss --print P.grad ... --json

with independent oracles:

  torch  PyTorch (float64) on the same values:  |got - want| <= 1e-9 * max(|want|, scale)
  fd     central finite differences of the loss that tdslc computes in double precision
         (at -O0: these runs only evaluate the forward pass, and compile faster),
         Richardson-extrapolated from h = 2^-8 and 2^-9 (error O(h^4)):
                                                 |got - want| <= 1e-6 * max(|want|, scale)
  expect gradients computed by hand (max-accumulation ties, tdsl(7), SHAPES AND INFERENCE,
         where PyTorch picks or splits differently and finite differences do not apply):
                                                 |got - want| <= 1e-12 * max(|want|, 1)
  f32    the default single precision build against torch:  1e-4 * max(|want|, scale)

scale is the largest |gradient| of that parameter (and 1 for the loss value), so that a
near-zero entry obtained by cancellation is judged against the magnitude of its terms.

Finite differences perturb a parameter through `--load P=FILE` (raw float32), which tdslc(1)
runs after `init` (the case `load_overrides_init` checks that it overrides the literal
initializer). Loads are float32, so every parameter value is a multiple of 1/32 with
|value| <= 3 and p +- h is exact in float32: the perturbed model sees exactly p +- h, and
the unperturbed parameters keep their literal values, which are the same doubles.
Parameters with more than --fd-elems elements get that many spread elements plus one
random directional derivative (d in {-1, 1}^n, still exact in float32).

Other checks: `sgd` (parameters after 3 steps of sgd_update, against PyTorch gradients
and OCANNL's sgd_one, 1e-9), `load` (--load overrides init). `--selftest` checks the
cases themselves without tdslc (PyTorch gradients against finite differences of the
PyTorch loss: no kink or tie within reach of the perturbation).

With --cuda, tdslc runs every case through the CUDA backend, emulated on the host (the
--emit-cuda source of each case and precision compiled once as C with
testsuite/cuda/shim.h, TDSL_CUDA_EMULATE), on CUDA_CASES (every case with --all-cases)
and without finite differences.

Prints "PASS case/check" or "FAIL case/check: reason" per check and ends with
"N passed, M failed"; exit status 0 iff nothing failed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402

H = 2.0 ** -8
SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda", "shim.h")
# --cuda: every kind of kernel and gradient rule once (pointwise, each unary op, max/min
# accumulation, einsum reductions and contractions, slices, padded convolutions, pooling,
# softmax, normalization, the optimizers' routines)
CUDA_CASES = ["pointdiv", "pointpow_2_5", "log", "recip_sqrt", "sqrt_at_0", "where", "max2_broadcast",
              "min2_ties", "einsum1_diag_expand", "tropical", "maxpool_padded_negative", "slice_twice", "mlp",
              "convnet", "log_softmax_large", "cross_entropy_indices", "layer_norm", "adamw",
              "conv_strided_padded", "negative_control"]


def run(cmd, cwd, timeout, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "TIMEOUT after %ss: %s" % (timeout, " ".join(cmd))
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-12:])
        return None, "exit %d: %s\n%s" % (p.returncode, " ".join(cmd), tail)
    out = {}
    for line in p.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            o = json.loads(line)
        except ValueError as e:
            return None, "bad JSON line %r: %s" % (line[:200], e)
        out[o.get("name")] = o
    return out, None


def close(got, want, rtol, scale):
    got = np.asarray(got, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    if got.shape != want.shape:
        return "length %d, want %d" % (got.size, want.size)
    tol = rtol * np.maximum(np.abs(want), scale)
    # At kinks (sqrt or log at 0) the oracles give infinities: those must match exactly.
    with np.errstate(invalid="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        bad = ~(same | (np.isfinite(want) & (np.abs(got - want) <= tol)))
    if bad.any():
        i = int(np.argmax(bad))
        return "element %d: got %.17g, want %.17g (tol %.3g; %d of %d elements off)\n  got  %s\n  want %s" % (
            i, got[i], want[i], tol[i], int(bad.sum()), got.size,
            np.array2string(got, precision=10, max_line_width=200),
            np.array2string(want, precision=10, max_line_width=200))
    return None


class Checker:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.passed = 0
        self.failed = 0
        self.pool = ThreadPoolExecutor(max_workers=args.jobs)
        self.emu = {}

    def emulation(self, case, d, precision):
        """The emulation library of the case's kernels at that precision (built once)."""
        key = (case.name, precision)
        with self.lock:
            if key in self.emu:
                return self.emu[key]
        prec = ["--precision=" + precision] if precision else []
        cu = os.path.join(d, "%s.%s.cu" % (case.name, precision or "single"))
        lib = cu[:-3] + ".emu.so"
        res = None, None
        try:
            p = subprocess.run([self.args.tdslc, "--backend=cuda", "--emit-cuda", case.name + ".tdsl"] + prec,
                               cwd=d, capture_output=True, text=True, timeout=self.args.timeout)
            if p.returncode != 0:
                res = None, "--emit-cuda: exit %d: %s" % (p.returncode, p.stderr.strip()[-1500:])
            else:
                with open(cu, "w") as f:
                    f.write(p.stdout)
                p = subprocess.run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", SHIM, "-x", "c", cu,
                                    "-shared", "-fPIC", "-o", lib, "-lm"], capture_output=True, text=True,
                                   timeout=self.args.timeout)
                res = (lib, None) if p.returncode == 0 else (None, "the kernels do not compile as C: " + p.stderr[-1500:])
        except subprocess.TimeoutExpired:
            res = None, "TIMEOUT building the emulation"
        with self.lock:
            self.emu[key] = res
        return res

    def report(self, name, err):
        with self.lock:
            if err is None:
                self.passed += 1
                print("PASS " + name, flush=True)
            else:
                self.failed += 1
                print("FAIL %s: %s" % (name, err), flush=True)

    def tdslc(self, case, d, extra, prints, call=True, precision="double", opt=None):
        cmd = [self.args.tdslc, "--run", case.name + ".tdsl"]
        env = None
        if self.args.cuda:
            lib, err = self.emulation(case, d, precision)
            if lib is None:
                return None, "tdslc --backend=cuda: " + err
            env = dict(os.environ, TDSL_CUDA_EMULATE=lib)
            cmd.append("--backend=cuda")
        if opt:
            cmd.append(opt)
        if precision:
            cmd.append("--precision=" + precision)
        for k, v in case.sets.items():
            cmd += ["--set", "%s=%d" % (k, v)]
        cmd += extra
        if call:
            cmd += ["--call", "step"]
        for p in prints:
            cmd += ["--print", p]
        cmd.append("--json")
        return run(cmd, d, self.args.timeout, env)

    def rep(self, case, name, err):
        """Reports a check; for a negative control, a detected error is the pass."""
        if case.must_fail:
            name += "(must fail)"
            if err is None:
                err = "the oracle did not detect the wrong backward"
            elif not err.startswith("tdslc"):  # a failing tdslc run detects nothing
                err = None
        self.report(name, err)

    def check_case(self, case):
        d = os.path.join(self.args.workdir, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, case.name + ".tdsl"), "w") as f:
            f.write(case.source())
        if case.kind == "load":
            return self.check_load(case, d)
        if case.sgd:
            return self.check_sgd(case, d)
        names = list(case.params)
        prints = ["loss"] + [n + ".grad" for n in names]
        out, err = self.tdslc(case, d, [], prints)
        if err:
            for chk in case.checks():
                self.rep(case, case.name + "/" + chk, "tdslc failed: " + err)
            return
        missing = [p for p in prints if p not in out]
        if missing:
            for chk in case.checks():
                self.rep(case, case.name + "/" + chk, "tdslc printed no %s" % ", ".join(missing))
            return
        got = {n: np.array(out[n + ".grad"]["values"], dtype=np.float64) for n in names}
        loss = float(out["loss"]["values"][0])
        if case.expect is not None:
            self.rep(case, case.name + "/expect", self.compare(case, loss, got, case.expect_loss, case.expect, 1e-12, exact_scale=True))
        if case.torch is not None:
            tl, tg = case.torch_grads()
            self.rep(case, case.name + "/torch", self.compare(case, loss, got, tl, tg, 1e-9))
            if not self.args.no_f32:
                out32, err = self.tdslc(case, d, [], prints, precision=None)
                if err:
                    self.rep(case, case.name + "/f32", "tdslc failed: " + err)
                else:
                    g32 = {n: np.array(out32[n + ".grad"]["values"]) for n in names if n + ".grad" in out32}
                    if len(g32) != len(names) or "loss" not in out32:
                        self.rep(case, case.name + "/f32", "tdslc printed no loss or gradient")
                    else:
                        self.rep(case, case.name + "/f32", self.compare(case, float(out32["loss"]["values"][0]), g32, tl, tg, 1e-4))
        if case.fd and not self.args.no_fd:
            self.rep(case, case.name + "/fd", self.check_fd(case, d, got))

    def compare(self, case, loss, got, want_loss, want, rtol, exact_scale=False):
        errs = []
        e = close([loss], [want_loss], rtol, 1.0)
        if e:
            errs.append("loss: " + e)
        for n in case.params:
            w = np.asarray(want[n], dtype=np.float64).ravel()
            fin = np.abs(w[np.isfinite(w)])
            scale = 1.0 if exact_scale else max(float(fin.max()) if fin.size else 0.0, 1e-300)
            e = close(got[n], w, rtol, scale)
            if e:
                errs.append("%s.grad: %s" % (n, e))
        return "; ".join(errs) if errs else None

    def loss_at(self, case, d, pname, vals, tag):
        v32 = vals.astype(np.float32)
        assert np.array_equal(v32.astype(np.float64), vals), "perturbed value not exact in float32"
        path = os.path.join(d, "%s.%s.bin" % (pname, tag))
        v32.astype("<f4").tofile(path)
        out, err = self.tdslc(case, d, ["--load", "%s=%s" % (pname, os.path.basename(path))], ["loss"], call=False,
                              opt=self.args.fd_opt)
        if err:
            raise RuntimeError(err)
        if "loss" not in out:
            raise RuntimeError("tdslc printed no loss")
        return float(out["loss"]["values"][0])

    def fd_submit(self, case, d, pname, base, direction, tag):
        """Starts the four runs of a Richardson-extrapolated central difference."""
        futs = []
        for h in (H, H / 2):
            for s in (1, -1):
                futs.append(self.pool.submit(self.loss_at, case, d, pname, base + s * h * direction,
                                             "%s_%g_%d" % (tag, h, s)))
        return futs

    @staticmethod
    def fd_value(futs):
        lp, lm, lp2, lm2 = (f.result() for f in futs)
        d1 = (lp - lm) / (2 * H)
        d2 = (lp2 - lm2) / H
        return (4 * d2 - d1) / 3

    def check_fd(self, case, d, got):
        errs = []
        futs = []
        for n, p in case.params.items():
            base = p.values.ravel().astype(np.float64)
            g = got[n].ravel()
            if g.size != base.size:
                errs.append("%s.grad: %d values, the parameter has %d" % (n, g.size, base.size))
                continue
            scale = max(float(np.abs(g).max()), 1e-300)
            idx = list(range(base.size))
            if base.size > self.args.fd_elems:
                idx = sorted(set(np.linspace(0, base.size - 1, self.args.fd_elems).round().astype(int).tolist()))
            for i in idx:
                e = np.zeros_like(base)
                e[i] = 1.0
                futs.append(("%s[%d]" % (n, i), g[i], scale, self.fd_submit(case, d, n, base, e, "e%d" % i)))
            if base.size > self.args.fd_elems:
                rng = np.random.default_rng(len(n) + base.size)
                e = rng.choice([-1.0, 1.0], size=base.size)
                futs.append(("%s.dir" % n, float(g @ e), scale * base.size, self.fd_submit(case, d, n, base, e, "dir")))
        try:
            for label, gv, scale, fs in futs:
                want = self.fd_value(fs)
                if not abs(gv - want) <= 1e-6 * max(abs(want), scale):
                    errs.append("%s: tdslc %.12g, finite difference %.12g" % (label, gv, want))
        except RuntimeError as e:
            return "tdslc failed: %s" % e
        return "; ".join(errs) if errs else None

    def check_sgd(self, case, d):
        """sgd_update: the parameters after `steps` calls of step (momentum buffers start at 0)."""
        names = list(case.params)
        out, err = self.tdslc(case, d, ["--call", "step"] * (case.sgd["steps"] - 1), names)
        if err:
            return self.rep(case, case.name + "/sgd", "tdslc failed: " + err)
        want = case.torch_sgd()
        errs = []
        for n in names:
            if n not in out:
                errs.append("tdslc printed no " + n)
                continue
            e = close(out[n]["values"], want[n], 1e-9, float(np.abs(want[n]).max()))
            if e:
                errs.append("%s: %s" % (n, e))
        self.rep(case, case.name + "/sgd", "; ".join(errs) if errs else None)

    def check_load(self, case, d):
        """--load runs after init and overrides a parameter's literal initializer."""
        (pname, p), = case.params.items()
        newv = (p.values.ravel() * 2 + 1).astype(np.float32)
        newv.astype("<f4").tofile(os.path.join(d, "p.bin"))
        out, err = self.tdslc(case, d, ["--load", pname + "=p.bin"], [pname, "loss"], call=False)
        if err:
            return self.rep(case, case.name + "/load", "tdslc failed: " + err)
        want_loss = float((newv.astype(np.float64) * case.wts.ravel()).sum())
        e = close(out[pname]["values"], newv, 0, 0) or close([float(out["loss"]["values"][0])], [want_loss], 1e-12, 1)
        self.rep(case, case.name + "/load", e)


def selftest(sel, fd_elems):
    """Validates the cases themselves: inputs away from kinks and ties, FD accurate enough."""
    import torch
    bad = good = 0
    for c in sel:
        if c.torch is None or not c.fd or c.sgd or c.must_fail:
            continue
        tl, tg = c.torch_grads()

        def L(n, v):
            ts = {k: torch.tensor(p.values, dtype=torch.float64) for k, p in c.params.items()}
            ts[n] = torch.tensor(v.reshape(c.params[n].values.shape), dtype=torch.float64)
            return float((c.torch(ts) * torch.tensor(c.wts)).sum())
        errs = []
        for n, p in c.params.items():
            base = p.values.ravel()
            g = tg[n].ravel()
            scale = max(float(np.abs(g).max()), 1e-300)
            for i in range(base.size):
                e = np.zeros_like(base)
                e[i] = 1
                v = [L(n, base + s * h * e) for h in (H, H / 2) for s in (1, -1)]
                fd = (4 * (v[2] - v[3]) / H - (v[0] - v[1]) / (2 * H)) / 3
                if not abs(fd - g[i]) <= 1e-6 * max(abs(fd), scale):
                    errs.append("%s[%d]: torch %.12g fd %.12g" % (n, i, g[i], fd))
        print(("FAIL selftest %s: %s" % (c.name, "; ".join(errs))) if errs else "PASS selftest " + c.name)
        bad += bool(errs)
        good += not errs
    print("%d passed, %d failed" % (good, bad))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tdslc", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "tdslc"))
    ap.add_argument("--filter", default="")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--fd-elems", type=int, default=3)
    ap.add_argument("--fd-opt", default="-O0",
                    help="optimization flag for the finite-difference (forward only) runs")
    ap.add_argument("--no-fd", action="store_true")
    ap.add_argument("--no-f32", action="store_true")
    ap.add_argument("--cuda", action="store_true", help="through the emulated CUDA backend (see above)")
    ap.add_argument("--all-cases", action="store_true", help="with --cuda: every case, not CUDA_CASES")
    ap.add_argument("--workdir", default=None, help="keep the generated models here")
    ap.add_argument("--selftest", action="store_true",
                    help="check the oracles against each other (torch gradients vs finite differences of the torch loss), no tdslc")
    ap.add_argument("--list", action="store_true", help="print the generated models and stop")
    args = ap.parse_args()
    args.tdslc = os.path.abspath(args.tdslc)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    else:
        args.workdir = tempfile.mkdtemp(prefix="tdsl-gradcheck-")
    sel = [c for c in C.CASES if args.filter in c.name]
    if args.cuda:
        args.no_fd = True
        if not args.all_cases:
            unknown = set(CUDA_CASES) - {c.name for c in C.CASES}
            if unknown:
                print("gradcheck: CUDA_CASES names no case %s" % ", ".join(sorted(unknown)))
                print("0 passed, 1 failed")
                return 1
            sel = [c for c in sel if c.name in CUDA_CASES]
    if args.list:
        for c in sel:
            print("=== %s\n%s" % (c.name, c.source()))
        return 0
    if args.selftest:
        return selftest(sel, args.fd_elems)
    if not os.access(args.tdslc, os.X_OK):
        print("gradcheck: no tdslc at %s" % args.tdslc)
        print("0 passed, 1 failed")
        return 1
    ck = Checker(args)
    outer = ThreadPoolExecutor(max_workers=max(1, args.jobs // 2 + 1))
    futs = [outer.submit(ck.check_case, c) for c in sel]
    for c, f in zip(sel, futs):
        try:
            f.result()
        except Exception as e:  # a bug in a case or the driver is a failure, not a crash
            ck.report(c.name, "driver error: %r" % e)
    print("%d passed, %d failed" % (ck.passed, ck.failed))
    return 0 if ck.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
