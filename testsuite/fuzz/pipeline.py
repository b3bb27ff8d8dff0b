#!/usr/bin/env python3
"""Whole-pipeline fuzzer: programs through every stage of the sanitized compiler.

  pipeline.py [--tdslc build/asan/tdslc] [--time SEC] [--seed N] [--out DIR]
              [--regress-only] [--timeout SEC] [FILE.tdsl...]

Inputs, in turn: (1) a grammar-aware generator of mostly valid programs (terminals of
random shapes, pointwise ops, matrix products with inferred parameters, einsum
permutations/reductions/convolutions, slices by index symbols, unary ops, softmax,
%cd routines with grad_update), (2) mutations of the testsuite's .tdsl files and of
generated programs (numbers replaced by edge values, tokens deleted, duplicated or
swapped, lines shuffled, bytes inserted). Each input runs through the ASan+UBSan tdslc
with --dump-shapes, --dump-ir and --run --check-bounds (printing every named tensor,
calling every routine), each under a CPU-time limit. Findings:
  signal / exit status outside 0, 1, 2; a sanitizer report; a hang (CPU time);
  an error message without file:line:col at a compile-only stage; "internal error".
Each finding is saved as DIR/findings/KIND-N.tdsl with the command and output in
DIR/findings/KIND-N.txt. The files in testsuite/fuzz/regress/ (found inputs, now fixed)
run first. Prints a summary; exit 1 when something was found.
"""

import argparse
import glob
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

UNARY = ["relu", "tanh", "exp", "neg", "sqrt", "sin", "cos", "sat01", "recip", "log", "stop_gradient", "softmax"]
POINTWISE = ["+", "-", "*.", "/.", "**."]


