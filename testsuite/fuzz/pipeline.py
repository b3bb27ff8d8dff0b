#!/usr/bin/env python3
"""Whole-pipeline fuzzer: programs through every stage of the sanitized compiler.

  pipeline.py [--tdslc build/asan/tdslc] [--time SEC] [--seed N] [--out DIR]
              [--regress-only] [--timeout SEC] [--cuda off|emit|emulate] [FILE.tdsl...]

Inputs, in turn: (1) a grammar-aware generator of mostly valid programs (terminals of
random shapes, pointwise ops, matrix products with inferred parameters, einsum
permutations/reductions/convolutions, slices by index symbols, unary ops, softmax,
%cd routines with grad_update; and `Gen.extra`: %cd assignments with ~logic specs and
number operands, padded/valid/dilated and 2-D convolutions and max-pools, @^^ and +++,
dynamic dims (`dim ()`, set with --set), labeled dims and numbers, user `op`s with
forward/backward, functions, stacking, where/fma/comparisons, !@ and !.., fixed-index
slices, let/if/fun, nesting up to past the parser's 1000 levels, `open` of a library
file and of an open cycle, both written next to the input; and `Gen.newer`: empty tensors
in each written form, capture lists with dim/set_dim/set_equal/set_scale, where/fma and
user ops over three-argument specs, [| a; b |] and (a, b) stacking, labelled numbers, %cd
assignments through a slice, anonymous `?` dims), (2) mutations of the testsuite's .tdsl files and of
generated programs (numbers replaced by edge values, tokens deleted, duplicated or
swapped, lines shuffled, bytes inserted). Each input runs through the ASan+UBSan tdslc
with --dump-shapes, --dump-ir, --backend=cuda --emit-cuda and --run --check-bounds
(printing every named tensor, calling every routine; dynamic dims set, the anonymous ones
by the numbers --dump-ir gives them), each under a CPU-time limit; with --cuda emulate (the
default when tdslc has NVRTC) a run that succeeded is repeated with --backend=cuda on the
host emulation of its kernels (the --emit-cuda source compiled as C with
testsuite/cuda/shim.h, TDSL_CUDA_EMULATE) and the printed values compared. Findings:
  signal / exit status outside 0, 1, 2; a sanitizer report; a hang (CPU time);
  an error message without file:line:col at a compile-only stage; "internal error";
  cuda-cc (the emitted kernels do not compile as C), cuda-exit (the CUDA run fails where
  the CPU's succeeded), mismatch (other values than the CPU's, beyond float rounding).
The messages of --run failures, which are not findings, are counted in DIR/run-errors.txt
(an example of each in DIR/run-error-N.tdsl): sorting them is how unexpected run-time
errors are found.
Each finding is saved as DIR/findings/KIND-N.tdsl with the command and output in
DIR/findings/KIND-N.txt. The files in testsuite/fuzz/regress/ (found inputs, now fixed)
run first. Prints a summary (and how many commands of each stage exited 0); exit 1 when
something was found.
"""

import argparse
import glob
import json as jsonlib
import math
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

