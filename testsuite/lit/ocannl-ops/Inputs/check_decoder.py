"""numpy oracle for decoder_only_test.tdsl: reads tdslc --run --json lines (input, mask,
every parameter of the two blocks, both block outputs), recomputes each decoder block
(x1 = ln1 (x + mha x); ln2 (x1 + w_out relu (w x1 + b))) from the printed parameters and
prints DECODER-OK or the largest difference."""
import sys

import numpy as np

import printed

t = printed.arrays(sys.stdin)


def mha(x, p, mask):
    q = np.einsum("hdm,bsm->bshd", t[p + ".w_q"], x)
    k = np.einsum("hdm,bsm->bshd", t[p + ".w_k"], x)
    v = np.einsum("hem,bsm->bshe", t[p + ".w_v"], x)
    s = np.einsum("bshd,bthd->bsht", q, k) / np.sqrt(q.shape[-1])
    s = np.where(mask[None, :, None, :] != 0, s, -1e9)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return np.einsum("mhe,bshe->bsm", t[p + ".w_o"], np.einsum("bsht,bthe->bshe", w, v))


def ln(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return t[g] * (x - mu) / np.sqrt(var + 1e-5) + t[b]


def block(x, p, sfx1, sfx2, ffn):
    x1 = ln(x + mha(x, p, t["mask"]), "ln_gain" + sfx1, "ln_bias" + sfx1)
    h = np.maximum(np.einsum("fm,bsm->bsf", t["ffn.w" + ffn], x1) + t["ffn.b" + ffn], 0)
    return ln(x1 + np.einsum("mf,bsf->bsm", t[p + ".w_out"], h), "ln_gain" + sfx2, "ln_bias" + sfx2)


l1 = block(t["input"], "input", "", "_2", "")
l2 = block(t["layer1"], "layer1", "_3", "_4", "_2")
err = max(np.abs(l1 - t["layer1"]).max(), np.abs(l2 - t["output"]).max())
print("DECODER-OK" if err < 1e-4 else "DECODER-BAD max error %g" % err)
