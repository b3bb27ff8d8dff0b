"""Op tests of PyTorch and tinygrad translated to tdsl, PyTorch (forward and autograd) as
the oracle.

Usage: torch_ops.py TDSLC WORKDIR [--filter S] [--list] [--no-check]

Each case is a tdsl expression over host-loaded parameters and the PyTorch function it
stands for. The groups and the upstream tests they come from:
  elementwise   tinygrad test/test_ops.py: test_add..test_div, test_scalar_*, test_neg,
                test_mul_naninf, test_div_naninf, test_pow*, test_sqrt, test_rsqrt,
                test_relu*, test_log*, test_exp*, test_sin, test_cos, test_abs_exact;
                PyTorch test/test_binary_ufuncs.py (division by zero, pow with integer
                exponents, maximum/minimum with NaN and ties)
  composite     tinygrad test_ops.py activations built from primitives: test_sigmoid
                (and _extreme, _alt_extreme), test_softplus, test_silu, test_gelu,
                test_leaky_relu, test_elu, test_relu6, test_hardswish, test_softsign,
                test_mish, test_lerp, test_logaddexp
  broadcast     tinygrad test_broadcasted_add(_2), test_add3; PyTorch
                test_binary_ufuncs.py test_broadcasting (ranks 0..3, size-1 dims both sides)
  compare       tinygrad _test_cmp (eq, lt, gt, ge, le with broadcasting, constants,
                special values), test_cmp_lt_backwards, test_cmp_ne_backwards, test_where
  reduce        tinygrad test_sum*, test_max, test_min, test_mean*, test_var, test_std,
                test_softmax(_other_axis), test_log_softmax, test_logsumexp; PyTorch
                test/test_reductions.py (sum/amax over chosen dims, keepdim, empty dims)
  matmul        tinygrad test_dot_1d, test_dot, test_matmul*, test_broadcastdot,
                test_multidot, test_gemm_with_zeros_shape; PyTorch test/test_linalg.py
                test_matmul_small_brute_force_* (every rank combination, broadcast batch)
  einsum        tinygrad test_einsum, test_einsum_ellipsis, test_einsum_trace; PyTorch
                test_linalg.py test_einsum (cases numpy's port does not have)
  conv          tinygrad test_conv1d, test_strided_conv1d_simple, test_conv2d*,
                test_*grouped_conv2d, test_depthwise_conv2d, test_strided_conv2d,
                test_padded_conv2d_bs1, test_dilated_conv2d; PyTorch test/test_nn.py
                (conv with stride, padding, dilation)
  pool          tinygrad test_max_pool2d*, test_avg_pool2d*; PyTorch test_nn.py pooling
  movement      tinygrad test_permute, test_transpose, test_slice/getitem with integer
                indices, torch.diagonal/diag_embed/trace
Every case runs in these variants:
  f32     single precision: values against torch float32, gradients against its autograd
  f64     --precision=double against torch float64
  check   tdslc --check -O3 on the single-precision program (optimized vs naive code),
          every 4th case (all of them with --filter), in programs of 8 cases
The gradient of a case (when differentiable) is that of sum(result * w), w fixed weights,
as tinygrad's helper_test_op does with sum(). Every case of a variant is one program (one
compile); when that fails, each case runs alone so that the failing ones are named.

Where tdsl deliberately differs from PyTorch (LANGUAGE.md section 9, tdsl(7) "Special
values"), the case says so (`differs=`) and checks tdsl's documented behaviour instead:
  - a valid convolution or pooling needs input = stride*(output-1) + dilation*(kernel-1)
    + 1 exactly (9.6); PyTorch drops the rows that do not fit. The cases use sizes that
    fit; `conv_stride_nofit` checks that tdsl refuses one that does not.
  - padded (=+) convolution is "same" padding (input = stride * output, left padding
    dilation*(kernel-1)/2); other paddings (tinygrad's padding=(2,1), asymmetric pads)
    have no tdsl spelling and are left out.
  - max accumulation gives each tied maximum the whole gradient (9.7); torch's max()
    and amax split it. `max_ties` checks tdsl's rule.
  - x **. 0.5 at -0/-inf (C's pow) and relu NaN: covered by lit/fp/torch.test.
Prints PASS/FAIL per case and variant, then ALL-OK or the number of failures (exit 1)."""
import json
import math
import os
import subprocess
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = [a for a in sys.argv[1:] if a.startswith("--")]
tdslc, work = os.path.abspath(args[0]) if os.sep in args[0] else args[0], args[1]
filt = None
for i, a in enumerate(sys.argv):
    if a == "--filter":
        filt = sys.argv[i + 1]
os.makedirs(work, exist_ok=True)
torch.set_num_threads(1)

INF, NAN = math.inf, math.nan


class Case:
    pass


CASES = []


def case(group, name, shapes, expr, fn, grad=True, vals=None, kinds=None, low=-2.0, high=2.0,
         tshapes=None, rshape=None, tol=None, differs=None, nodiff=(), num=False):
    """shapes: tdsl dims of the inputs (torch sees them reshaped to tshapes, when given);
    kinds: per input (nb, no, ni), how its axes split into batch, output and input rows
    (default: all output axes), in order, so memory order is torch's; expr: tdsl with {0},
    {1}, ... for the inputs; fn(*tensors): the torch result, whose row-major order must
    be tdsl's memory order; rshape: the tdsl result's dims (batch, output, input
    concatenated) when they are not the torch result's shape; nodiff: inputs that get no
    gradient (conditions of where)."""
    c = Case()
    c.group, c.name, c.expr, c.fn, c.grad, c.differs = group, name, expr, fn, grad, differs
    if num:  # torch's result is 0-d
        c.differs = ((differs + "; ") if differs else "") + NUMBER
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if vals is not None:
        c.ins = [np.array(v, dtype=np.float64) for v in vals]
    else:
        c.ins = [rng.uniform(low, high, size=s) for s in shapes]
    # values every precision represents exactly, so f32 and f64 see the same inputs
    c.ins = [a.astype(np.float32).astype(np.float64) for a in c.ins]
    c.kinds = kinds or [None] * len(c.ins)
    c.tshapes = tshapes or [a.shape for a in c.ins]
    c.rshape, c.tol, c.nodiff = rshape, tol, nodiff
    CASES.append(c)


T = torch
MEAN = "the stdlib's mean reduces with `=> 0` (tdsl(7) STANDARD LIBRARY): one output axis of dimension 1"
NUMBER = "a number is a tensor of one output axis of dimension 1 (the seed: 'Numbers are a special case: an array of (output) dimension 1'), so a 0-d result that meets one has that axis"

# ---------------------------------------------------------------- elementwise (tinygrad)
E = "elementwise"
case(E, "add", [(45, 68), (45, 68)], "{0} + {1}", lambda x, y: x + y)
case(E, "add_scalar", [(), ()], "{0} + {1}", lambda x, y: x + y)
case(E, "sub", [(45, 65), (45, 65)], "{0} - {1}", lambda x, y: x - y)
case(E, "sub_scalar", [(), ()], "{0} - {1}", lambda x, y: x - y)
case(E, "scalar_sub", [(45, 65)], "{0} - 2", lambda x: x - 2)
case(E, "scalar_rsub", [(45, 65)], "2 - {0}", lambda x: 2 - x)
case(E, "scalar_rsub0", [()], "2 - {0}", lambda x: 2 - x,
     rshape=(1,), num=True)
case(E, "neg", [(45, 65)], "~-{0}", lambda x: -x)
case(E, "neg_fn", [()], "neg {0}", lambda x: x.neg())
case(E, "mul", [(64, 64), (64, 64)], "{0} *. {1}", lambda x, y: x * y)
case(E, "mul_scalar", [(), ()], "{0} *. {1}", lambda x, y: x * y)
case(E, "scalar_mul", [(45, 65)], "{0} *. 2", lambda x: x * 2)
case(E, "scalar_mul_m1", [(45, 65)], "{0} *. (-1)", lambda x: x * -1)
case(E, "scalar_rmul", [(45, 65)], "255 *. {0}", lambda x: 255 * x)
case(E, "div", [(45, 65), (45, 65)], "{0} /. {1}", lambda x, y: x / y)
case(E, "div_scalar", [(), ()], "{0} /. {1}", lambda x, y: x / y)
case(E, "scalar_div", [(45, 65)], "{0} /. 255", lambda x: x / 255)
case(E, "scalar_rdiv", [(45, 65)], "2 /. {0}", lambda x: 2 / x)
case(E, "recip_div", [(45, 65)], "1 /. {0}", lambda x: 1 / x)
case(E, "mul_inf", [(45, 65)], "{0} *. 1e400", lambda x: x * INF)
case(E, "mul_minf", [(45, 65)], "{0} *. (-1e400)", lambda x: x * -INF)
case(E, "mul_nan", [(45, 65)], "{0} *. (0. /. 0.)", lambda x: x * NAN)
case(E, "div_inf", [(45, 65)], "{0} /. 1e400", lambda x: x / INF)
case(E, "div_minf", [(45, 65)], "{0} /. (-1e400)", lambda x: x / -INF)
case(E, "div_nan", [(45, 65)], "{0} /. (0. /. 0.)", lambda x: x / NAN)
case(E, "inf_div", [(45, 65)], "1e400 /. {0}", lambda x: INF / x)
case(E, "minf_div", [(45, 65)], "(-1e400) /. {0}", lambda x: -INF / x)
case(E, "nan_div", [(45, 65)], "(0. /. 0.) /. {0}", lambda x: NAN / x)
# PyTorch test_binary_ufuncs: division by zero, every sign
case(E, "div_by_zero", None, "{0} /. {1}", lambda x, y: x / y,
     vals=[[1., -1., 0., -0., INF, -INF, NAN, 2.5], [0., 0., 0., 0., -0., -0., 0., -0.]])
