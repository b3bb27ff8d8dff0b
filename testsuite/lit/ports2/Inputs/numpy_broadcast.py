"""numpy's broadcasting tests (numpy/lib/tests/test_stride_tricks.py:
test_broadcast_shapes_succeeds / _raises, test_broadcast_to_succeeds / _raises,
test_broadcast_shape) translated to tdsl, PyTorch as the oracle (harness.py: forward and
autograd, float32 and float64, tdslc --check).

Usage: numpy_broadcast.py TDSLC WORKDIR [--filter S] [--list] [--no-check]

broadcast_shapes(*shapes) is the shape of a pointwise sum: the case adds one input of
each shape (`$0 + $1 + ...`, also `*.`) and checks the values and every input's
gradient (a broadcast input's gradient sums over the axes it was broadcast along,
empty axes included: tdsl(7) Empty tensors). broadcast_to(x, shape) is an assignment into
a declared tensor of that shape: `{ t; o = [ shape ] } =: x` in %cd, whose target's
shape is fixed (tdsl(7): the left-hand side's shape binds); the shapes numpy refuses are
refused with a located dimension mismatch.
Where tdsl deliberately differs, the case checks tdsl's rule:
  - a number is a tensor of one output axis of dimension 1 (the seed), so
    broadcast_shapes' scalar 2 is written as a 0-d input, not as the literal."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Suite  # noqa: E402

S = Suite("", check_every=2)
SRC = "numpy/lib/tests/test_stride_tricks.py"

SUCCEEDS = [
    [[()], ()], [[(7,)], (7,)], [[(1, 2), (2,)], (1, 2)], [[(1, 1)], (1, 1)], [[(1, 1), (3, 4)], (3, 4)],
    [[(6, 7), (5, 6, 1), (7,), (5, 1, 7)], (5, 6, 7)], [[(5, 6, 1)], (5, 6, 1)], [[(1, 3), (3, 1)], (3, 3)],
    [[(1, 0), (0, 0)], (0, 0)], [[(0, 1), (0, 0)], (0, 0)], [[(1, 0), (0, 1)], (0, 0)], [[(1, 1), (0, 0)], (0, 0)],
    [[(1, 1), (1, 0)], (1, 0)], [[(1, 1), (0, 1)], (0, 1)], [[(), (0,)], (0,)], [[(0,), (0, 0)], (0, 0)],
    [[(0,), (0, 1)], (0, 0)], [[(1,), (0, 0)], (0, 0)], [[(), (0, 0)], (0, 0)], [[(1, 1), (0,)], (1, 0)],
    [[(1,), (0, 1)], (0, 1)], [[(1,), (1, 0)], (1, 0)], [[(), (1, 0)], (1, 0)], [[(), (0, 1)], (0, 1)],
    [[(1,), (3,)], (3,)], [[(), (3, 2)], (3, 2)],
]
for k, (shapes, target) in enumerate(SUCCEEDS):
    n = len(shapes)
    for op, tf, tag in (("+", lambda a, b: a + b, "add"), ("*.", lambda a, b: a * b, "mul")):
        if n == 1 and tag == "mul":
            continue
        expr = " %s " % op
        expr = expr.join("$%d" % i for i in range(n)) if n > 1 else "$0 + $0"

        def fn(*a, tf=tf, n=n):
            r = a[0]
            for x in a[1:]:
                r = tf(r, x)
            return r if n > 1 else r + r
        S.case("broadcast_shapes", "shapes_%d_%s" % (k, tag), SRC + " test_broadcast_shapes_succeeds %s -> %s"
               % (shapes, target), shapes, expr, fn, rshape=target)
# 32 and 100 operands of (1, 2) (test_broadcast_shapes_succeeds, gh-5862 in test_broadcast_shape:
# 32 of (2,) and a scalar): a long chain of sums
S.case("broadcast_shapes", "shapes_32", SRC + " test_broadcast_shapes_succeeds ([(1, 2)] * 32)", [(1, 2)] * 32,
       " + ".join("$%d" % i for i in range(10)) + " + " + " + ".join("$%d" % i for i in range(10)) + " + "
       + " + ".join("$%d" % i for i in range(10)) + " + $0 + $1",
       lambda *a: sum(a[:10]) * 3 + a[0] + a[1])
S.case("broadcast_shapes", "shape_gh5862", SRC + " test_broadcast_shape (32 of (2,) and a scalar)",
       [(2,), ()], " + ".join(["$0"] * 32) + " + $1", lambda a, b: a * 32 + b)

# test_broadcast_to_succeeds: %cd assignment into a declared tensor of the target shape
TO = [((), (0,)), ((), (1,)), ((), (3,)), ((1,), (1,)), ((1,), (2,)), ((1,), (1, 2, 3)), ((3,), (3,)),
      ((3,), (1, 3)), ((3,), (2, 3)), ((0,), (0,)), ((1,), (0,)), ((1, 2), (0, 2)), ((2, 1), (2, 0))]
for k, (shape, target) in enumerate(TO):
    decl = "[ %s ]" % "; ".join(str(d) for d in target)
    S.case("broadcast_to", "to_%d" % k, SRC + " test_broadcast_to_succeeds %s -> %s" % (shape, target), [shape],
           "{ $r; o = %s } =: $0" % decl, lambda x, t=target: x.expand(t).clone(), cd=True)

# refused: test_broadcast_shapes_raises and test_broadcast_to_raises
def decl(name, s):
    return "let%%op %s = { %s; o = [ %s ] }\n" % (name, name, "; ".join(str(d) for d in s))


RAISES = [[(3,), (4,)], [(2, 3), (2,)], [(3,), (3,), (4,)], [(1, 3, 4), (2, 3, 3)], [(1, 2), (3, 1), (3, 2), (10, 5)]]
for k, shapes in enumerate(RAISES):
    names = ["a%d" % i for i in range(len(shapes))]
    prog = "".join(decl(n, s) for n, s in zip(names, shapes)) + "let%op r = " + " + ".join(names) + "\n"
    S.error("shapes_raises_%d" % k, SRC + " test_broadcast_shapes_raises %s" % shapes, prog, "dimension mismatch",
            len(shapes) + 1)
TO_RAISES = [((3,), (2,)), ((3,), (1,)), ((3,), (4,)), ((1, 2), (2, 1)), ((1, 1), (1,)), ((2, 2), (3,))]
for k, (shape, target) in enumerate(TO_RAISES):
    prog = decl("x", shape) + "let%%cd f = { t; o = [ %s ] } =: x\n" % "; ".join(str(d) for d in target)
    S.error("to_raises_%d" % k, SRC + " test_broadcast_to_raises %s -> %s" % (shape, target), prog, "mismatch", 2)

sys.exit(S.main())