UNARY = ["relu", "tanh", "exp", "neg", "sqrt", "sin", "cos", "sat01", "recip", "log", "stop_gradient", "softmax", "erf",
         "gelu", "log_softmax"]
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
        self.ncd = 0
        self.nops = 0
        self.nfun = 0
        self.dyns = []     # (dim name, value given with --set)
        self.anon = False  # an anonymous `?` dim was written

    def dims(self, k, lo=1, hi=4):
        # now and then an empty axis (dimension 0), which exists since the third campaign
        return [0 if lo > 0 and self.r.random() < 0.06 else self.r.randint(lo, hi) for _ in range(k)]

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
            return self.emit("range %d" % o[0], (b, i, o))  # n values, as numpy's arange
        if k <= 1:
            parts = []
            if b: parts.append("~batch_dims:" + self.lst(b))
            if i: parts.append("~input_dims:" + self.lst(i))
            parts.append("~output_dims:" + self.lst(o))
            return self.emit("range_of_shape %s ()" % " ".join(parts), (b, i, o))
        if k == 2 and not i and len(b) <= 1:
            def lit(ds):
                if not ds:
                    return "%g" % r.uniform(-3, 3)
                return "[ %s ]" % "; ".join(lit(ds[1:]) for _ in range(ds[0]))
            if b:  # a batch axis: [| ... |], empty when b = [0] (`[| |]`)
                if not o or b[0] == 0:
                    return self.emit("[| %s |]" % "; ".join("%g" % r.uniform(-3, 3) for _ in range(b[0])), (b, [], []))
                return self.emit("[| %s |]" % "; ".join(lit(o) for _ in range(b[0])), (b, [], o))
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
        if any(isinstance(d, str) for d in b):  # a dynamic batch: range_of_shape needs static sizes
            return t
        parts = (["~batch_dims:" + self.lst(b)] if b else []) + (["~input_dims:" + self.lst(i)] if i else [])
        return self.emit("range_of_shape %s ~output_dims:%s ()" % (" ".join(parts), self.lst(o)), (b, i, o))

    def step(self):
        r = self.r
        k = r.randint(0, 18)
        if k == 3:  # a unary op or a full reduction works on any shape
            t = self.pick(known=False)
            return self.emit("%s (%s)" % (r.choice(UNARY), t[0]), t[1:])
        if k == 9:
            t = self.pick(known=False)
            return self.emit('%s ++ "...|...->... => 0"' % t[0], ([], [], [1]))  # "=> 0": one axis of size 1
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
        if k >= 14:
            return self.newer(t)
        if k >= 12:
            return self.extra(t)
        return self.emit("%s - %s" % (name, self.same_shape(t)[0]), (b, i, o))

    # Constructs the first generator never produced: %cd code with ~logic specs, affine
    # convolutions (padded, valid, dilated, 2-D), max-accumulating and outer-sum einsums,
    # dynamic dims, labeled dims and numbers, user-defined ops, functions, stacking,
    # ternaries and comparisons, constants from index symbols, deep nesting.
    def extra(self, t):
        r = self.r
        name, b, i, o = t
        k = r.randint(0, 15)
        if k == 0 and not b and not i and len(o) == 1:  # 1-D convolution, any flavour
            ker = r.randint(1, 3)
            stride, dil = r.randint(1, 3), r.randint(1, 2)
            kind = r.choice(["=+", "<+", "+"])
            w = self.terminal_vec(ker)
            if kind == "+":
                self.lines.append("let use_padding = %s" % r.choice(["true", "false"]))
                return self.emit('%s +* "%d*o+%d*k; k => o" %s' % (name, stride, dil, w), ([], [], None))
            return self.emit('%s +* "%d*o%s%d*k; k => o" %s' % (name, stride, kind, dil, w), ([], [], None))
        if k == 1 and not b and not i and len(o) == 2:  # 2-D pooling / convolution
            op = r.choice(["+*", "@^+"])
            ker = "[ %s ]" % "; ".join("[ %s ]" % "; ".join("%d" % r.randint(-1, 2) for _ in range(2)) for _ in range(2))
            return self.emit('%s %s "%s*h=+a, %s*w=+b; a, b => h, w" %s' % (
                name, op, r.choice(["1", "2"]), r.choice(["1", "2"]), ker), ([], [], None))
        if k == 2 and o:  # max-reduction, outer sum
            if r.random() < 0.5:
                return self.emit('%s @^^ "...|...->... => 0"' % name, ([], [], [1]))  # "=> 0": one axis of size 1
            u = self.pick()
            return self.emit('%s +++ "...|...->...; ...|...->... => 0" %s' % (name, u[0]), ([], [], [1]))  # "=> 0": one axis of size 1
        if k == 3:  # a %cd assignment with an explicit ~logic
            u = self.same_shape(t)
            self.ncd += 1
            acc = r.choice(["=:+", "=+", "=:", "=:@^", "=*", "=:-"])
            op = r.choice(["+", "*", "-", "@^", "<", "-?/"])
            logic = r.choice(['"."', '"' + self.pw_spec(b, i, o) + '"'])
            rhs = r.choice([u[0], u[0], "%g" % r.uniform(-2, 2), "!..%d" % r.randint(0, 3)])
            self.lines.append('let%%cd c%d = { cd%d } %s %s %s %s ~logic:%s' % (
                self.ncd, self.ncd, acc, name, op, rhs, logic))
            return self.emit("cd%d" % self.ncd if r.random() < 0.5 else name, (b, i, o))
        if k == 4:  # dynamic dims set on the command line
            d = "n%d" % len(self.dyns)
            self.dyns.append(d)
            self.lines.append("let %s = dim () // set=%d" % (d, r.randint(1, 4)))
            self.ncd += 1
            nm = "x%d" % self.ncd
            self.lines.append("let%%cd %s = { %s; b = [ %s ]; o = %s }" % (nm, nm, d, self.lst(o or [2])))
            self.tensors.append((nm, [d], [], o or [2]))
            if r.random() < 0.5:
                return self.emit('%s ++ "...|...->... => ...|0"' % nm, ([d], [], [1]))
            return self.emit("relu (%s)" % nm, ([d], [], o or [2]))
        if k == 5:  # labeled dims
            self.params += 1
            lab = r.choice(["rgb", "q", "x_1"])
            dims = "[ %s ]" % "; ".join(['("%s", %d)' % (lab, o[0]) if o else "2"] + [str(x) for x in o[1:]])
            return self.emit("{ l%d = 0.5; o = %s } + %s" % (self.params, dims, name), (b, i, o or [2]))
        if k == 6:
            return self.emit("%s *. '%s' %g" % (name, r.choice("qzr"), r.uniform(-2, 2)), (b, i, o))
        if k == 7:  # a user-defined op with forward and backward
            self.nops += 1
            opn = "uop%d" % self.nops
            fw = r.choice(["v =: v1 * v1", "v =:+ relu v1", "v =: v1 + v1", "v =:@^ v1"])
            bw = r.choice(["g1 =+ g * v1", "g1 =+ g", "g1 =+ relu_gate (v1, g)", ""])
            body = "forward { %s }" % fw + (" backward { %s }" % bw if bw else "")
            self.lines.append('op %s t1 ~logic:"." { %s }' % (opn, body))
            return self.emit("%s %s" % (opn, name), (b, i, o))
        if k == 8:  # a tensor function applied twice
            self.nfun += 1
            f = "f%d" % self.nfun
            self.lines.append("let%%op %s x = relu ({ fb%d } + x) *. x" % (f, self.nfun))
            return self.emit("%s (%s %s)" % (f, f, name), (b, i, o))
        if k == 9:  # stacking along a new axis
            u = self.same_shape(t)
            return self.emit("[ %s; %s; %s ]" % (name, u[0], name), (b, i, [3] + o) if not i else (b, None, None))
        if k == 10:
            u, v = self.same_shape(t), self.same_shape(t)
            form = r.choice(["where (%s < %s, %s, %s)", "fma %s %s %s %s", "where (%s = %s) %s %s"])
            if form.startswith("fma"):
                return self.emit("fma %s %s %s" % (name, u[0], v[0]), (b, i, o))
            return self.emit(form % (name, u[0], v[0], name), (b, i, o))
        if k == 11 and self.syms:
            s = r.choice(self.syms)[0]
            return self.emit("%s + !@%s *. !..%d" % (name, s, r.randint(0, 9)), (b, i, o))
        if k == 12:  # deep nesting
            depth = r.choice([5, 50, 300, 990, 1200])
            if depth > 100:  # parentheses and compile-time arithmetic: deep but cheap to run
                inner = r.choice([name, "!..(%s1)" % ("1+(" * depth) + ")" * depth])
                return self.emit("(" * depth + inner + ")" * depth + " + " + name, (b, i, o))
            ops = [r.choice(["relu", "neg", "tanh", "stop_gradient"]) for _ in range(depth)]
            return self.emit(" (".join(ops) + " (" + name + ")" * depth, (b, i, o))
        if k == 13:  # let ... in, if, fun
            return self.emit("let a = %d in if a > 1 then (fun x -> x *. !..a) %s else %s" % (r.randint(0, 3), name, name),
                             (b, i, o))
        if k == 14 and len(o) >= 1:  # slicing / fixed index in a spec
            fixed = r.randint(0, max(o[-1] - 1, 0))  # an empty axis: out of range, an error
            if len(o) > 1:
                return self.emit('%s ++ "...|...->..r..,%d => ...|...->..r.."' % (name, fixed), (b, None, None))
            return self.emit('%s ++ "...|...->%d => ...|...->0"' % (name, fixed), (b, None, None))
        return self.emit("%s +* \"...|...->...; ...|...->... => ...|...->...\" %s" % (name, self.same_shape(t)[0]),
                         (b, i, o))

    # Constructs that landed after the second campaign (h-fuzz, 2026-11-27): empty
    # tensors, einsum capture lists with dim/set_dim/set_equal/set_scale, three-argument
    # specs (where/fma with ~logic, user ops of three tensors), [| a; b |] and (a, b)
    # stacking, labelled numbers, %cd assignments through a slice, anonymous dynamic
    # dims (`?`, set from --dump-ir's `dim ?N` lines).
    def newer(self, t):
        r = self.r
        name, b, i, o = t
        k = r.randint(0, 13)
        if k == 0:  # empty tensors of each written form, combined with t or reduced
            form, shape = r.choice([("[ ]", ([], [], [0])), ("[ [ ]; [ ] ]", ([], [], [2, 0])),
                                    ("[| |]", ([0], [], [])), ("range 0", ([], [], [0])),
                                    ("[ [ ]; [ ]; [ ] ]", ([], [], [3, 0])), ("[| [ ]; [ ] |]", ([2], [], [0]))])
            if r.random() < 0.5:
                self.params += 1
                form = "{ e%d = %s; o = %s }" % (self.params, r.choice(["1.", "0.", "uniform ()"]), self.lst(shape[2] or [0]))
                shape = ([], [], shape[2] or [0])
            e = self.emit(form, shape)
            how = r.randint(0, 5)
            if how == 0:
                return self.emit('%s ++ "...|...->... => 0"' % e[0], ([], [], [1]))  # "=> 0": one axis of size 1
            if how == 1:
                return self.emit('%s @^^ "...|...->... => 0"' % e[0], ([], [], [1]))  # "=> 0": one axis of size 1
            if how == 2 and len(e[3]) == 2:
                return self.emit('%s ++ "ij=>i"' % e[0], ([], [], e[3][:1]))
            if how == 3 and e[3]:  # a product contracting the empty axis: zeros
                self.params += 1
                return self.emit("{ w%d; o = [ %d ] } * %s" % (self.params, r.randint(1, 3), e[0]), (e[1], [], None))
            if how == 4:
                return self.emit("%s %s %s" % (e[0], r.choice(POINTWISE[:4]), self.same_shape(e)[0]), e[1:])
            return self.emit("%s (%s)" % (r.choice(UNARY), e[0]), e[1:])
        if k == 1 and len(o) >= 1 and not b and not i:  # capture lists and constraints on them
            a, c = r.sample("ijkpqxyz", 2)
            if len(o) == 1:
                spec, caps, shape = "%s=>%s" % (a, a), [a], ([], [], o)
                res = self.emit('%s ++ "%s" %s' % (name, spec, self.caplist(caps)), shape)
            else:
                m = r.choice("abcdefgh".replace(a, "").replace(c, ""))
                spec = "%s%s;%s%s=>%s%s" % (a, m, m, c, a, c)
                caps = r.sample([a, m, c], r.randint(1, 3))
                self.params += 1
                other = r.choice(["{ cw%d }" % self.params, "{ cw%d; o = [ %d; %d ] }" % (self.params, o[1], r.randint(0, 3))])
                res = self.emit('%s +* "%s" %s %s' % (name, spec, self.caplist(caps), other), ([], [], None))
            for _ in range(r.randint(0, 2)):
                x = r.choice(caps)
                kind = r.randint(0, 3)
                if kind == 0:  # mostly the size it has (o[0] for label a), else a conflict
                    self.lines.append("let _ = set_dim %s %d" % (x, o[0] if x == a and r.random() < 0.6 else r.choice([0, 1, 2, 3])))
                elif kind == 1:
                    self.lines.append("let _ = set_equal %s %s" % (x, r.choice(caps)))
                elif kind == 2:
                    self.lines.append("let _ = set_scale ~factor:%d %s %s" % (r.choice([1, 2, 3, 0]), x, r.choice(caps)))
            self.emit(r.choice(["dim %s" % caps[0], "[ %s ]" % "; ".join("dim %s" % x for x in caps),
                                "embed_dim %s + dim %s" % (caps[0], caps[-1])]), ([], [], None))
            return res
        if k == 2:  # where / fma with a three-argument ~logic in %cd
            u, v = self.same_shape(t), self.same_shape(t)
            self.ncd += 1
            spec = r.choice(['"."', '"' + self.pw_spec(b, i, o, 3) + '"'])
            prim = r.choice(["where", "fma"])
            acc = r.choice(["=:", "=:+", "=+", "=:@^"])
            self.lines.append('let%%cd c%d = { cd%d } %s %s (%s, %s, %s) ~logic:%s' % (
                self.ncd, self.ncd, acc, prim, name, u[0], v[0], spec))
            self.tensors.append(("cd%d" % self.ncd, b, i, o))
            return self.tensors[-1]
        if k == 3:  # a user op of three tensors, its spec passed in
            self.nops += 1
            opn = "top%d" % self.nops
            fw, bw = r.choice([("v =: where (v1, v2, v3)", "g2 =+ where (v1, g, 0.); g3 =+ where (v1, 0., g)"),
                               ("v =:+ fma (v1, v2, v3)", "g1 =+ g * v2; g2 =+ v1 * g; g3 =+ g"),
                               ("v =: fma (v1, v2, v3)", "")])
            body = "forward { %s }" % fw + (" backward { %s }" % bw if bw else "")
            self.lines.append("op %s ~spec t1 t2 t3 ~logic:spec { %s }" % (opn, body))
            u, v = self.same_shape(t), self.same_shape(t)
            if not i and not b and len(o) == 1 and r.random() < 0.4:  # "i; j->i; j => j->i": operands of three shapes
                w = self.terminal_vec(r.randint(1, 3))
                return self.emit('%s ~spec:"i; j->i; j => j->i" %s (%s, %s) %s' % (opn, name, name, name, w), ([], None, None))
            return self.emit('%s ~spec:"%s" %s %s %s' % (opn, self.pw_spec(b, i, o, 3), name, u[0], v[0]), (b, i, o))
        if k == 4:  # stacking along a new batch or input axis
            u = self.same_shape(t)
            n = r.randint(1, 3)
            items = "; ".join(r.choice([name, u[0]]) for _ in range(n))
            if r.random() < 0.5:
                return self.emit("[| %s |]" % items, ([n] + b, i, o) if not b else (None, None, None))
            return self.emit("(%s)" % ", ".join(r.choice([name, u[0]]) for _ in range(max(n, 2))), (None, None, None))
        if k == 5:  # labelled numbers
            lab = r.choice("qzr")
            form = r.choice(["'%s' %g" % (lab, r.uniform(-2, 2)), "[ '%s' 1.0; '%s' 2.0 ]" % (lab, lab),
                             "'%s' %g *. '%s' 1.0" % (lab, r.uniform(-2, 2), lab),
                             "%s +* \"...|...->...; %s => ...|...->...\" ('%s' 2.0)" % (name, lab, lab)])
            return self.emit(form, (None, None, None))
        if k in (6, 7) and b:  # a %cd assignment through a slice (nested when b has two axes)
            s = self.symbol(b[0])
            lhs = "(%s @| %s)" % (name, s)
            rest = (b[1:], i, o)
            if len(b) > 1 and r.random() < 0.4:
                lhs = "(%s @| %s)" % (lhs, self.symbol(b[1]))
                rest = (b[2:], i, o)
            self.ncd += 1
            acc = r.choice(["=:", "=+", "=:+", "=*", "=@-", "=-", "=:*"])
            other = lhs.replace(" @| %s)" % s, " @| %s)" % self.symbol(b[0]), 1) if r.random() < 0.5 else lhs
            rhs = r.choice(["!.%g" % r.uniform(-9, 9), other, "%s + %s" % (lhs, other), "!..%d" % r.randint(0, 4)])
            if rest[0] == [] and r.random() < 0.3:
                u = self.same_shape(("", [], i, o))
                rhs = "(%s) * %s ~logic:\".\"" % (rhs if not rhs.startswith("!") else u[0], u[0])
            self.lines.append("let%%cd c%d = %s %s %s" % (self.ncd, lhs, acc, rhs))
            return t
        if k == 8:  # anonymous dynamic dims, set from --dump-ir's `dim ?N ?`
            self.params += 1
            lab = r.choice(['("rgb", ?)', "?", str(r.randint(1, 3))])
            rows = r.choice(["b = [ ?; %d ]; o = [ %s ]" % (r.randint(1, 3), lab), "b = [ ? ]; o = [ %s ]" % lab,
                             "o = [ ?; 2 ]", "i = [ ? ]; o = [ 2 ]"])
            q = self.emit("{ dq%d; %s }" % (self.params, rows), (None, None, None))
            self.anon = True
            return self.emit(r.choice(["relu (%s)" % q[0], "%s + %s" % (q[0], q[0]),
                                       '%s ++ "...|...->... => 0"' % q[0]]), (None, None, None))
        if k == 9 and o and not b and not i:  # captures with a row variable
            res = self.emit('%s ++ "..r.. => 0" [ "r" ]' % name, ([], [], [1]))  # "=> 0": one axis of size 1
            self.emit("dim r", ([], [], [1]))
            return res
        if k == 10:  # a where through the prelude's ternary, curried
            u, v = self.same_shape(t), self.same_shape(t)
            return self.emit("where %s %s %s" % (name, u[0], v[0]), (b, i, o))
        if k == 11 and not b and not i and o:  # a dynamic dim joined to an empty axis
            d = "n%d" % len(self.dyns)
            self.dyns.append(d)
            self.lines.append("let %s = dim () // set=%d" % (d, r.randint(1, 3)))
            self.ncd += 1
            nm = "x%d" % self.ncd
            self.lines.append("let%%cd %s = { %s; b = [ %s ]; o = [ 0 ] }" % (nm, nm, d))
            return self.emit('%s ++ "...|...->... => ...|0"' % nm, ([d], [], [1]))
        return self.extra(t)

    def caplist(self, caps):
        return "[ %s ]" % "; ".join('"%s"' % c for c in caps)

    def pw_spec(self, b, i, o, n=2):
        # single-character axes: "o0" without a comma in the spec reads as axis o and the
        # fixed index 0 (the generator wrote that until the third campaign)
        rows = "%s|%s->%s" % ("bcdefgh"[:len(b)], "ijklmn"[:len(i)], "opqrstuvwxyz"[:len(o)])
        return "; ".join([rows] * n) + " => " + rows

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
        return "%s => %s" % (lhs, res or "0"), ([], [], dims or [1])

    def symbol(self, rng):
        name = "s%d" % len(self.syms)
        bound = self.r.random() < 0.8 and isinstance(rng, int)  # not a dynamic dim: `index n` is an error
        self.lines.append("let %s = index %s" % (name, rng if bound else "()"))
        self.syms.append((name, rng if bound else None))
        return name

    def program(self, steps):
        if self.r.random() < 0.15:  # another file's bindings (written by main into the work dir)
            self.lines.append('open "%s"' % self.r.choice(["fuzzlib.tdsl"] * 5 + ["fuzzcycle.tdsl"]))
            self.lines.append("let%op t_lib = lib_sq (lib_f libc)")  # fuzzlib's libc: 2 values, lib_b: 3
            self.tensors.append(("t_lib", [], [], [3]))
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
        if not toks:  # an earlier deletion took everything
            break
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
                                       "index ()", '"\n"', "'q'", "...", "in", "fun", ":", "?", "dim ()",
                                       "[ ]", "[| |]", "[|", "|]", "range 0", "0", '[ "j" ]', "dim j", "set_dim",
                                       "set_equal", "set_scale ~factor:2", "where", "fma", "@|", "=:", ",", "'q' 2.0",
                                       "~logic:\"i;i;i=>i\"", "o = [ 0 ]"]))
        elif k == 5:
            strs = [n for n, t in enumerate(toks) if t.startswith('"')]
            if strs:
                n = rnd.choice(strs)
                s = list(toks[n][1:-1])
                if s:
                    s[rnd.randrange(len(s))] = rnd.choice(["ij", ",", "=>", ";", "+", "2*", "=+", "...", "|", "->", "0", "\\n",
                                                           ";i", ";;", "..r..", "3*", "<+", "=+2*"])
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
    # `let%cd x = { x; ... }` names a host-filled tensor, not a routine
    routines = re.findall(r"^let%cd ([A-Za-z_][A-Za-z0-9_']*) =(?! *\{ *\1 *[;}])", src, re.M)
    return names, routines