class Gen:
    """A random program: each tensor is named tN with a known (batch, input, output)."""

    def __init__(self, rnd):
        self.r = rnd
        self.lines = []
        self.tensors = []  # (name, batch, input, output)
        self.syms = []     # (name, range or None)
        self.params = 0
        self.n = 0

    def dims(self, k, lo=1, hi=4):
        return [self.r.randint(lo, hi) for _ in range(k)]

    def shape(self):
        r = self.r
        return (self.dims(r.choice([0, 0, 1, 1, 2])), self.dims(r.choice([0, 0, 1])), self.dims(r.choice([0, 1, 1, 2])))

    def emit(self, expr, shape):
        name = "t%d" % self.n
        self.n += 1
        self.lines.append("let%%op %s = %s" % (name, expr))
        self.tensors.append((name,) + tuple(shape))
        return self.tensors[-1]

    @staticmethod
    def lst(ds):
        return "[ %s ]" % "; ".join(str(d) for d in ds)

    def terminal(self):
        r = self.r
        b, i, o = self.shape()
        k = r.randint(0, 4)
        if k == 0 and not b and not i and len(o) == 1:
            return self.emit("range %d" % (o[0] - 1 if o[0] > 1 else 1), (b, i, [max(o[0], 2) if o[0] > 1 else 2]))
        if k <= 1:
            parts = []
            if b: parts.append("~batch_dims:" + self.lst(b))
            if i: parts.append("~input_dims:" + self.lst(i))
            parts.append("~output_dims:" + self.lst(o))
            return self.emit("range_of_shape %s ()" % " ".join(parts), (b, i, o))
        if k == 2 and not b and not i:
            def lit(ds):
                if not ds:
                    return "%g" % r.uniform(-3, 3)
                return "[ %s ]" % "; ".join(lit(ds[1:]) for _ in range(ds[0]))
            return self.emit(lit(o), ([], [], o))
        self.params += 1
        init = r.choice(["", " = 0.5", " = uniform ()"])
        o = o or [1]
        return self.emit("{ p%d%s; o = %s }" % (self.params, init, self.lst(o)), ([], [], o))

    def pick(self, known=True):
        """An earlier tensor (with a known shape unless known=False), or a new terminal."""
        ts = [t for t in self.tensors if not known or None not in t[1:]]
        return self.r.choice(ts) if ts and self.r.random() < 0.8 else self.terminal()

    def same_shape(self, t):
        for u in self.tensors:
            if u[1:] == t[1:] and u is not t and self.r.random() < 0.5:
                return u
        b, i, o = t[1:]
        parts = (["~batch_dims:" + self.lst(b)] if b else []) + (["~input_dims:" + self.lst(i)] if i else [])
        return self.emit("range_of_shape %s ~output_dims:%s ()" % (" ".join(parts), self.lst(o)), (b, i, o))

    def step(self):
        r = self.r
        k = r.randint(0, 11)
        if k == 3:  # a unary op or a full reduction works on any shape
            t = self.pick(known=False)
            return self.emit("%s (%s)" % (r.choice(UNARY), t[0]), t[1:])
        if k == 9:
            t = self.pick(known=False)
            return self.emit('%s ++ "...|...->... => 0"' % t[0], ([], [], []))
        t = self.pick()
        name, b, i, o = t
        if k <= 2:
            op = r.choice(POINTWISE)
            if op == "**.":
                return self.emit("%s **. %d" % (name, r.randint(1, 3)), (b, i, o))
            u = self.same_shape(t) if r.random() < 0.85 else self.pick()
            return self.emit("%s %s %s" % (name, op, u[0]), (b, i, o))
        if k == 4:  # a matrix product with an inferred parameter
            self.params += 1
            h = r.randint(1, 5)
            if r.random() < 0.8:
                return self.emit("{ w%d; o = [ %d ] } * %s" % (self.params, h, name), (b, [], [h]))
            return self.emit("{ w%d } * %s" % (self.params, name), (b, None, None))
        if k == 5 and b:
            return self.emit("%s @| %s" % (name, self.symbol(b[0])), (b[1:], i, o))
        if k == 6 and o and not i:
            spec, shape = self.reduce_spec(b, o)
            return self.emit('%s ++ "%s"' % (name, spec), shape)
        if k == 7 and not b and not i and len(o) == 1:
            stride = r.choice(["", "", "2*"])
            w = self.terminal_vec(r.randint(1, 3))
            return self.emit('%s +* "%so=+k; k => o" %s' % (name, stride, w), ([], [], None))
        if k == 8 and len(o) == 2 and not b and not i:
            return self.emit('%s ++ "ij => ji"' % name, ([], [], o[::-1]))
        if k == 10 and o and None not in o:
            self.params += 1
            return self.emit("relu ({ b%d; o = %s } + (%s))" % (self.params, self.lst(o), name), (b, i, o))
        if k == 11 and r.random() < 0.3:
            u = self.pick()
            return self.emit('%s +* "...|i->...; ...|...->i => ...|i" %s' % (name, u[0]), (b, None, None))
        return self.emit("%s - %s" % (name, self.same_shape(t)[0]), (b, i, o))

    def terminal_vec(self, n):
        return "[ %s ]" % "; ".join("%d" % self.r.randint(-2, 2) for _ in range(n))

    def reduce_spec(self, b, o):
        """A reduction or permutation of the output axes: (spec, result shape)."""
        letters = "ijkl"[: len(o)]
        keep = [c for c in letters if self.r.random() < 0.6]
        self.r.shuffle(keep)
        dims = [o[letters.index(c)] for c in keep]
        res = ",".join(keep) if len(keep) > 1 else "".join(keep)
        lhs = ",".join(letters) if len(letters) > 1 else letters
        if b:
            return "...|%s => ...|%s" % (lhs, res), (b, [], dims)
        return "%s => %s" % (lhs, res or "0"), ([], [], dims)

    def symbol(self, rng):
        name = "s%d" % len(self.syms)
        bound = self.r.random() < 0.8
        self.lines.append("let %s = index %s" % (name, rng if bound else "()"))
        self.syms.append((name, rng if bound else None))
        return name

    def program(self, steps):
        for _ in range(steps):
            self.step()
        if self.tensors and self.r.random() < 0.6:
            last = self.tensors[-1][0]
            self.lines.append('let%%op loss = (%s ++ "...|...->... => 0") *. { lscale = 1.0; o = [ 1 ] }' % last)
            self.lines.append("let%cd step = grad_update loss")
            if self.r.random() < 0.5:
                self.lines.append("let%cd train = sgd_update ~learning_rate:0.1 loss")
        return "\n".join(self.lines) + "\n"