for p in ["0.", "1.", "2.", "3.", "-2."]:
    case(E, "pow_" + p.rstrip(".").replace("-", "m"), [(45, 65)], "{0} **. " + p,
         lambda x, p=float(p): x ** p)
case(E, "pow_scalar2", [()], "{0} **. 2.", lambda x: x ** 2.0)
case(E, "pow_scalarm2", [()], "{0} **. (-2.)", lambda x: x ** -2.0)
case(E, "pow3_neg_base", [(45, 65)], "{0} **. 3.", lambda x: x ** 3.0, low=-30, high=-27)
case(E, "pow02_neg_base", [(45, 65)], "{0} **. 0.2", lambda x: x ** 0.2, low=-30, high=-27)
case(E, "pow12_neg_base", [(45, 65)], "{0} **. 1.2", lambda x: x ** 1.2, low=-30, high=-27)
case(E, "pow11_zero", None, "{0} **. 1.1", lambda x: x ** 1.1, vals=[[0.0]])
for p in ["0.", "1.", "-1.", "8.", "5.5", "-5.5"]:
    case(E, "pow_const_" + p.rstrip(".").replace("-", "m").replace(".", "_"), [(45, 65)],
         "{0} **. " + p, lambda x, p=float(p): x ** p)
case(E, "pow_zero_03", None, "{0} **. 0.3", lambda x: x ** 0.3, vals=[[0.0]])
case(E, "pow_zero_0", None, "{0} **. 0.", lambda x: x ** 0.0, vals=[[0.0]])
case(E, "pow_zero_m03", None, "{0} **. (-0.3)", lambda x: x ** -0.3, vals=[[0.0]])
case(E, "pow_m1_at_0", None, "{0} **. (-1.)", lambda x: x ** -1.0, vals=[[-1.0, 0.0, 1.0]])
# tinygrad test_pow_const_direct: the gradient of x ** c at x in -inf, 0, 1, inf
for p in ["-1.", "0.", "0.3", "1.", "2."]:
    case(E, "pow_direct_" + p.rstrip(".").replace("-", "m").replace(".", "_"), None,
         "{0} **. " + p, lambda x, p=float(p): x ** p, vals=[[-INF, 0.0, 1.0, INF]])
# PyTorch test_binary_ufuncs test_pow: integer exponents of negative bases and of 0
case(E, "pow_int_bases", None, "{0} **. 3.", lambda x: x ** 3.0, vals=[[-3., -2., -1., -0., 0., 1., 2., 3.]])
case(E, "pow_int_bases_m3", None, "{0} **. (-3.)", lambda x: x ** -3.0, vals=[[-3., -2., -1., -0., 0., 1., 2., 3.]])
case(E, "sqrt", [(45, 65)], "sqrt {0}", lambda x: x.sqrt())
case(E, "sqrt_zero", None, "sqrt {0}", lambda x: x.sqrt(), vals=[[0.0]])
case(E, "sqrt_scalar", [()], "sqrt {0}", lambda x: x.sqrt(), low=0.1)
case(E, "rsqrt", [(45, 65)], "recip_sqrt {0}", lambda x: x.rsqrt())
case(E, "rsqrt_zero", None, "recip_sqrt {0}", lambda x: x.rsqrt(), vals=[[0.0]])
case(E, "relu", [(64, 64)], "relu {0}", lambda x: x.relu())
case(E, "relu_scalar", [()], "relu {0}", lambda x: x.relu())
case(E, "relu_exact", None, "relu {0}", lambda x: x.relu(), vals=[[-1., 0., 1.]])
case(E, "relu_maximum_exact", None, "max2 {0} 0.", lambda x: T.maximum(x, T.zeros_like(x)),
     vals=[[-1., 0., 1.]])
case(E, "abs_exact", None, "max2 {0} (neg {0})", lambda x: x.abs(), vals=[[-1., 0., 1.]])
case(E, "abs", [(45, 65)], "max2 {0} (neg {0})", lambda x: x.abs())
for fn_ in ["log", "log2", "exp", "exp2"]:
    case(E, fn_, [(45, 65)], fn_ + " {0}", lambda x, f=fn_: getattr(T, f)(x))
    case(E, fn_ + "_special", None, fn_ + " {0}", lambda x, f=fn_: getattr(T, f)(x),
         vals=[[INF, -INF, NAN]])
case(E, "exp2_log2_zero", None, "exp2 (log2 {0} *. {1})", lambda x, y: (x.log2() * y).exp2(),
     vals=[[0.0], [-0.7]], grad=False)
for fn_ in ["sin", "cos"]:
    case(E, fn_, [(45, 65)], fn_ + " {0}", lambda x, f=fn_: getattr(T, f)(x))
    case(E, fn_ + "_special", None, fn_ + " {0}", lambda x, f=fn_: getattr(T, f)(x),
         vals=[[NAN, INF, -INF, 0.0]])
    # large arguments: libm's argument reduction against torch's (tinygrad: 3e-3)
    case(E, fn_ + "_large", None, fn_ + " {0}", lambda x, f=fn_: getattr(T, f)(x),
         vals=[[1e1, 1e2, 1e3, 1e4, 1e5, 1e6, -1e1, -1e2, -1e3, -1e4, -1e5, -1e6]], tol=3e-3)
case(E, "tanh", [(45, 65)], "tanh {0}", lambda x: x.tanh())
case(E, "tanh_extreme", None, "tanh {0}", lambda x: x.tanh(), vals=[[-400., -20., -0., 0., 20., 400., INF, -INF]])
case(E, "maximum", [(45, 65), (45, 65)], "max2 {0} {1}", T.maximum)
case(E, "maximum_scalar", [(), ()], "max2 {0} {1}", T.maximum)
case(E, "maximum_const", None, "max2 {0} 3.", lambda x: T.maximum(x, T.tensor(3.0, dtype=x.dtype)),
     vals=[[1., 0., 3., -4.]])
case(E, "maximum_ties", None, "max2 {0} {1}", T.maximum, vals=[[1., 0., 3., -4.], [-1., -2., 3., 0.]])
case(E, "minimum", [(45, 65), (45, 65)], "min2 {0} {1}", T.minimum)
case(E, "minimum_ties", None, "min2 {0} {1}", T.minimum, vals=[[1., 0., 3., -4.], [-1., -2., 3., 0.]])
case(E, "maximum_nan", None, "max2 {0} {1}", T.maximum, vals=[[NAN, 1., NAN, -INF], [1., NAN, NAN, NAN]])

# ---------------------------------------------------------------- composite activations
A = "composite"
SIG = "recip (1. + exp (neg {0}))"
case(A, "sigmoid", [(45, 65)], SIG, lambda x: 1 / (1 + T.exp(-x)))
case(A, "sigmoid_extreme_hi", [(45, 65)], SIG, lambda x: 1 / (1 + T.exp(-x)), low=300, high=400)
case(A, "sigmoid_extreme_lo", [(45, 65)], SIG, lambda x: 1 / (1 + T.exp(-x)), low=-400, high=-300)
case(A, "sigmoid_alt_extreme", None, "exp {0} /. (1. + exp {0})", lambda x: x.exp() / (1 + x.exp()),
     vals=[[300.0, -300.0, 80.0, -80.0, 0.0]])
case(A, "softplus", [(45, 65)], "log (1. + exp {0})", lambda x: T.log(1 + T.exp(x)))
case(A, "softplus_beta3", [(45, 65)], "log (1. + exp ({0} *. 3.)) /. 3.",
     lambda x: T.log(1 + T.exp(x * 3)) / 3)
