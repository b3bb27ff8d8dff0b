"""Empty tensors (a dimension 0, tdsl(7) Empty tensors) through the package: numpy views
of shape (2, 0), assignment of an empty array, a training step whose parameter is
empty, checkpoints (safetensors with no data for it) and a .npy of shape (2, 0)."""
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import tdsl

SRC = """
let%op x = { x = 1.; o = [ 2; 0 ] }
let%op q = { q = [ 1.5; 2. ] }
let%op loss = ((x ++ "ij=>i") *. q + q) ++ "i=>"
let%cd step = grad_update loss
"""


def test_views_and_step(build, tmp_path):
    m = build(SRC)
    m.init(0)
    x = m["x"]
    assert x.shape == (2, 0) and x.size == 0
    assert m["x.grad"].shape == (2, 0)
    m["x"] = np.zeros((2, 0))
    with pytest.raises(ValueError):
        m["x"] = np.zeros((2, 1))
    m.call("step")
    # numpy: x.sum(1) is [0, 0], so loss = sum(q) and d loss / d q = 1
    assert float(m["loss"]) == pytest.approx(3.5)
    np.testing.assert_array_equal(m["q.grad"], [1.0, 1.0])
    path = str(tmp_path / "ck.safetensors")
    m.save(path, "all")
    sd = load_file(path)  # safetensors' own reader: data_offsets [a, a] for an empty tensor
    assert tuple(sd["x"].shape) == (2, 0) and tuple(sd["x.grad"].shape) == (2, 0)
    sd["x"] = torch.zeros(2, 0)
    save_file(sd, str(tmp_path / "pt.safetensors"))
    m.load(str(tmp_path / "pt.safetensors"))
    m.load(path)
    npy = tmp_path / "e.npy"
    np.save(npy, np.zeros((2, 0), np.float32))
    m.load_file("x", str(npy))
    assert m["x"].shape == (2, 0)