EDGE_NUMBERS = ["0", "1", "-1", "2", "3", "7", "64", "1000", "65536", "2147483647", "-2147483648", "1e30", "0.",
                "nan", "1e-45", "99999999999999999999"]


def mutate(rnd, text):
    toks = re.findall(r'\s+|"[^"\n]*"|[A-Za-z_][A-Za-z0-9_\']*|\d+(?:\.\d*)?(?:e-?\d+)?|.', text)
    if not toks:
        return text
    for _ in range(rnd.randint(1, 4)):
        k = rnd.randint(0, 7)
        j = rnd.randrange(len(toks))
        if k == 0:
            nums = [n for n, t in enumerate(toks) if re.match(r"\d", t)]
            if nums:
                toks[rnd.choice(nums)] = rnd.choice(EDGE_NUMBERS)
        elif k == 1:
            del toks[j]
        elif k == 2:
            toks.insert(j, toks[rnd.randrange(len(toks))])
        elif k == 3:
            a, b = rnd.randrange(len(toks)), rnd.randrange(len(toks))
            toks[a], toks[b] = toks[b], toks[a]
        elif k == 4:
            toks.insert(j, rnd.choice(['"', "(", ")", "[", ";", "\n", "\x00", "@|", "=>", "~", "\\n", "%", "let%op",
                                       "index ()", '"\n"', "'q'", "...", "in", "fun", ":", "?", "dim ()"]))
        elif k == 5:
            strs = [n for n, t in enumerate(toks) if t.startswith('"')]
            if strs:
                n = rnd.choice(strs)
                s = list(toks[n][1:-1])
                if s:
                    s[rnd.randrange(len(s))] = rnd.choice(["ij", ",", "=>", ";", "+", "2*", "=+", "...", "|", "->", "0", "\\n"])
                toks[n] = '"' + "".join(s) + '"'
        elif k == 6:
            lines = "".join(toks).split("\n")
            if len(lines) > 1:
                a = rnd.randrange(len(lines))
                lines.insert(rnd.randrange(len(lines)), lines[a])
            return "\n".join(lines)
        else:
            del toks[j:j + rnd.randint(1, 10)]
    return "".join(toks)


SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|"
                       r"SUMMARY: |Segmentation fault|internal error|Assertion")
LOCATED = re.compile(r"^[^\n]*:\d+:\d+: (error|warning|note):|^tdslc: (error|note|warning|too many errors)|^ *\d* *\||^\s*$|^  ")


def names_and_routines(src):
    names = re.findall(r"^let%op ([A-Za-z_][A-Za-z0-9_']*) =", src, re.M)
    routines = re.findall(r"^let%cd ([A-Za-z_][A-Za-z0-9_']*) =", src, re.M)
    return names, routines