case(A, "silu", [(45, 65)], "{0} *. " + SIG, lambda x: x * (1 / (1 + T.exp(-x))))
case(A, "leaky_relu", [(45, 65)], "max2 {0} ({0} *. 0.01)", lambda x: F.leaky_relu(x, 0.01))
case(A, "leaky_relu_exact", None, "max2 {0} ({0} *. 0.01)", lambda x: T.maximum(x, x * 0.01),
     vals=[[-1., -0., 0., 1.]])
case(A, "elu", [(45, 65)], "where (0. < {0}) {0} ((exp {0}) - 1.)", lambda x: F.elu(x))
case(A, "elu_alpha", [(45, 65)], "where (0. < {0}) {0} (((exp {0}) - 1.) *. 0.1)",
     lambda x: F.elu(x, alpha=0.1))
case(A, "relu6", [(45, 65)], "min2 (relu {0}) 6.", lambda x: T.minimum(x.relu(), T.tensor(6.0, dtype=x.dtype)),
     low=-9, high=9)
case(A, "hardswish", [(45, 65)], "{0} *. (min2 (relu ({0} + 3.)) 6.) /. 6.", F.hardswish, low=-5, high=5)
case(A, "softsign", [(45, 65)], "{0} /. (1. + max2 {0} (neg {0}))", F.softsign)
case(A, "softsign_exact", None, "{0} /. (1. + max2 {0} (neg {0}))", F.softsign, vals=[[-1., 0., 1.]])
case(A, "gelu_tanh", [(45, 65)],
     "0.5 *. {0} *. (1. + tanh (0.7978845608028654 *. ({0} + 0.044715 *. {0} *. {0} *. {0})))",
     lambda x: F.gelu(x, approximate="tanh"))
case(A, "mish", [(45, 65)], "{0} *. tanh (log (1. + exp {0}))", lambda x: x * T.tanh(T.log(1 + T.exp(x))))
case(A, "lerp", [(45, 35), (45, 35), (45, 35)], "{0} + {2} *. ({1} - {0})", lambda x, y, z: x + z * (y - x))
case(A, "logaddexp", None, "max2 {0} {1} + log (1. + exp (neg (max2 ({0} - {1}) ({1} - {0}))))",
     T.logaddexp, vals=[[-100.0, -200., -300., 1.0, 2000., 30000.], [-1.0, 2., 3., -1.0, 2., 3.]])
case(A, "quick_gelu", [(45, 65)], "{0} *. recip (1. + exp (neg ({0} *. 1.702)))",
     lambda x: x * T.sigmoid(1.702 * x))

# ---------------------------------------------------------------- broadcasting
B = "broadcast"
case(B, "bcast_col", [(45, 65), (45, 1)], "{0} + {1}", lambda x, y: x + y)
case(B, "bcast_scalar", [(45, 65), ()], "{0} + {1}", lambda x, y: x + y)
case(B, "bcast_row", [(45, 65), (65,)], "{0} + {1}", lambda x, y: x + y)
case(B, "bcast_row_rev", [(65,), (45, 65)], "{0} - {1}", lambda x, y: x - y)
case(B, "add3", [(45, 65), (45, 65), (45, 65)], "{0} + {1} + {2}", lambda x, y, z: x + y + z)
case(B, "bcast_both_ones", [(45, 1), (1, 65)], "{0} *. {1}", lambda x, y: x * y)
case(B, "bcast_rank3_1", [(3, 4, 5), (5,)], "{0} /. {1}", lambda x, y: x / y, low=0.5)
case(B, "bcast_rank3_2", [(3, 1, 5), (4, 1)], "{0} *. {1}", lambda x, y: x * y)
case(B, "bcast_rank3_3", [(1, 4, 1), (3, 1, 5)], "{0} - {1}", lambda x, y: x - y)
case(B, "bcast_rank4", [(2, 1, 3, 1), (4, 1, 5)], "max2 {0} {1}", T.maximum)
case(B, "bcast_scalar_rank3", [(), (3, 4, 5)], "{0} *. {1}", lambda x, y: x * y)
case(B, "bcast_one_one", [(1,), (1, 1)], "{0} + {1}", lambda x, y: x + y)
case(B, "bcast_batch", [(3, 4), (4,)], "{0} + {1}", lambda x, y: x + y, kinds=[(1, 1, 0), None])
case(B, "bcast_where", [(3, 1, 5), (4, 1), (5,)], "where {0} {1} {2}",
     lambda c, a, b: T.where(c != 0, a, b), nodiff=(0,))

# ---------------------------------------------------------------- comparisons, where
C = "compare"
CMP = {  # name: (tdsl, torch); a >= b is not (a < b): NaN-free inputs, as tinygrad's
    "eq": ("{0} = {1}", lambda x, y: (x == y)),
    "lt": ("{0} < {1}", lambda x, y: (x < y)),
    "gt": ("{1} < {0}", lambda x, y: (x > y)),
    "ge": ("not ({0} < {1})", lambda x, y: (x >= y)),
    "le": ("not ({1} < {0})", lambda x, y: (x <= y)),
    "ne": ("{0} <> {1}", lambda x, y: (x != y)),
}
SPECIALS = [0.0, 1.0, -1.0, INF, -INF]
SA = [a for a in SPECIALS for _ in SPECIALS]
SB = [b for _ in SPECIALS for b in SPECIALS]
for k, (src, fn) in CMP.items():
    f = (lambda fn: lambda x, y: fn(x, y).to(x.dtype))(fn)
    case(C, "cmp_%s_vals" % k, None, src, f, grad=False, vals=[[0., 1., 2.], [2., 1., 0.]])
    case(C, "cmp_%s_same" % k, [(3, 4, 5), (3, 4, 5)], src, f, grad=False)
    case(C, "cmp_%s_bcast" % k, [(3, 4, 5), (5,)], src, f, grad=False)
    case(C, "cmp_%s_bcast_rev" % k, [(5,), (3, 4, 5)], src, f, grad=False)
    case(C, "cmp_%s_const" % k, None, src.replace("{1}", "2."),
         lambda x, fn=fn: fn(x, T.tensor(2.0, dtype=x.dtype)).to(x.dtype), grad=False, vals=[[0., 1., 2.]])
    case(C, "cmp_%s_rconst" % k, None, src.replace("{0}", "2.").replace("{1}", "{0}"),
         lambda y, fn=fn: fn(T.tensor(2.0, dtype=y.dtype), y).to(y.dtype), grad=False, vals=[[2., 1., 0.]])
    case(C, "cmp_%s_special" % k, None, src, f, grad=False, vals=[SA, SB])
case(C, "cmp_ne_nan", None, "{0} <> {1}", lambda x, y: (x != y).to(x.dtype), grad=False,
     vals=[[NAN, NAN, 1.0], [NAN, 1.0, NAN]])
case(C, "cmp_lt_backwards", [(4,)], "{0} *. ({0} < 0.)", lambda t: t * (t < 0))
case(C, "cmp_ne_backwards", None, "{0} *. ({0} <> 0.)", lambda t: t * (t != 0), vals=[[0.5, 0.0, -1.5, -0.0]])
case(C, "where_const", [(100,)], "where (0.5 < {0}) 4. 2.", lambda x: T.where(x > 0.5, 4.0, 2.0).to(x.dtype),
     grad=False)
for k, shps in enumerate([[(8,), (1,), (1,)], [(10, 10), (10,), (10,)], [(100,)] * 3, [(10, 10)] * 3]):
    case(C, "where_%d" % k, shps, "where (0.5 < {0}) {1} {2}", lambda x, a, b: T.where(x > 0.5, a, b))
case(C, "where_permute", [(5, 5)], "(where (0.5 < {0}) 4. 2.) ++ \"ij => ji\"",
     lambda x: T.where(x > 0.5, 4.0, 2.0).to(x.dtype).permute(1, 0), grad=False)
case(C, "where_nan_cond", None, "where {0} {1} {2}", lambda c, a, b: T.where(c != 0, a, b),
     vals=[[NAN, 0.0, -0.0, 1.0], [1., 2., 3., 4.], [5., 6., 7., 8.]], nodiff=(0,))

# ---------------------------------------------------------------- reductions
R = "reduce"
case(R, "sum_simple", None, "{0} ++ \"i => \"", lambda x: x.sum(), vals=[[1., 1.]])
case(R, "sum_full", [(16384,)], "{0} ++ \"i => \"", lambda x: x.sum(), tol=1e-4)
case(R, "sum_relu", [(3, 4, 5)], "relu ((relu {0}) ++ \"ijk => \")", lambda x: x.relu().sum().relu())
case(R, "sum_tiny", [(4, 2, 2)], "{0} ++ \"ijk => j\"", lambda x: x.sum(axis=(0, 2)))
case(R, "sum_all", [(45, 3)], "{0} ++ \"ij => \"", lambda x: x.sum())
for axes, spec in [((3,), "ijkl => ijk"), ((1, 3), "ijkl => ik"), ((0, 2), "ijkl => jl"),
                   ((1, 2), "ijkl => il"), ((1,), "ijkl => ikl")]:
    case(R, "sum_axis_" + "".join(map(str, axes)), [(3, 4, 5, 6)], "{0} ++ \"%s\"" % spec,
         lambda x, a=axes: x.sum(axis=a))
