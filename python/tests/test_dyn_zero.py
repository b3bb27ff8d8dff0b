"""A dynamic dimension set to 0 (an empty batch, tdsl(7) Dynamic dimensions): numpy
arrays of shape (0, k) in and out, a training step whose values and gradients match
PyTorch's on the empty batch (a sum over it 0, its gradients 0, max -inf), the switch
0 -> 5 -> 0, get_dim telling unset (None) from 0, and checkpoints that keep the 0 (a
torch-written safetensors of an empty batch too), on 1 and 2 threads."""
import copy

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import tdsl

SRC = """
let n = dim ()
let%op x = { x; b = [ n ]; o = [ 3 ] }
let%op h = relu (({ w; o = [ 4 ] } * x) + { b1; o = [ 4 ] })
let%op loss = (h *. h) ++ "...|... => 0"
let%op mx = h @^^ "b|o => o"
let%cd step = grad_update loss
let%cd fwd = mx.forward
"""


def oracle(m, xv):
    """loss, the gradients of w and b1, and mx by torch (float64) at the model's w, b1."""
    w = torch.tensor(np.array(m["w"], np.float64), requires_grad=True)
    b1 = torch.tensor(np.array(m["b1"], np.float64), requires_grad=True)
    x = torch.tensor(np.asarray(xv, np.float64))
    h = torch.relu(x @ w.T + b1)
    loss = (h * h).sum()
    loss.backward()
    # torch's max refuses an empty axis; numpy's with initial=-inf is max accumulation
    mx = np.max(h.detach().numpy(), axis=0, initial=-np.inf)
    return loss.item(), w.grad.numpy(), b1.grad.numpy(), mx


@pytest.mark.parametrize("threads", [1, 2])
def test_empty_batch(build, threads, monkeypatch):
    monkeypatch.setenv("TDSL_NUM_THREADS", str(threads))
    m = build(SRC, name="zero%d" % threads, precision="double")
    m.init(0)
    assert m.get_dim("n") is None and m["x"].shape == (0, 3)
    with pytest.raises(tdsl.TdslError, match="dimension n is not set"):
        m.call("step")
    m["x"] = np.zeros((0, 3))  # an empty array sets n = 0 (the unset view is empty too)
    assert m.n == 0 and m.get_dim("n") == 0
    for _ in range(2):  # 0 -> 5 -> 0: reallocated each way
        m.call("step")
        m.call("fwd")
        assert m["x"].shape == (0, 3) and m["h"].shape == (0, 4) and m["x.grad"].shape == (0, 3)
        loss, gw, gb, mx = oracle(m, np.zeros((0, 3)))
        assert float(m["loss"]) == loss == 0.0
        np.testing.assert_array_equal(m["w.grad"], gw)
        np.testing.assert_array_equal(m["b1.grad"], gb)
        np.testing.assert_array_equal(m["mx"], mx)
        assert np.all(np.isneginf(m["mx"]))
        xv = np.random.default_rng(1).uniform(-1, 1, (5, 3))
        m["x"] = xv
        assert m.n == 5
        m.call("step")
        m.call("fwd")
        loss, gw, gb, mx = oracle(m, xv)
        assert float(m["loss"]) == pytest.approx(loss, rel=1e-12)
        np.testing.assert_allclose(m["w.grad"], gw, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(m["mx"], mx, rtol=1e-12)
        m.n = 0


def test_set_dim_zero_and_copy(build):
    m = build(SRC, name="zcopy")
    m.init(0)
    m.set_dim("n", 0)
    assert m["x"].size == 0 and m["x"].shape == (0, 3)
    with pytest.raises(tdsl.TdslError, match="out of its range 0.."):
        m.set_dim("n", -1)
    m.call("step")
    c = copy.copy(m)
    try:
        assert c.get_dim("n") == 0  # the copy keeps the empty batch, not "unset"
        c.call("step")
    finally:
        c.close()


def test_checkpoint_keeps_zero(build, tmp_path):
    m = build(SRC, name="zck")
    m.init(0)
    m.n = 0
    m.call("step")
    path = str(tmp_path / "ck.safetensors")
    m.save(path, "all")
    sd = load_file(path)  # safetensors' own reader
    assert tuple(sd["x"].shape) == (0, 3) and tuple(sd["h"].shape) == (0, 4)
    fresh = build(SRC, name="zck2")
    fresh.init(0)
    fresh.load(path)
    assert fresh.get_dim("n") == 0  # the 0 is restored, not left unset
    np.testing.assert_array_equal(fresh["w"], m["w"])
    fresh.call("step")
    other = build(SRC, name="zck3")
    other.init(0)
    other.n = 5
    with pytest.raises(tdsl.TdslError, match="n = 0, but n is set to 5"):
        other.load(path)
    # saved while n was unset: the axis 0 says nothing, n stays unset
    unset = build(SRC, name="zck4")
    unset.init(0)
    upath = str(tmp_path / "unset.safetensors")
    unset.save(upath, "all")
    again = build(SRC, name="zck5")
    again.init(0)
    again.load(upath)
    assert again.get_dim("n") is None
    # a torch-written file (another producer) of an empty batch sets n = 0
    sd = {k: v for k, v in load_file(path).items()}
    sd["x"] = torch.zeros(0, 3, dtype=sd["x"].dtype)
    tpath = str(tmp_path / "torch.safetensors")
    save_file(sd, tpath)
    t = build(SRC, name="zck6")
    t.init(0)
    t.load(tpath)
    assert t.get_dim("n") == 0


def test_npy_empty_batch(build, tmp_path):
    m = build(SRC, name="znpy")
    m.init(0)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((0, 3), np.float32))
    m.load_file("x", str(npy))
    assert m.n == 0 and m["x"].shape == (0, 3)
    m.call("step")
    assert float(m["loss"]) == 0.0
