"""An MLP over a dynamic batch (testsuite/check/Inputs/dyn_mlp.tdsl) trained at batch 5,
then at an empty batch (batch = 0), then at batch 3, against PyTorch (float64) at each
step: the loss, every gradient and the parameters after the SGD step. On the empty
batch torch gives loss 0 and zero gradients, so the parameters stay; the batch tensors
have 0 elements (numpy shape (0, 20)). Each model given is checked the same way.
usage: zero_mlp.py ROOT NAME=MODEL.so...  (TDSL_CUDA_EMULATE for a cuda model)"""
import os
import sys

import numpy as np
import torch

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "python"))
os.environ.setdefault("TDSL_LIBRARY", os.path.join(root, "build", "libtdslrt.so"))
import tdsl  # noqa: E402

PARAMS = ("w1", "b1", "w2", "b2")
LR = 0.01


def torch_step(params, x):
    """loss = sum(y^2) / 1000 with y = b2 + w2 relu(b1 + w1 x); gradients, then SGD."""
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    xt = torch.tensor(x, dtype=torch.float64)
    h = torch.relu(t["b1"] + xt @ t["w1"].T)
    y = t["b2"] + h @ t["w2"].T
    loss = (y * y).sum() / 1000.0
    loss.backward()
    grads = {k: t[k].grad.numpy() for k in PARAMS}
    return loss.item(), grads, {k: params[k] - LR * grads[k] for k in PARAMS}


def check(name, so):
    bad = []
    with tdsl.load(so) as m:
        m.init(7)
        params = {k: np.array(m[k], np.float64) for k in PARAMS}
        rng = np.random.default_rng(0)
        for batch in (5, 0, 3, 0):
            x = rng.uniform(-1, 1, (batch, 20))
            m["x"] = x  # sets batch (to 0 from an array of shape (0, 20))
            if m.batch != batch or m["x"].shape != (batch, 20) or m["y"].shape != (batch, 36):
                bad.append("batch %d: dims %r, x %r" % (batch, m.batch, m["x"].shape))
            m.call("step")
            loss, grads, after = torch_step(params, x)
            tol = dict(rtol=1e-4, atol=1e-6)
            if not np.allclose(float(m["loss"]), loss, **tol):
                bad.append("batch %d: loss %r, torch %r" % (batch, float(m["loss"]), loss))
            for k in PARAMS:
                if not np.allclose(m[k + ".grad"], grads[k], **tol):
                    bad.append("batch %d: %s.grad off by %g" % (batch, k, np.abs(m[k + ".grad"] - grads[k]).max()))
                if not np.allclose(m[k], after[k], **tol):
                    bad.append("batch %d: %s off by %g" % (batch, k, np.abs(m[k] - after[k]).max()))
            if batch == 0 and not all(np.array_equal(m[k], params[k]) for k in PARAMS):
                bad.append("batch 0: an SGD step over an empty batch moved a parameter")
            params = {k: np.array(m[k], np.float64) for k in PARAMS}
    print("%s: %s" % (name, "; ".join(bad) if bad else "ok"))


for arg in sys.argv[2:]:
    name, so = arg.split("=", 1)
    check(name, so)