case(R, "sum_keepdim", [(3, 4, 5, 6)], "{0} ++ \"ijkl => i0kl\"", lambda x: x.sum(axis=1, keepdim=True))
case(R, "sum_scalar", [()], "{0} ++ \" => \"", lambda x: x.sum())
case(R, "sum_ellipsis_last", [(3, 4, 5, 6)], "{0} ++ \"...l => ...\"", lambda x: x.sum(-1))
case(R, "sum_kinds", [(3, 4, 5)], "{0} ++ \"...|...->... => ...|0\"", lambda x: x.sum(axis=(1, 2), keepdim=False),
     kinds=[(1, 1, 1)], rshape=(3, 1))
case(R, "sum_zero_0", [(4, 0)], "{0} ++ \"ij => j\"", lambda x: x.sum(axis=(0,)))
case(R, "sum_zero_1", [(4, 0)], "{0} ++ \"ij => i\"", lambda x: x.sum(axis=(1,)))
case(R, "sum_zero_01", [(4, 0)], "{0} ++ \"ij => \"", lambda x: x.sum(axis=(0, 1)))
case(R, "sum_twice_01", [(4, 4, 4)], "({0} ++ \"ijk => k\") ++ \"k => \"", lambda x: x.sum((0, 1)).sum())
case(R, "sum_twice_02", [(4, 4, 4)], "({0} ++ \"ijk => j\") ++ \"j => \"", lambda x: x.sum((0, 2)).sum())
case(R, "sum_pad_collapse", [(16, 16)], "{0} ++ \"ij => i\"", lambda x: x.sum(axis=1))
case(R, "max_all", [(45, 3)], "{0} @^^ \"ij => \"", lambda x: x.max())
case(R, "max_all_half", [(45, 3)], "({0} @^^ \"ij => \") *. 0.5", lambda x: x.max().mul(0.5),
     rshape=(1,), num=True)
case(R, "max_axis1", [(3, 4, 5, 6)], "{0} @^^ \"ijkl => ikl\"", lambda x: x.max(axis=1)[0])
case(R, "max_scalar", [()], "{0} @^^ \" => \"", lambda x: x.max())
case(R, "amax_axes", [(3, 4, 5, 6)], "{0} @^^ \"ijkl => jl\"", lambda x: x.amax(dim=(0, 2)))
case(R, "max_keepdim", [(3, 4, 5)], "{0} @^^ \"ijk => i0k\"", lambda x: x.amax(dim=1, keepdim=True))
case(R, "max_neg", [(4, 5)], "{0} @^^ \"ij => i\"", lambda x: x.amax(dim=1), low=-1e30, high=-1e29)
case(R, "max_inf", None, "{0} @^^ \"ij => i\"", lambda x: x.amax(dim=1),
     vals=[[[-INF, -5.0], [-INF, 1.0], [INF, 1.0]]])
case(R, "max_nan_fwd", None, "{0} @^^ \"ij => i\"", lambda x: x.amax(dim=1), grad=False,
     vals=[[[NAN, 1.0], [1.0, NAN], [2.0, 1.0]]])
# torch's max() splits a tied maximum's gradient (0.5 / 3 each); tdsl gives each the
# whole gradient (LANGUAGE.md 9.7): the oracle is that rule
case(R, "max_ties", None, "({0} @^^ \"ij => \") *. 0.5",
     lambda x: _tie_max(x) * 0.5, vals=[[[1.0, 1.0, 0.0, 1.0]]],
     differs="max accumulation: each tied maximum gets the whole gradient (9.7); torch splits it",
     rshape=(1,), num=True)
case(R, "min_all", [(3, 3)], "neg ((neg {0}) @^^ \"ij => \")", lambda x: x.min())
case(R, "min_all_big", [(45, 3)], "neg ((neg {0}) @^^ \"ij => \")", lambda x: x.min())
case(R, "min_axis", [(3, 4, 5)], "neg ((neg {0}) @^^ \"ijk => ik\")", lambda x: x.amin(dim=1))
case(R, "mean", [(3, 4, 5, 6)], "mean {0}", lambda x: x.mean(),
     rshape=(1,), differs=MEAN)
case(R, "mean_scalar", [()], "mean {0}", lambda x: x.mean(),
     rshape=(1,), differs=MEAN)
case(R, "mean_axis", [(3, 4, 5, 6)], "({0} ++ \"ijkl => il\") /. 20.", lambda x: x.mean(axis=(1, 2)))
case(R, "mean_zero_axis", [(1, 0, 3, 0, 5)], "({0} ++ \"abcde => ace\") /. 0.", lambda x: x.mean(axis=(1, 3)))
VAR = "((({0} - (({0} ++ \"ijk => \") /. {n}.)) **. 2.) ++ \"ijk => \") /. {d}."
case(R, "var", [(15, 25, 35)], VAR.format("{0}", n=15 * 25 * 35, d=15 * 25 * 35 - 1), lambda x: x.var(), tol=1e-4,
     rshape=(1,), num=True)
case(R, "var_corr0", [(15, 25, 35)], VAR.format("{0}", n=15 * 25 * 35, d=15 * 25 * 35), lambda x: x.var(unbiased=False),
     tol=1e-4,
     rshape=(1,), num=True)
case(R, "var_axis0", [(15, 25, 35)], "((({0} - (({0} ++ \"ijk => jk\") /. 15.)) **. 2.) ++ \"ijk => jk\") /. 14.",
     lambda x: x.var(0))
case(R, "std_axis12", [(15, 25, 35)],
     "sqrt (((({0} - (({0} ++ \"i, j, k => i, 0, 0\") /. 875.)) **. 2.) ++ \"ijk => i\") /. 874.)", lambda x: x.std([1, 2]))
case(R, "softmax_dim1", [(45, 65)], "softmax ~spec:\"ij => i0\" {0}", lambda x: T.softmax(x, 1))
case(R, "softmax_batch", [(45, 65)], "softmax {0}", lambda x: T.softmax(x, 1), kinds=[(1, 1, 0)])
case(R, "softmax_1d", [(45,)], "softmax {0}", lambda x: T.softmax(x, 0))
for d, spec in enumerate(["ijk => 0jk", "ijk => i0k", "ijk => ij0"]):
    case(R, "softmax_axis%d" % d, [(10, 10, 10)], "softmax ~spec:\"%s\" {0}" % spec, lambda x, d=d: T.softmax(x, d))
    case(R, "log_softmax_axis%d" % d, [(10, 10, 10)], "log_softmax ~spec:\"%s\" {0}" % spec,
         lambda x, d=d: T.log_softmax(x, d))
case(R, "log_softmax_dim1", [(45, 65)], "log_softmax ~spec:\"ij => i0\" {0}", lambda x: T.log_softmax(x, 1))
LSE = "(({0} @^^ \"{s}\") + log ((exp ({0} - ({0} @^^ \"{k}\"))) ++ \"{s}\"))"
case(R, "logsumexp_0", [(45, 65)], LSE.format("{0}", s="ij => j", k="ij => 0j"), lambda x: T.logsumexp(x, 0))
case(R, "logsumexp_1", [(45, 65)], LSE.format("{0}", s="ij => i", k="ij => i0"), lambda x: T.logsumexp(x, 1))
case(R, "logsumexp_2", [(6, 6, 6, 6)], LSE.format("{0}", s="ijkl => ijl", k="ijkl => ij0l"), lambda x: T.logsumexp(x, 2))
case(R, "prod_as_exp_log", None, "exp ((log {0}) ++ \"i => \")", lambda x: x.prod(), vals=[[1.0, 2.0, 3.0]])


def _tie_max(x):
    """max() with tdsl's tie rule: every position equal to the maximum gets the gradient."""
    m = x.max().detach()
    mask = (x == m).to(x.dtype)
    return m + ((x - x.detach()) * mask).sum()