# Files a generated program may open (written next to the input).
LIBS = {
    "fuzzlib.tdsl": 'let%op lib_f x = { lib_w } * x + { lib_b; o = [ 3 ] }\n'
                    'op lib_sq t1 ~logic:"." { forward { v =: v1 * v1 } backward { g1 =+ g * v1; g1 =+ g * v1 } }\n'
                    'let%op libc = range 2\n',
    "fuzzcycle.tdsl": 'open "fuzzcycle2.tdsl"\nopen "fuzzlib.tdsl"\n',
    "fuzzcycle2.tdsl": 'open "fuzzcycle.tdsl"\n',
}


def run_one(tdslc, path, src, timeout, stats=None, cuda="emulate", rnd=None):
    """Findings for one input: list of (kind, command, output). stats counts, per stage,
    the commands that exited 0 (how deep the inputs got). cuda: "off", "emit" (the
    --backend=cuda --emit-cuda stage) or "emulate" (also the emulated CUDA run, compiled
    from that source as host C with testsuite/cuda/shim.h, its printed values compared
    with the CPU run's)."""
    names, routines = names_and_routines(src)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               LSAN_OPTIONS="suppressions=" + os.path.join(ROOT, "testsuite", "lsan.supp"))
    env.pop("TDSL_CUDA_EMULATE", None)
    found = []
    work = os.path.dirname(path)

    # A hang is judged by CPU time (RLIMIT_CPU: SIGXCPU), not wall time: the machine may
    # be loaded. The wall-clock limit only guards against a process that sleeps.
    def limit_cpu():
        resource.setrlimit(resource.RLIMIT_CPU, (int(timeout), int(timeout) + 5))

    def go(cmd, stage, extra_env=None):
        """Runs one command; returns the process, or None when it hung (recorded)."""
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=20 * timeout, env=dict(env, **(extra_env or {})),
                               cwd=work, preexec_fn=limit_cpu)
        except subprocess.TimeoutExpired:
            found.append(("hang", cmd, "no exit after %ss of wall time" % (20 * timeout)))
            return None
        if p.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            found.append(("hang", cmd, "more than %ss of CPU time" % timeout))
            return None
        out = p.stderr.decode("utf-8", "replace")
        if stats is not None and p.returncode == 0:
            stats[stage] = stats.get(stage, 0) + 1
        if p.returncode not in (0, 1, 2):
            found.append(("crash", cmd, "exit %d\n%s" % (p.returncode, out[-4000:])))
        elif SANITIZER.search(out):
            found.append(("sanitizer", cmd, out[-4000:]))
        elif p.returncode == 1 and stage not in ("--run", "cuda-run"):
            bad = [l for l in out.splitlines() if not LOCATED.match(l)]
            if bad or "error" not in out:
                found.append(("unlocated", cmd, out[-4000:]))
        return p

    p = go([tdslc, "--dump-shapes", path], "--dump-shapes")
    if p is None or p.returncode == 1:
        return found  # later stages would only repeat the front end's errors
    p = go([tdslc, "--dump-ir", path], "--dump-ir")
    if p is None:
        return found
    # anonymous dynamic dims (`?`) are named by their number in --dump-ir: `dim ?N ?`
    anon = re.findall(r"^dim (\?\d+) \?$", p.stdout.decode("utf-8", "replace"), re.M) if p.returncode == 0 else []
    # both runs (and the --emit-cuda source the emulation runs: its kernels must be of the
    # run's precision) in double precision now and then
    prec = ["--precision=double"] if rnd and rnd.random() < 0.2 else []
    args = list(prec)
    for d, v in re.findall(r"^let ([A-Za-z_][A-Za-z0-9_']*) = dim \(\) // set=(\d+)", src, re.M):
        args += ["--set", "%s=%s" % (d, v)]
    for d in anon[:6]:
        args += ["--set", "%s=%d" % (d, (rnd.randint(1, 3) if rnd else 2))]
    for rt in routines[:3]:
        args += ["--call", rt]
    for n in names[:12]:
        args += ["--print", n]
    cu = None
    if cuda != "off":
        p = go([tdslc, "--backend=cuda", "--emit-cuda", path] + prec, "--emit-cuda")
        if p is None:
            return found
        if p.returncode == 0:
            cu = p.stdout
    json = cuda == "emulate" and cu is not None
    cpu = go([tdslc, "--run", "-O1", "--check-bounds", path] + (["--json"] if json else []) + args, "--run")
    if cpu is not None and cpu.returncode == 1 and stats is not None:
        # Not a finding (a program may fail at run time by design), but the sorted messages
        # of runs that passed --dump-ir are where the third campaign found its bug.
        m = re.search(r"error: (.*)", cpu.stderr.decode("utf-8", "replace"))
        key = re.sub(r"\d+", "N", m.group(1) if m else "(no message)")[:160]
        seen = stats.setdefault("run-errors", {})
        if key not in seen:
            seen[key] = [0, src]
        seen[key][0] += 1
    if not json or cpu is None or cpu.returncode != 0 or found:
        return found
    # The emulated CUDA run: same calls, same printed tensors, same values.
    so = os.path.join(work, "input.emu.so")
    with open(os.path.join(work, "input.cu"), "wb") as f:
        f.write(cu)
    cc = subprocess.run(["cc", "-std=c11", "-O0", "-w", "-DTDSL_EMULATE", "-include",
                         os.path.join(ROOT, "testsuite", "cuda", "shim.h"), "-x", "c", os.path.join(work, "input.cu"),
                         "-shared", "-fPIC", "-o", so, "-lm"], capture_output=True, timeout=600)
    if cc.returncode:
        found.append(("cuda-cc", ["cc", os.path.join(work, "input.cu")], cc.stderr.decode("utf-8", "replace")[-4000:]))
        return found
    cmd = [tdslc, "--backend=cuda", "--run", rnd.choice(["-O0", "-O1", "-O3"]) if rnd else "-O1", "--json", path] + args
    g = go(cmd, "cuda-run", {"TDSL_CUDA_EMULATE": so})
    if g is None or found:
        return found
    if g.returncode != 0:
        found.append(("cuda-exit", cmd, "exit %d (the CPU run exited 0)\n%s" % (
            g.returncode, g.stderr.decode("utf-8", "replace")[-4000:])))
        return found
    why = compare_json(cpu.stdout.decode("utf-8", "replace"), g.stdout.decode("utf-8", "replace"))
    if why:
        found.append(("mismatch", cmd, why))
    return found


