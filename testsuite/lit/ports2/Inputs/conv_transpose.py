"""Transposed convolutions, fold/unfold and overlapping scatters: einsums with affine
axes in the result, translated from tinygrad's test/test_ops.py (test_simple_conv_transpose2d,
test_grouped_conv_transpose2d, test_dilated_conv_transpose2d, test_strided_conv_transpose2d,
test_padded_conv_transpose2d, test_conv_transpose1d) and PyTorch's test/test_nn.py
(F.fold / F.unfold, conv_transpose1d/2d with output_padding); PyTorch as the oracle
(harness.py: forward and autograd, float32 and float64, tdslc --check).

Usage: conv_transpose.py TDSLC WORKDIR [--filter S] [--list] [--no-check]

A transposed convolution y = conv_transpose2d(x, w, stride s, dilation d), x: N,Ci,H,W and
w: Ci,Co,kh,kw (torch's layout), is the einsum
  x +* "n, ci, h, w; ci, co, kh, kw => n, co, s*h<+d*kh, s*w<+d*kw" w
whose result axes are valid (<+) affine axes: each input cell is written to s*h + d*kh,
overlapping windows sum (LANGUAGE.md section 7: the affine axis on the result side).
Where tdsl deliberately differs, the case checks tdsl's rule:
  - torch's padding p crops p cells on both sides; tdsl's padded result axis (=+) has
    size stride*input and left offset dilation*(kernel-1)/2, which is torch's padding
    dilation*(kernel-1)/2 with output_padding stride-1 (for an even dilation*(kernel-1));
    the padded cases use that, other croppings have no tdsl spelling.
  - max accumulation into a result position no window reaches leaves max's neutral
    element -inf (tdsl(7) Empty tensors: the accumulator's neutral element), where
    torch's scatter_reduce(include_self=False) leaves the initial value: the max
    scatters use strides that reach every position."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Suite  # noqa: E402

S = Suite("", check_every=2)
TG = "tinygrad test/test_ops.py"
TN = "PyTorch test/test_nn.py"


def ct2d(name, src, xs, ws, stride=(1, 1), dil=(1, 1), groups=1, padded=False, bias=False, **kw):
    s0, s1 = stride
    d0, d1 = dil
    conv = "=+" if padded else "<+"
    ax = lambda s, o, d, k: "%s%s%s%s" % ("%d*" % s if s != 1 else "", o, conv, ("%d*" % d if d != 1 else "") + k)
    if groups == 1:
        spec = "n, ci, h, w; ci, co, kh, kw => n, co, %s, %s" % (ax(s0, "h", d0, "kh"), ax(s1, "w", d1, "kw"))
        shapes = [xs, ws]
    else:
        # grouped: x as N,G,Ci/G,H,W; w as G,Ci/G,Co/G,kh,kw (torch's w is Ci,Co/G,kh,kw)
        spec = "n, g, ci, h, w; g, ci, co, kh, kw => n, g, co, %s, %s" % (ax(s0, "h", d0, "kh"), ax(s1, "w", d1, "kw"))
        shapes = [(xs[0], groups, xs[1] // groups) + xs[2:], (groups, ws[0] // groups) + ws[1:]]
    expr = "$0 +* \"%s\" $1" % spec
    if bias:
        expr = "(%s) + $2" % expr
        shapes.append((ws[1] * (groups if groups > 1 else 1), 1, 1))

    def fn(x, w, b=None):
        if groups > 1:
            x = x.reshape((xs[0], xs[1]) + xs[2:])
            w = w.reshape((ws[0],) + ws[1:])
        if not padded:
            return F.conv_transpose2d(x, w, b.reshape(-1) if b is not None else None, stride=stride, dilation=dil,
                                      groups=groups)
        p = (d0 * (ws[2] - 1) // 2, d1 * (ws[3] - 1) // 2)
        return F.conv_transpose2d(x, w, None, stride=stride, dilation=dil, groups=groups, padding=p,
                                  output_padding=(s0 - 1, s1 - 1))

    rshape = None
    if groups > 1:  # tdsl's result is N,G,Co/G,H,W: torch's N,Co,H,W in the same order
        n, _, hh, ww = fn(*[torch.zeros(s) for s in shapes[:2]]).shape
        rshape = (n, groups, ws[1], hh, ww)
    S.case("conv_transpose", name, src, shapes, expr, fn, rshape=rshape, tol=1e-4, **kw)


# tinygrad's shapes, smaller where the cases only repeat (9x9 -> 5x6)
ct2d("simple", TG + " test_simple_conv_transpose2d", (2, 4, 5, 6), (4, 4, 3, 3))
ct2d("bias", TG + " test_bias_conv_transpose2d", (2, 4, 5, 6), (4, 4, 3, 3), bias=True)
ct2d("grouped", TG + " test_grouped_conv_transpose2d (groups=2)", (2, 4, 5, 6), (4, 2, 3, 3), groups=2)
for k, dil in enumerate([(1, 2), (2, 1), (2, 2)]):
    ct2d("dilated_%d" % k, TG + " test_dilated_conv_transpose2d dilation=%s" % (dil,), (2, 4, 5, 6), (4, 4, 3, 3), dil=dil)
for k, st in enumerate([(2, 1), (1, 2), (2, 2), (3, 2)]):
    ct2d("strided_%d" % k, TG + " test_strided_conv_transpose2d stride=%s" % (st,), (2, 4, 4, 5), (4, 4, 3, 3), stride=st)
# stride above the kernel: gaps between the windows (cells no input reaches: 0)
ct2d("strided_gaps", TG + " test_strided_conv_transpose2d (stride 4 > kernel 3)", (1, 2, 3, 3), (2, 3, 3, 3),
     stride=(4, 4))
ct2d("stride_dilation", TN + " conv_transpose2d stride 2, dilation 2", (1, 3, 4, 4), (3, 2, 2, 3),
     stride=(2, 2), dil=(2, 2))
ct2d("kernel1", TN + " conv_transpose2d 1x1 kernel, stride 2", (2, 3, 4, 4), (3, 5, 1, 1), stride=(2, 2))
for k, (st, dil) in enumerate([((1, 1), (1, 1)), ((2, 2), (1, 1)), ((2, 3), (1, 1)), ((1, 1), (2, 2))]):
    ct2d("padded_%d" % k, TG + " test_padded_conv_transpose2d / test_output_padded_conv_transpose2d "
         "(padding d*(k-1)/2, output_padding s-1)", (2, 4, 5, 6), (4, 4, 3, 3), stride=st, dil=dil, padded=True,
         differs="torch's padding is cropping on both sides; tdsl's =+ result axis is that crop with "
         "output_padding stride-1 (the module's header)")

# conv_transpose1d (tinygrad test_conv_transpose1d; PyTorch test_nn conv_transpose1d)
S.case("conv_transpose", "conv_transpose1d", TG + " test_conv_transpose1d", [(2, 4, 9), (4, 4, 3)],
       '$0 +* "n, ci, l; ci, co, k => n, co, l<+k" $1', lambda x, w: F.conv_transpose1d(x, w), tol=1e-4)
for st in (2, 3):
    S.case("conv_transpose", "conv_transpose1d_s%d" % st, TG + " test_conv_transpose1d (stride %d)" % st,
           [(2, 4, 9), (4, 4, 3)], '$0 +* "n, ci, l; ci, co, k => n, co, %d*l<+k" $1' % st,
           lambda x, w, st=st: F.conv_transpose1d(x, w, stride=st), tol=1e-4)
# the batch and channel axes in other rows: batch n, input ci, output the rest
S.case("conv_transpose", "conv_transpose1d_rows", TN + " conv_transpose1d (batch|input->output rows)",
       [(2, 9, 4), (4, 4, 3)], '$0 +* "n|ci->l; ci, co, k => n|co, 2*l<+k" $1',
       lambda x, w: F.conv_transpose1d(x.transpose(1, 2), w, stride=2), kinds=[(1, 1, 1), None],
       tol=1e-4)
# the transposed convolution's gradient with respect to x is a convolution: x.grad
# against torch's autograd of conv_transpose (above) and the forward conv (here)
S.case("conv_transpose", "conv_of_transpose", TN + " conv2d(conv_transpose2d(x)) round trip (stride 2)",
       [(1, 2, 4, 4), (2, 3, 3, 3), (2, 3, 3, 3)],
       '($0 +* "n, ci, h, w; ci, co, kh, kw => n, co, 2*h<+kh, 2*w<+kw" $1) '
       '+* "n, ci, 2*h<+kh, 2*w<+kw; co, ci, kh, kw => n, co, h, w" $2',
       lambda x, w, v: F.conv2d(F.conv_transpose2d(x, w, stride=2), v, stride=2), tol=1e-4)

# F.fold (col2im): patches summed into their windows (overlapping); F.unfold (im2col)
for k, (st, dil) in enumerate([(1, 1), (2, 1), (1, 2), (3, 1)]):
    N, C, kh, kw, oh, ow = 2, 3, 2, 3, 4, 3
    H, W = st * (oh - 1) + dil * (kh - 1) + 1, st * (ow - 1) + dil * (kw - 1) + 1
    S.case("fold", "fold_%d" % k, TN + " F.fold (stride %d, dilation %d)" % (st, dil), [(N, C, kh, kw, oh, ow)],
           '$0 ++ "n, c, kh, kw, oh, ow => n, c, %d*oh<+%d*kh, %d*ow<+%d*kw"' % (st, dil, st, dil),
           lambda x, st=st, dil=dil, H=H, W=W, N=N, C=C, kh=kh, kw=kw: F.fold(
               x.reshape(N, C * kh * kw, -1), (H, W), (kh, kw), dilation=dil, stride=st), tol=1e-4,
           rshape=(N, C, H, W))
    S.case("fold", "unfold_%d" % k, TN + " F.unfold (stride %d, dilation %d)" % (st, dil), [(N, C, H, W)],
           '$0 ++ "n, c, %d*oh<+%d*$nkh, %d*ow<+%d*$nkw => n, c, $nkh, $nkw, oh, ow" [ "$nkh"; "$nkw" ]'
           % (st, dil, st, dil),
           lambda x, st=st, dil=dil, N=N, C=C, kh=kh, kw=kw, oh=oh, ow=ow: F.unfold(
               x, (kh, kw), dilation=dil, stride=st).reshape(N, C, kh, kw, oh, ow), tol=1e-4,
           extra=["let _ = set_dim $nkh %d" % kh, "let _ = set_dim $nkw %d" % kw])


# max accumulation into overlapping windows (@^^ with an affine result axis): every
# position's maximum over the cells that reach it; each maximum gets the gradient
def max_scatter(x, st, k):
    n, l = x.shape
    out = st * (l - 1) + k
    idx = torch.tensor([st * i + j for i in range(l) for j in range(k)])
    src = x[:, torch.tensor([i for i in range(l) for j in range(k)])]
    init = torch.full((n, out), -float("inf"), dtype=x.dtype)
    return init.scatter_reduce(1, idx.expand(n, -1), src, "amax", include_self=False)


for st, k in [(1, 3), (2, 3), (2, 2)]:
    S.case("max_scatter", "max_scatter_s%d_k%d" % (st, k), TN + " (max unpooling: overlapping windows, max)",
           [(3, 6)], '$0 @^^ "c, o => c, %d*o<+$nk" [ "$nk" ]' % st, lambda x, st=st, k=k: max_scatter(x, st, k),
           extra=["let _ = set_dim $nk %d" % k])

# refused: a transposed convolution's target of a size no window fits
S.error("convt_target_nofit", TN + " (conv_transpose into a target whose size no kernel fits)",
        'let%op x = { x; o = [ 4 ] }\nlet%cd f = { y; o = [ 5 ] } =:+ x ~logic:"w => 2*w<+k"\n', "convolution", 2)

sys.exit(S.main())