# ---------------------------------------------------------------- matmul, all ranks
M = "matmul"
MM = [  # (name, a shape, b shape, tdsl spec) as torch.matmul
    ("dot_1d", (65,), (65,), "k; k => "),
    ("vec_mat", (65,), (65, 45), "k; kj => j"),
    ("mat_vec", (45, 65), (65,), "ik; k => i"),
    ("bmat_vec", (8, 45, 65), (65,), "bik; k => bi"),
    ("vec_bmat", (65,), (8, 65, 45), "k; bkj => bj"),
    ("gemm", (64, 64), (64, 64), "ik; kj => ij"),
    ("gemm_9", (9, 9), (9, 9), "ik; kj => ij"),
    ("dot", (45, 65), (65, 100), "ik; kj => ij"),
    ("dot_batched", (8, 45, 65), (8, 65, 100), "bik; bkj => bij"),
    ("matmul_simple", (4,), (4, 4), "k; kj => j"),
    ("matmul_batched", (3,), (1, 3, 3, 5), "k; abkj => abj"),
    ("matmul_batched_vector", (4, 3), (1, 3, 3, 5), "ik; abkj => abij"),
    ("broadcastdot", (10, 45, 65), (65, 45), "bik; kj => bij"),
    ("multidot", (10, 45, 65), (10, 65, 45), "bik; bkj => bij"),
    ("multidot4", (3, 3, 45, 65), (3, 3, 65, 45), "abik; abkj => abij"),
    ("bcast_batch_ones", (2, 1, 4, 3), (1, 5, 3, 6), "...ik; ...kj => ...ij"),
    ("bcast_batch_rank", (2, 3, 4, 3), (3, 6), "...ik; ...kj => ...ij"),
    ("bcast_batch_rank_rev", (4, 3), (2, 3, 3, 6), "...ik; ...kj => ...ij"),
    ("bcast_batch_one_side", (1, 4, 3), (5, 3, 6), "...ik; ...kj => ...ij"),
    ("zeros_8x0", (8, 8), (8, 0), "ik; kj => ij"),
    ("zeros_0x8", (0, 8), (8, 8), "ik; kj => ij"),
    ("zeros_0x0", (0, 8), (8, 0), "ik; kj => ij"),
    ("zeros_k0", (8, 0), (0, 8), "ik; kj => ij"),
    ("zeros_00", (0, 0), (0, 0), "ik; kj => ij"),
    ("zeros_vec", (0,), (0, 8), "k; kj => j"),
    ("zeros_dot", (0,), (0,), "k; k => "),
]
for name, sa, sb, spec in MM:
    case(M, name, [sa, sb], "{0} +* \"%s\" {1}" % spec, T.matmul, tol=1e-4 if max(sa + sb) > 20 else None)
case(M, "gemm_range", None, "{0} +* \"ik; kj => ij\" {1}", T.matmul,
     vals=[np.arange(0, 64).reshape(8, 8), np.arange(64, 128).reshape(8, 8)])
case(M, "gemm_eye", None, "{0} +* \"ik; kj => ij\" {1}", T.matmul, vals=[np.eye(8), np.eye(8)])
# the compose operator: a's input axes against b's output axes (nn.Linear's layout)
case(M, "compose", [(45, 65), (65, 100)], "{0} * {1}", T.matmul, kinds=[(0, 1, 1), (0, 1, 1)], tol=1e-4)
case(M, "compose_vec", [(45, 65), (65,)], "{0} * {1}", T.matmul, kinds=[(0, 1, 1), None])
case(M, "compose_batched", [(45, 65), (8, 65)], "{0} * {1}", lambda w, x: x @ w.t(),
     kinds=[(0, 1, 1), (1, 1, 0)], tol=1e-4)
case(M, "mulacc_zero_strides", None, "({0} +* \"ij; j => ij\" {1}) ++ \"ij => \"",
     lambda a, b: (a * b).sum(), vals=[np.ones((2, 4)), np.ones(4)])

# ---------------------------------------------------------------- einsum (tinygrad, PyTorch)
N = "einsum"
EIN = [  # (name, torch spec, shapes, tdsl spec or None for the same letters)
    ("ein_scalar", "->", [()], " => "),
    ("ein_transpose", "ij->ji", [(10, 10)], "ij => ji"),
    ("ein_implicit_t", "ji", [(10, 10)], "ji => ij"),
    ("ein_jki", "jki", [(4, 6, 8)], "jki => ijk"),
    ("ein_dog", "dog", [(4, 6, 8)], "dog => dgo"),
    ("ein_implicit_mm", "ij,jk", [(4, 6), (6, 8)], "ij; jk => ik"),
    ("ein_sum_all", "ijk->", [(4, 6, 8)], "ijk => "),
    ("ein_colsum", "ij->j", [(5, 5)], "ij => j"),
    ("ein_rowsum", "ij->i", [(5, 5)], "ij => i"),
    ("ein_mv", "ik,k->i", [(3, 4), (4,)], "ik; k => i"),
    ("ein_mm", "ik,kj->ij", [(3, 4), (4, 5)], "ik; kj => ij"),
    ("ein_mm_letters", "jk,ki->ji", [(3, 4), (4, 5)], "jk; ki => ji"),
    ("ein_dot_keep", "i,i->i", [(5,), (5,)], "i; i => i"),
    ("ein_hadamard", "ij,ij->ij", [(5, 6), (5, 6)], "ij; ij => ij"),
    ("ein_outer", "i,j->ij", [(5,), (5,)], "i; j => ij"),
    ("ein_bmm", "ijk,ikl->ijl", [(2, 4, 6), (2, 6, 8)], "ijk; ikl => ijl"),
    ("ein_bmm_perm", "ijk,ikl->jil", [(2, 4, 5), (2, 5, 7)], "ijk; ikl => jil"),
    ("ein_bmm_perm_in", "jik,ikl->jil", [(4, 2, 5), (2, 5, 7)], "jik; ikl => jil"),
    ("ein_bmm_a", "ijk,ika->ija", [(2, 4, 6), (2, 6, 8)], "ijk; ika => ija"),
    ("ein_contract", "pqrs,tuqvr->pstuv", [(3, 5, 8, 10), (11, 7, 5, 13, 8)], "pqrs; tuqvr => pstuv"),
    ("ein_contract_perm", "prsq,tquvr->pstuv", [(3, 8, 10, 5), (11, 5, 7, 13, 8)], "prsq; tquvr => pstuv"),
    ("ein_contract_z", "zqrs,tuqvr->zstuv", [(3, 5, 8, 10), (11, 7, 5, 13, 8)], "zqrs; tuqvr => zstuv"),
    ("ein_ell_ij", "...id,...jd->...ij", [(3, 8, 9), (3, 8, 9)], "...id; ...jd => ...ij"),
    ("ein_ell_implicit", "...id,...jd", [(3, 8, 9), (3, 8, 9)], "...id; ...jd => ...ij"),
    ("ein_ell_mid", "i...j,ji...->...", [(2, 3, 4, 5), (5, 2, 4)], "i...j; ji... => ..."),
    ("ein_ell_tail", "ij...,ij...->ij", [(4, 7, 5, 6, 3), (4, 7, 5, 6, 3)], "ij...; ij... => ij"),
    ("ein_inner", "i,i", [(5,), (5,)], "i; i => "),
    ("ein_diag", "ii->i", [(4, 4)], "ii => i"),
    ("ein_trace", "ii->", [(4, 4)], "ii => "),
    ("ein_bdiag", "...ii->...i", [(3, 5, 5)], "...ii => ...i"),
    ("ein_btrace", "...ii->...", [(3, 5, 5)], "...ii => ..."),
    ("ein_abc_cd", "abc,cd->abd", [(2, 3, 4), (4, 5)], "abc; cd => abd"),
    ("ein_first_ell", "i...->...", [(3, 4, 5)], "i... => ..."),
]
for name, ts, shapes, spec in EIN:
    op = "{0} ++ \"%s\"" % spec if len(shapes) == 1 else "{0} +* \"%s\" {1}" % spec
    case(N, name, shapes, op, lambda *a, s=ts: T.einsum(s, *a), tol=1e-4)
# three operands: a chain of two einsums
case(N, "ein_bilinear", [(2, 3), (5, 3, 7), (2, 7)], "({0} +* \"ik; jkl => ijl\" {1}) +* \"ijl; il => ij\" {2}",
     lambda a, b, c: T.einsum("ik,jkl,il->ij", a, b, c))
case(N, "ein_bilinear_bn", [(2, 3), (4, 3, 5), (2, 5)], "({0} +* \"bn; anm => bam\" {1}) +* \"bam; bm => ba\" {2}",
     lambda a, b, c: T.einsum("bn,anm,bm->ba", a, b, c))

# ---------------------------------------------------------------- convolution
V = "conv"