def compare_json(a, b):
    """Differences between two --json outputs (None when they agree): the same tensors,
    shapes and values, within float32 rounding of a different summation order."""
    def parse(text):
        out = []
        for line in text.splitlines():
            try:
                out.append(jsonlib.loads(line))
            except ValueError:
                pass
        return out
    ta, tb = parse(a), parse(b)
    if [(x.get("name"), x.get("shape")) for x in ta] != [(x.get("name"), x.get("shape")) for x in tb]:
        return "tensors differ:\nCPU:  %s\nCUDA: %s" % (a[:2000], b[:2000])
    for x, y in zip(ta, tb):
        va, vb = x.get("values", []), y.get("values", [])
        if len(va) != len(vb):
            return "%s: %d vs %d values" % (x.get("name"), len(va), len(vb))
        for n, (u, v) in enumerate(zip(va, vb)):
            if u is None or v is None or isinstance(u, str) or isinstance(v, str):  # NaN/inf as text or null
                if str(u) != str(v):
                    return "%s[%d]: CPU %s, CUDA %s" % (x.get("name"), n, u, v)
                continue
            if math.isnan(u) or math.isnan(v) or math.isinf(u) or math.isinf(v):  # the relative test says inf ~ 5
                if not (math.isnan(u) and math.isnan(v)) and u != v:
                    return "%s[%d]: CPU %r, CUDA %r" % (x.get("name"), n, u, v)
                continue
            if abs(u - v) > 1e-3 * max(abs(u), abs(v)) + 1e-4:
                return "%s[%d]: CPU %r, CUDA %r" % (x.get("name"), n, u, v)
    return None



