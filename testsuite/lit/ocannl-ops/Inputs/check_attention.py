"""numpy oracle for attention_test.tdsl: reads tdslc --run --json lines (the input seq, the
mask, the four projection weights and the output, in memory order batch, output, input),
recomputes OCANNL's multi_head_attention (scores over d scaled by 1/sqrt d_k, masked to
-1e9, softmax over t, weighted sum of v, output projection) plus the residual, and prints
ATTENTION-OK or the largest difference."""
import sys

import numpy as np

import printed

t = printed.arrays(sys.stdin)
if "seq" in t:
    x = t["seq"]                        # b s m
    wq, wk, wv = t["seq.w_q"], t["seq.w_k"], t["seq.w_v"]   # h d m
    wo = t["seq.w_o"]                   # m h e
    mask = t["mask"]                    # s t
    q = np.einsum("hdm,bsm->bshd", wq, x)
    k = np.einsum("hdm,bsm->bshd", wk, x)
    v = np.einsum("hem,bsm->bshe", wv, x)
    scores = np.einsum("bshd,bthd->bsht", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[None, :, None, :] != 0, scores, -1e9)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    att = np.einsum("bsht,bthe->bshe", w, v)
    out = x + np.einsum("mhe,bshe->bsm", wo, att)
    err = np.abs(out - t["output"]).max()
    print("ATTENTION-OK" if err < 1e-4 else "ATTENTION-BAD max error %g" % err)

# Cross-attention (no mask) plus the residual: queries from cx (b s m), keys and values
# from ckv (b t m).
if "cross" in t:
    cx, ckv = t["cx"], t["ckv"]
    q = np.einsum("hdm,bsm->bshd", t["cx.w_q"], cx)
    k = np.einsum("hdm,btm->bthd", t["cx.w_k"], ckv)
    v = np.einsum("hem,btm->bthe", t["cx.w_v"], ckv)
    s = np.einsum("bshd,bthd->bsht", q, k) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = cx + np.einsum("mhe,bshe->bsm", t["cx.w_o"], np.einsum("bsht,bthe->bshe", w, v))
    err = np.abs(out - t["cross"]).max()
    print("CROSS-OK" if err < 1e-4 else "CROSS-BAD max error %g" % err)