def conv_spec(nd, stride=None, dil=None, pad=False, groups=False):
    """A torch-layout convolution: x (n, [g,] ci, spatial...), w ([g,] co, ci, kernel...)
    => (n, [g,] co, out...); multi-character mode."""
    stride, dil = stride or [1] * nd, dil or [1] * nd
    sp = ["%s%s%s%s" % ("%d*" % s if s != 1 else "", "o%d" % d, "=+" if pad else "<+",
                        "%d*k%d" % (dl, d) if dl != 1 else "k%d" % d)
          for d, (s, dl) in enumerate(zip(stride, dil))]
    g = "g, " if groups else ""
    x = "n, " + g + "ci, " + ", ".join(sp)
    w = g + "co, ci, " + ", ".join("k%d" % d for d in range(nd))
    r = "n, " + g + "co, " + ", ".join("o%d" % d for d in range(nd))
    return "%s; %s => %s" % (x, w, r)


def conv_case(name, xs, ws, nd, stride=1, dilation=1, padding=0, groups=1, **kw):
    """torch's conv{nd}d(x, w, ...) with x (n, c, ...), w (co, c/groups, ...): tdsl sees x
    as (n, groups, c/groups, ...) and w as (groups, co/groups, c/groups, ...), the same
    memory."""
    st = [stride] * nd if isinstance(stride, int) else list(stride)
    dl = [dilation] * nd if isinstance(dilation, int) else list(dilation)
    spec = conv_spec(nd, st, dl, pad=padding != 0, groups=groups != 1)
    tfn = {1: F.conv1d, 2: F.conv2d}[nd]
    if groups != 1:
        tx = (xs[0], groups, xs[1] // groups) + tuple(xs[2:])
        tw = (groups, ws[0] // groups) + tuple(ws[1:])
        case(V, name, [tx, tw], "{0} +* \"%s\" {1}" % spec,
             lambda x, w: tfn(x, w, stride=st, dilation=dl, padding=padding, groups=groups),
             tshapes=[xs, ws], rshape="grouped", **kw)
    else:
        case(V, name, [xs, ws], "{0} +* \"%s\" {1}" % spec,
             lambda x, w: tfn(x, w, stride=st, dilation=dl, padding=padding), **kw)


for bs in [1, 8]:
    for cin in [1, 3]:
        for H in [1, 2, 5]:
            conv_case("conv1d_b%d_c%d_h%d" % (bs, cin, H), (bs, cin, 11), (6, cin, H), 1)
conv_case("conv1d_groups3", (8, 3, 11), (6, 1, 5), 1, groups=3)
conv_case("conv1d_stride2", (2, 1, 5), (1, 1, 3), 1, stride=2)
for H in [2, 3]:
    for W in [1, 3, 5]:
        conv_case("conv2d_h%d_w%d" % (H, W), (1, 3, 5, 7), (6, 3, H, W), 2)
conv_case("conv2d_groups3", (1, 3, 5, 7), (6, 1, 3, 3), 2, groups=3)
conv_case("conv2d_bs4_cin3", (4, 3, 5, 7), (2, 3, 3, 3), 2)
conv_case("conv2d_bs4_cin1", (4, 1, 5, 7), (6, 1, 2, 5), 2)
conv_case("simple_grouped_conv2d", (1, 4, 1, 1), (2, 2, 1, 1), 2, groups=2)
conv_case("medium_grouped_conv2d", (1, 4, 1, 1), (4, 2, 1, 1), 2, groups=2)
conv_case("depthwise_conv2d", (1, 32, 32, 32), (32, 1, 1, 1), 2, groups=32)
conv_case("grouped_conv2d", (4, 15, 5, 5), (35, 3, 3, 3), 2, groups=5, tol=1e-4)
conv_case("fancy_conv2d", (2, 3, 11, 28), (3, 1, 3, 3), 2, groups=3)
conv_case("strided_conv2d_simple", (2, 1, 5, 1), (1, 1, 3, 1), 2, stride=2)
# tinygrad's (4,3,11,28) with stride 2: 28 does not fit a stride-2 valid convolution
# exactly (tdsl refuses it, 9.6): 27 columns
conv_case("strided_conv2d", (4, 3, 11, 27), (4, 3, 3, 3), 2, stride=2, tol=1e-4)
conv_case("strided_conv2d_21", (4, 3, 11, 28), (4, 3, 3, 3), 2, stride=(2, 1), tol=1e-4)
conv_case("padded_conv2d_bs1", (1, 3, 11, 28), (4, 3, 3, 3), 2, padding=1, tol=1e-4)
conv_case("padded_conv2d_bs4", (4, 3, 11, 28), (4, 3, 3, 3), 2, padding=1, tol=1e-4)
conv_case("padded_conv2d_5x5", (2, 2, 9, 10), (3, 2, 5, 5), 2, padding=2, tol=1e-4)
conv_case("padded_strided_conv2d", (2, 3, 12, 28), (4, 3, 3, 3), 2, stride=2, padding=1, tol=1e-4)
conv_case("padded_dilated_conv2d", (2, 3, 11, 12), (4, 3, 3, 3), 2, dilation=2, padding=2, tol=1e-4)
conv_case("padded_conv1d_same", (6, 2, 11), (6, 2, 5), 1, padding=2)
conv_case("dilated_conv2d", (4, 3, 11, 28), (4, 3, 3, 3), 2, dilation=2, tol=1e-4)
conv_case("dilated_conv2d_21", (4, 3, 11, 28), (4, 3, 3, 3), 2, dilation=(2, 1), tol=1e-4)
# PyTorch test_nn: a convolution through the compose operator, with a bias (nn.Conv1d)
case(V, "conv1d_bias", [(2, 3, 9), (4, 3, 3), (4, 1)],
     "({0} +* \"n, ci, o<+k; co, ci, k => n, co, o\" {1}) + {2}",
     lambda x, w, b: F.conv1d(x, w, b.reshape(-1)), tshapes=[(2, 3, 9), (4, 3, 3), (4,)])

# ---------------------------------------------------------------- pooling
P = "pool"


def pool_spec(k, stride, dil=(1, 1), pad=False):
    sp = []
    for d in range(2):
        s = "%d*" % stride[d] if stride[d] != 1 else ""
        kk = "%d*w%d" % (dil[d], d) if dil[d] != 1 else "w%d" % d
        sp.append("%so%d%s%s" % (s, d, "=+" if pad else "<+", kk))
    return "n, c, %s; w0, w1 => n, c, o0, o1" % ", ".join(sp)


def maxpool_case(name, xs, k, stride=None, padding=0, dilation=1, **kw):
    k = (k, k) if isinstance(k, int) else k
    stride = stride or k
    stride = (stride, stride) if isinstance(stride, int) else stride
    dil = (dilation, dilation) if isinstance(dilation, int) else dilation
    spec = pool_spec(k, stride, dil, pad=padding != 0)
    case(P, name, [xs, k], "{0} @^+ \"%s\" {1}" % spec,
         lambda x, w: F.max_pool2d(x, kernel_size=k, stride=stride, padding=padding, dilation=dil) + w.sum() * 0,
         nodiff=(1,), **kw)


def _zero_window(c):
    c.ins[1] = np.zeros(c.ins[1].shape)


maxpool_case("max_pool2d_simple", (1, 1, 2, 2), (2, 2))
for k in [(2, 2), (3, 3), (3, 2), (5, 5), (5, 1)]:
    # tinygrad's (32,2,11,28): sizes that each window fits exactly (9.6)
    hw = {(2, 2): (10, 28), (3, 3): (12, 27), (3, 2): (12, 28), (5, 5): (10, 25), (5, 1): (10, 28)}[k]
    maxpool_case("max_pool2d_k%d%d" % k, (8, 2) + hw, k)
maxpool_case("max_pool2d_pad1_k3", (4, 2, 12, 27), (3, 3), padding=1)
maxpool_case("max_pool2d_pad1_k3_s1", (4, 2, 11, 28), (3, 3), stride=1, padding=1)
maxpool_case("max_pool2d_unit_stride", (3, 2, 17, 14), (5, 5), stride=1)
maxpool_case("max_pool2d_smaller_stride", (3, 2, 17, 15), (5, 5), stride=2)
maxpool_case("max_pool2d_smaller_stride_32", (3, 2, 17, 14), (5, 5), stride=(3, 3))
maxpool_case("max_pool2d_bigger_stride", (4, 2, 11, 26), (2, 2), stride=3)
maxpool_case("max_pool2d_bigger_stride_23", (4, 2, 10, 26), (2, 2), stride=(2, 3))
maxpool_case("max_pool2d_dilation", (3, 2, 17, 14), (5, 5), stride=1, dilation=2)
maxpool_case("max_pool2d_dilation_23", (3, 2, 17, 14), (5, 5), stride=1, dilation=(2, 3))
maxpool_case("max_pool2d_stride_dilation", (4, 2, 10, 28), (2, 2), stride=2, dilation=3)
maxpool_case("global_max_pool", (1, 1, 12, 13), (12, 13))
for c in CASES:
    if c.group == P:
        _zero_window(c)


def avgpool_case(name, xs, k, stride=None, padding=0, count_include_pad=True, **kw):
    stride = stride or k
    spec = pool_spec(k, (stride, stride) if isinstance(stride, int) else stride, pad=padding != 0)
    if count_include_pad:
        expr = "({0} +* \"%s\" {1}) /. %d." % (spec, k[0] * k[1])
    else:  # divide by the window's cells inside the input
        expr = "({0} +* \"%s\" {1}) /. ((ones_like {0}) +* \"%s\" {1})" % (spec, spec)
    case(P, name, [xs, k], expr,
         lambda x, w: F.avg_pool2d(x, kernel_size=k, stride=stride, padding=padding,
                                   count_include_pad=count_include_pad) + w.sum() * 0, **kw)
    CASES[-1].ins[1] = np.ones(k)
    CASES[-1].nodiff = (1,)


avgpool_case("avg_pool2d", (8, 2, 10, 28), (2, 2))
avgpool_case("avg_pool2d_k3", (8, 2, 12, 27), (3, 3))
avgpool_case("avg_pool2d_pad", (4, 2, 12, 27), (3, 3), padding=1)
avgpool_case("avg_pool2d_pad_nocount", (4, 2, 12, 27), (3, 3), padding=1, count_include_pad=False)
avgpool_case("avg_pool2d_s1_pad_nocount", (4, 2, 11, 28), (3, 3), stride=1, padding=1, count_include_pad=False)
avgpool_case("global_avg_pool", (2, 3, 12, 13), (12, 13))

# ---------------------------------------------------------------- movement
G = "movement"
case(G, "permute", [(3, 4, 5, 6)], "{0} ++ \"abcd => dacb\"", lambda x: x.permute(3, 0, 2, 1))
case(G, "permute_id", [(3, 4, 5, 6)], "{0} ++ \"abcd => abcd\"", lambda x: x.permute(0, 1, 2, 3))
case(G, "transpose_12", [(3, 3, 3)], "{0} ++ \"abc => acb\"", lambda x: x.transpose(1, 2))
case(G, "transpose_02", [(3, 3, 3)], "{0} ++ \"abc => cba\"", lambda x: x.transpose(0, 2))
case(G, "transpose_kinds", [(3, 4, 5)], "{0} ++ \"b|i->o => o|b->i\"", lambda x: x.permute(1, 2, 0),
     kinds=[(1, 1, 1)])
case(G, "getitem_first", [(3, 4)], "{0} ++ \"1j => j\"", lambda x: x[1])
case(G, "getitem_col", [(3, 4)], "{0} ++ \"i2 => i\"", lambda x: x[:, 2])
case(G, "getitem_last", [(3, 4, 5)], "{0} ++ \"ij4 => ij\"", lambda x: x[..., -1])
case(G, "getitem_two", [(3, 4, 5)], "{0} ++ \"2j1 => j\"", lambda x: x[2, :, 1])
case(G, "getitem_batch", [(3, 4)], "{0} ++ \"2|j => j\"", lambda x: x[2], kinds=[(1, 1, 0)])
case(G, "diagonal", [(4, 4)], "{0} ++ \"ii => i\"", lambda x: T.diagonal(x))
case(G, "diagonal_b", [(2, 3, 3)], "{0} ++ \"bii => bi\"", lambda x: T.diagonal(x, dim1=1, dim2=2))
case(G, "diag_embed", [(2, 3)], "{0} ++ \"bi => bii\"", lambda x: T.diag_embed(x))
case(G, "trace", [(5, 5)], "{0} ++ \"ii => \"", lambda x: T.trace(x))
case(G, "unsqueeze_expand", [(4,)], "{0} ++ \"i => 0i\"", lambda x: x.unsqueeze(0))
case(G, "squeeze", [(4, 1)], "{0} ++ \"i0 => i\"", lambda x: x.squeeze(1))
case(G, "expand_add", [(4, 1), (4, 3)], "{0} + ({1} *. 0.)", lambda x, z: x.expand(4, 3) + z * 0)


# ---------------------------------------------------------------- refused (exit 1)
# tinygrad's helper_test_exception cases, and the shapes tdsl refuses where torch floors:
# (name, tdsl program, a piece of the expected diagnostic)
ERRORS = [
    ("conv_stride_nofit",  # tinygrad test_strided_conv2d's 28 columns at stride 2 (9.6)
     'let%op x = { x; o = [ 4; 3; 11; 28 ] }\nlet%op w = { w; o = [ 4; 3; 3; 3 ] }\n'
     'let%op r = x +* "n, ci, 2*o0<+k0, 2*o1<+k1; co, ci, k0, k1 => n, co, o0, o1" w\n',
     "valid convolution"),
    ("max_pool2d_nofit",  # tinygrad test_max_pool2d_simple's (1,1,2,3) with a 2x2 window
     'let%op x = { x; o = [ 1; 1; 2; 3 ] }\nlet%op w = { w = 0.; o = [ 2; 2 ] }\n'
     'let%op r = x @^+ "n, c, 2*o0<+w0, 2*o1<+w1; w0, w1 => n, c, o0, o1" w\n',
     "valid convolution"),
    ("conv_kernel_too_big",  # tinygrad test_conv2d_errors: dilation 3 on 6x7 with 3x3
     'let%op x = { x; o = [ 1; 1; 6; 7 ] }\nlet%op w = { w; o = [ 6; 1; 3; 3 ] }\n'
     'let%op r = x +* "n, ci, o0<+3*k0, o1<+3*k1; co, ci, k0, k1 => n, co, o0, o1" w\n',
     "valid convolution"),
    ("dot_mismatch",  # tinygrad test_dot: (2, 4) @ (3, 3)
     'let%op a = { a; o = [ 2; 4 ] }\nlet%op b = { b; o = [ 3; 3 ] }\nlet%op r = a +* "ik; kj => ij" b\n',
     "dimension mismatch"),
    ("einsum_shape_check",  # tinygrad test_einsum_shape_check
     'let%op a = { a; o = [ 3; 8; 10; 5 ] }\nlet%op b = { b; o = [ 11; 5; 13; 16; 8 ] }\n'
     'let%op r = a +* "pqrs; tuqvr => pstuv" b\n',
     "dimension mismatch"),
    ("where_shape_mismatch",  # PyTorch test_binary_ufuncs: shapes that do not broadcast
     'let%op c = { c; o = [ 3; 4 ] }\nlet%op a = { a; o = [ 5 ] }\nlet%op r = c + a\n',
     "dimension mismatch"),
]


def run_errors():
    for name, src, want in ERRORS:
        if filt is not None and filt not in name:
            continue
        d = os.path.join(work, "errors")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, name + ".tdsl")
        with open(p, "w") as f:
            f.write(src)
        rc, out, err = run([tdslc, "--dump-shapes", p])
        ok = rc == 1 and want in err and ":3:" in err
        results.append(ok)
        print("%s: refused/%s%s" % ("PASS" if ok else "FAIL", name,
                                   "" if ok else " exit %d: %s" % (rc, err.strip()[:300])))


# ---------------------------------------------------------------- running
def sel():
    return [c for c in CASES if filt is None or filt in c.name]


def tname(c, k):
    return "%s_x%d" % (c.name, k)


def dims_decl(shape, kinds):
    nb, no, ni = kinds if kinds is not None else (0, len(shape), 0)
    lst = lambda ds: "[ " + "; ".join(str(d) for d in ds) + " ]"
    return "b = %s; i = %s; o = %s" % (lst(shape[:nb]), lst(shape[nb + no:]), lst(shape[nb:nb + no]))


def fwd_lines(c):
    L = ["let%%op %s = { %s; %s }" % (tname(c, k), tname(c, k), dims_decl(a.shape, kd))
         for k, (a, kd) in enumerate(zip(c.ins, c.kinds))]
    L.append("let%%op %s_r = %s" % (c.name, c.expr.format(*[tname(c, k) for k in range(len(c.ins))])))
    return L


def run(cmd, cwd=None):
    try:
        pr = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd)
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"
    return pr.returncode, pr.stdout, pr.stderr