def seeds_from_testsuite():
    files = []
    for pat in ("testsuite/lit/**/*.tdsl", "samples/*/*.tdsl", "testsuite/fuzz/regress/*.tdsl", "testsuite/cuda/cases/*.tdsl"):
        files += glob.glob(os.path.join(ROOT, pat), recursive=True)
    conf = os.path.join(ROOT, "..", "shared", "conformance", "cases")
    if not os.path.isdir(conf):
        conf = "/work/shared/conformance/cases"
    files += glob.glob(os.path.join(conf, "*.tdsl"))
    # the front end's libFuzzer corpus: short programs, new_*.tdsl one for each feature added
    # after the second campaign (empty tensors, captures, 3-argument specs, stacking, ...)
    files += glob.glob(os.path.join(ROOT, "testsuite/fuzz/corpus/*.tdsl"))
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
    ap.add_argument("--cuda", choices=["off", "emit", "emulate"], default="emulate",
                    help="the --emit-cuda stage; emulate: also the emulated CUDA run, compared with the CPU's")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rnd = random.Random(seed)
    tdslc = os.path.abspath(a.tdslc)
    # Absolute: each command runs in the work directory (for `open`), so a relative input
    # path did not resolve there and every command exited 2 (make check's smoke, whose
    # --out is relative, tested nothing).
    a.out = os.path.abspath(a.out)
    work = os.path.join(a.out, "work")
    fdir = os.path.join(a.out, "findings")
    os.makedirs(work, exist_ok=True)
    os.makedirs(fdir, exist_ok=True)
    for lib, text in LIBS.items():
        with open(os.path.join(work, lib), "w") as f:
            f.write(text)
    if a.cuda == "emulate":
        # --backend=cuda --run needs NVRTC (as testsuite/lit/cuda/lit.local.cfg decides)
        try:
            ldd = subprocess.run(["ldd", tdslc], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            ldd = ""
        if "libnvrtc" not in ldd:
            a.cuda = "emit"
    print("pipeline fuzzer: seed %d, %gs, %s, cuda %s" % (seed, a.time, tdslc, a.cuda), flush=True)
    pool = seeds_from_testsuite()
    inputs = [open(f, encoding="utf-8", errors="replace").read() for f in a.files]
    inputs += [open(f).read() for f in sorted(glob.glob(os.path.join(HERE, "regress", "*.tdsl")))]
    start = time.time()
    count, findings, kinds, stats = 0, 0, {}, {}
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
        for kind, cmd, out in run_one(tdslc, path, src, a.timeout, stats, a.cuda, rnd):
            findings += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            base = os.path.join(fdir, "%s-%d-%d" % (kind, seed, count))
            with open(base + ".tdsl", "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(src)
            with open(base + ".txt", "w") as f:
                f.write(" ".join(cmd) + "\n" + out)
            print("FINDING %s: %s.tdsl (%s)" % (kind, base, " ".join(cmd[1:2])), flush=True)
    with open(os.path.join(a.out, "run-errors.txt"), "w", encoding="utf-8", errors="surrogateescape") as f:
        for n, (key, (k, example)) in enumerate(sorted(stats.get("run-errors", {}).items(), key=lambda x: -x[1][0])):
            f.write("%d x %s\n" % (k, key))
            with open(os.path.join(a.out, "run-error-%d.tdsl" % n), "w", encoding="utf-8", errors="surrogateescape") as g:
                g.write(example)
    summary = ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items())) or "nothing"
    print("pipeline fuzzer: seed %d: %d inputs in %.0fs: %s found" % (seed, count, time.time() - start, summary))
    print("pipeline fuzzer: exit 0 from --dump-shapes %d, --dump-ir %d, --emit-cuda %d, --run %d, emulated cuda --run %d" % (
        stats.get("--dump-shapes", 0), stats.get("--dump-ir", 0), stats.get("--emit-cuda", 0), stats.get("--run", 0),
        stats.get("cuda-run", 0)))
    if count >= 20 and not a.files and not a.regress_only and stats.get("--dump-shapes", 0) == 0:
        print("pipeline fuzzer: no input got through --dump-shapes: the harness, not tdslc, is broken")
        return 1
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