def run_one(tdslc, path, src, timeout):
    """Findings for one input: list of (kind, command, output)."""
    names, routines = names_and_routines(src)
    cmds = [[tdslc, "--dump-shapes", path], [tdslc, "--dump-ir", path]]
    run = [tdslc, "--run", "-O1", "--check-bounds", path]
    for rt in routines[:3]:
        run += ["--call", rt]
    for n in names[:12]:
        run += ["--print", n]
    cmds.append(run)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               LSAN_OPTIONS="suppressions=" + os.path.join(ROOT, "testsuite", "lsan.supp"))
    found = []
    # A hang is judged by CPU time (RLIMIT_CPU: SIGXCPU), not wall time: the machine may
    # be loaded. The wall-clock limit only guards against a process that sleeps.
    def limit_cpu():
        resource.setrlimit(resource.RLIMIT_CPU, (int(timeout), int(timeout) + 5))
    for cmd in cmds:
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=20 * timeout, env=env, cwd=os.path.dirname(path),
                               preexec_fn=limit_cpu)
        except subprocess.TimeoutExpired:
            found.append(("hang", cmd, "no exit after %ss of wall time" % (20 * timeout)))
            break
        if p.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            found.append(("hang", cmd, "more than %ss of CPU time" % timeout))
            break
        out = p.stderr.decode("utf-8", "replace")
        if p.returncode not in (0, 1, 2):
            found.append(("crash", cmd, "exit %d\n%s" % (p.returncode, out[-4000:])))
        elif SANITIZER.search(out):
            found.append(("sanitizer", cmd, out[-4000:]))
        elif p.returncode == 1 and cmd[1] != "--run":
            bad = [l for l in out.splitlines() if not LOCATED.match(l)]
            if bad or "error" not in out:
                found.append(("unlocated", cmd, out[-4000:]))
        if p.returncode == 1 and cmd[1] == "--dump-shapes":
            break  # later stages would only repeat the front end's errors
    return found


def seeds_from_testsuite():
    files = []
    for pat in ("testsuite/lit/**/*.tdsl", "samples/*/*.tdsl", "testsuite/fuzz/regress/*.tdsl", "testsuite/cuda/cases/*.tdsl"):
        files += glob.glob(os.path.join(ROOT, pat), recursive=True)
    conf = os.path.join(ROOT, "..", "shared", "conformance", "cases")
    if not os.path.isdir(conf):
        conf = "/work/shared/conformance/cases"
    files += glob.glob(os.path.join(conf, "*.tdsl"))
    out = []
    # not lit's Output/ scratch files: whether they exist depends on earlier test runs
    # (a seed would not repeat a run), and some are scale tests too big to mutate
    for f in sorted(x for x in files if "/Output/" not in x):
        try:
            with open(f, encoding="utf-8", errors="replace") as h:
                out.append(h.read())
        except OSError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "asan", "tdslc"))
    ap.add_argument("--time", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz", "pipeline"))
    ap.add_argument("--timeout", type=float, default=20, help="CPU seconds per command")
    ap.add_argument("--regress-only", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rnd = random.Random(seed)
    tdslc = os.path.abspath(a.tdslc)
    work = os.path.join(a.out, "work")
    fdir = os.path.join(a.out, "findings")
    os.makedirs(work, exist_ok=True)
    os.makedirs(fdir, exist_ok=True)
    print("pipeline fuzzer: seed %d, %gs, %s" % (seed, a.time, tdslc), flush=True)
    pool = seeds_from_testsuite()
    inputs = [open(f, encoding="utf-8", errors="replace").read() for f in a.files]
    inputs += [open(f).read() for f in sorted(glob.glob(os.path.join(HERE, "regress", "*.tdsl")))]
    start = time.time()
    count, findings, kinds = 0, 0, {}
    path = os.path.join(work, "input.tdsl")
    while True:
        if inputs:
            src = inputs.pop(0)
        elif a.regress_only or time.time() - start > a.time:
            break
        else:
            k = rnd.random()
            if k < 0.5:
                src = Gen(rnd).program(rnd.randint(2, 14))
            elif k < 0.8 and pool:
                src = mutate(rnd, rnd.choice(pool))
            else:
                src = mutate(rnd, Gen(rnd).program(rnd.randint(2, 10)))
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(src)
        count += 1
        for kind, cmd, out in run_one(tdslc, path, src, a.timeout):
            findings += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            base = os.path.join(fdir, "%s-%d-%d" % (kind, seed, count))
            with open(base + ".tdsl", "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(src)
            with open(base + ".txt", "w") as f:
                f.write(" ".join(cmd) + "\n" + out)
            print("FINDING %s: %s.tdsl (%s)" % (kind, base, " ".join(cmd[1:2])), flush=True)
    summary = ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items())) or "nothing"
    print("pipeline fuzzer: seed %d: %d inputs in %.0fs: %s found" % (seed, count, time.time() - start, summary))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