def shapes_of(cases, dirn):
    """{case: tdsl result (batch, output, input) dims}, or None and why."""
    os.makedirs(dirn, exist_ok=True)
    src = os.path.join(dirn, "shapes.tdsl")
    with open(src, "w") as f:
        f.write("\n".join(l for c in cases for l in fwd_lines(c)) + "\n")
    rc, out, err = run([tdslc, "--dump-shapes", "--json", src])
    if rc != 0:
        return None, err.strip()[:600]
    got = {}
    for line in out.splitlines():
        o = json.loads(line)
        got[o["name"]] = (o["batch"], o["output"], o["input"])
    return {c.name: got.get(c.name + "_r") for c in cases}, None


def program(cases, shp):
    """Forward lines, a weight per differentiable result, loss and step routines, and a
    routine running the forward of the others."""
    L, fwd, total = [], [], None
    for c in cases:
        L += fwd_lines(c)
        if c.grad:
            b, o, i = shp[c.name]
            L.append("let%%op %s_w = { %s_w; %s }" % (c.name, c.name, dims_decl(b + o + i, (len(b), len(o), len(i)))))
            L.append("let%%op %s_loss = (%s_r *. %s_w) ++ \"...|...->... => \"" % (c.name, c.name, c.name))
            # one loss for all: the parameters are disjoint, so each case's gradients are
            # those of its own loss; one routine keeps --check's comparisons few
            L.append("let%%op total_%s = %s" % (c.name, c.name + "_loss" if total is None else
                                                "%s + %s_loss" % (total, c.name)))
            total = "total_" + c.name
        else:
            fwd.append(c.name + "_r.forward")
    if total:
        L.append("let%%cd step = grad_update %s" % total)
    if fwd:
        L.append("let%%cd fwd_all = %s" % "; ".join(fwd))
    return "\n".join(L) + "\n"


def weights(c, shp):
    b, o, i = shp
    rng = np.random.RandomState(zlib.crc32((c.name + "w").encode()))
    return rng.randint(1, 9, size=tuple(b + o + i)) / 4.0


def write_inputs(cases, shp, dirn, dt):
    args = []
    for c in cases:
        arrs = [(tname(c, k), a) for k, a in enumerate(c.ins)]
        if c.grad:
            arrs.append((c.name + "_w", weights(c, shp[c.name])))
        for nm, a in arrs:
            p = os.path.join(dirn, nm + ".npy")
            np.save(p, np.ascontiguousarray(a, dtype=dt))
            args += ["--load", "%s=%s" % (nm, p)]
    return args


def run_variant(cases, shp, variant, dirn):
    """{tensor: float64 array}, or None and why."""
    os.makedirs(dirn, exist_ok=True)
    src = os.path.join(dirn, "m.tdsl")
    with open(src, "w") as f:
        f.write(program(cases, shp))
    dbl = variant == "f64"
    loads = write_inputs(cases, shp, dirn, np.float64 if dbl else np.float32)
    if variant == "check":
        rc, out, err = run([tdslc, "--check", "-O3", src] + loads)
        return (True, None) if rc == 0 else (None, "exit %d: %s" % (rc, (out + err).strip()[-800:]))
    cmd = [tdslc, "--run", src, "--json"] + loads + (["--precision=double"] if dbl else [])
    if any(c.grad for c in cases):
        cmd += ["--call", "step"]
    if any(not c.grad for c in cases):
        cmd += ["--call", "fwd_all"]
    for c in cases:
        cmd += ["--print", c.name + "_r"]
        if c.grad:
            cmd += [a for k in range(len(c.ins)) if k not in c.nodiff for a in ("--print", "%s.grad" % tname(c, k))]
    rc, out, err = run(cmd)
    if rc != 0:
        return None, "exit %d: %s" % (rc, err.strip()[:800])
    got = {}
    for line in out.splitlines():
        o = json.loads(line)
        got[o["name"]] = np.array([float(v) for v in o["values"]], dtype=np.float64)
    return got, None


def oracle(c, shp, dt):
    """torch's result and gradients (flattened), in dtype dt."""
    ts = [torch.tensor(a.reshape(s), dtype=dt, requires_grad=c.grad and k not in c.nodiff)
          for k, (a, s) in enumerate(zip(c.ins, c.tshapes))]
    out = c.fn(*ts)
    want = out.detach().double().numpy().reshape(-1)
    grads = []
    if c.grad:
        w = torch.tensor(weights(c, shp).reshape(out.shape), dtype=dt)
        (out * w).sum().backward()
        grads = [(k, (t.grad if t.grad is not None else torch.zeros_like(t)).double().numpy().reshape(-1))
                 for k, t in enumerate(ts) if k not in c.nodiff]
    return tuple(out.shape), want, grads


def close(got, want, tol):
    """NaN where torch has NaN, the same infinities, finite values within tol relative
    to the tensor's largest finite magnitude (at least 1)."""
    if got.shape != want.shape:
        return False, "size %d, torch %d" % (got.size, want.size)
    gn, wn = np.isnan(got), np.isnan(want)
    if (gn != wn).any():
        i = int(np.argmax(gn != wn))
        return False, "cell %d: %r, torch %r" % (i, got[i], want[i])
    fin = np.isfinite(want)
    if (np.isinf(got) != np.isinf(want)).any() or (got[~fin & ~wn] != want[~fin & ~wn]).any():
        i = int(np.argmax((np.isinf(got) != np.isinf(want)) | ((got != want) & ~fin & ~wn)))
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


results = []


def report(c, variant, ok, msg):
    results.append(ok)
    tag = " (differs: %s)" % c.differs if c.differs and ok else ""
    print("%s: %s/%s [%s]%s%s" % ("PASS" if ok else "FAIL", c.group, c.name, variant,
                                  "" if ok else " " + msg, tag))
    sys.stdout.flush()


def check_case(c, shp, got, variant):
    dt = torch.float64 if variant == "f64" else torch.float32
    tol = {"f64": 1e-10}.get(variant, c.tol or 2e-5)
    tol = max(tol, c.tol or 0)
    tshape, want, grads = oracle(c, shp, dt)
    rdims = tuple(shp[0] + shp[1] + shp[2])
    exp = c.rshape if c.rshape not in (None, "grouped") else tshape
    if c.rshape == "grouped":  # (n, g, co/g, ...) is torch's (n, co, ...)
        exp = rdims if rdims[:1] + (rdims[1] * rdims[2],) + rdims[3:] == tshape else tshape
    if rdims != tuple(exp):
        return False, "shape %s, torch %s" % (rdims, tuple(exp))
    ok, msg = close(got[c.name + "_r"], want, tol)
    if not ok:
        return False, "value " + msg
    for k, g in grads:
        v = got.get("%s.grad" % tname(c, k))
        if v is None:
            return False, "no gradient of input %d" % k
        ok, msg = close(v, g, tol * 10 if variant == "f32" else tol)
        if not ok:
            return False, "gradient of input %d: %s" % (k, msg)
    return True, ""


def main():
    import time
    t0 = time.time()
    cases = sel()
    if "--list" in flags:
        for c in cases:
            print("(* %s/%s *)\n%s" % (c.group, c.name, "\n".join(fwd_lines(c))))
        return 0
    shp, err = shapes_of(cases, os.path.join(work, "shapes"))
    if shp is None:  # isolate the cases inference refuses
        shp, good = {}, []
        for c in cases:
            s, e = shapes_of([c], os.path.join(work, "shapes", c.name))
            if s is None:
                for v in ("f32", "f64", "check"):
                    report(c, v, False, "--dump-shapes: " + e)
            else:
                shp.update(s)
                good.append(c)
        cases = good
    for variant in ("f32", "f64"):
        got, err = run_variant(cases, shp, variant, os.path.join(work, variant))
        print("time: %s ran at %.1f s" % (variant, time.time() - t0), file=sys.stderr)
        for c in cases:
            g, e = got, err
            if g is None:
                g, e = run_variant([c], shp, variant, os.path.join(work, variant, c.name))
            if g is None:
                report(c, variant, False, e)
            else:
                ok, msg = check_case(c, shp[c.name], g, variant)
                report(c, variant, ok, msg)
    if "--no-check" not in flags:
        # --check runs every exported routine (each tensor's forward and backprop too)
        # and compares every tensor after each: quadratic in the program. Programs of 8
        # cases, every 4th case (all groups), keep it to seconds.
        sub = cases if filt is not None else cases[::4]
        for k in range(0, len(sub), 8):
            chunk = sub[k:k + 8]
            ok, err = run_variant(chunk, shp, "check", os.path.join(work, "check", str(k)))
            for c in chunk:
                o1, e1 = ok, err
                if ok is None:
                    o1, e1 = run_variant([c], shp, "check", os.path.join(work, "check", c.name))
                report(c, "check", o1 is not None, e1 or "")
        print("time: check ran at %.1f s" % (time.time() - t0), file=sys.stderr)
    run_errors()
    nfail = results.count(False)
    groups = {}
    for c in cases:
        groups[c.group] = groups.get(c.group, 0) + 1
    print("cases per group: " + ", ".join("%s %d" % kv for kv in groups.items()))
    print("%d checks, %d failed" % (len(results), nfail))
    print("ALL-OK" if nfail == 0 else "FAILURES")
    return 1 if nfail else 0


sys.exit(main())
