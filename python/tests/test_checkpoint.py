"""Safetensors checkpoints: tdslc files read by PyTorch give the same forward values,
PyTorch files load into tdslc models, mismatches are reported, training state round-trips."""
import os
import subprocess

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import tdsl

MLP = """
let%cd x = { x; b = [ 6 ]; o = [ 3 ] }
let%cd target = { target; b = [ 6 ]; o = [ 2 ] }
let%op h = tanh ({ w1; o = [ 5 ] } * x + { b1; o = [ 5 ] })
let%op y = ({ w2; o = [ 2 ] } * h) + { b2; o = [ 2 ] }
let%op loss = mse y target
let%cd train_step = grad_update loss; adam_update ~learning_rate:0.05 loss
"""

XS = np.linspace(-1.5, 1.5, 18).reshape(6, 3)
TS = np.cos(np.arange(12.0)).reshape(6, 2)


def torch_forward(sd, xs):
    x = torch.as_tensor(xs, dtype=sd["w1"].dtype)
    h = torch.tanh(x @ sd["w1"].T + sd["b1"])
    return h @ sd["w2"].T + sd["b2"]


def test_tdslc_checkpoint_loads_in_pytorch(build, tmp_path):
    m = build(MLP)
    m.init(5)
    m["x"] = XS
    m.call("y.forward")
    m.save(tmp_path / "ck.safetensors", "params")
    sd = load_file(str(tmp_path / "ck.safetensors"))
    assert sorted(sd) == ["b1", "b2", "w1", "w2"]
    assert sd["w1"].shape == (5, 3) and sd["w1"].dtype == torch.float32
    np.testing.assert_allclose(torch_forward(sd, XS).numpy(), m["y"], rtol=1e-5, atol=1e-6)


def test_pytorch_checkpoint_loads_into_tdslc(build, tmp_path):
    g = torch.Generator().manual_seed(0)
    sd = {"w1": torch.randn(5, 3, generator=g), "b1": torch.randn(5, generator=g),
          "w2": torch.randn(2, 5, generator=g), "b2": torch.randn(2, generator=g)}
    save_file(sd, str(tmp_path / "pt.safetensors"))
    m = build(MLP)
    m.init(0)
    m.load(tmp_path / "pt.safetensors")
    np.testing.assert_array_equal(m["w2"], sd["w2"].numpy())
    m["x"] = XS
    m.call("y.forward")
    np.testing.assert_allclose(m["y"], torch_forward(sd, XS).numpy(), rtol=1e-5, atol=1e-6)


def test_mismatches_name_the_tensor(build, tmp_path):
    m = build(MLP)
    m.init(0)
    before = m["w1"].copy()
    cases = {
        "shape": ({"w1": torch.zeros(5, 3), "b1": torch.zeros(4)}, "tensor 'b1' has shape \\[4\\] but the model's is \\[5\\]"),
        "dtype": ({"w1": torch.zeros(5, 3), "b2": torch.zeros(2, dtype=torch.float64)}, "tensor 'b2' is F64 but the model's is F32"),
        "name": ({"w1": torch.zeros(5, 3), "w9": torch.zeros(2)}, "tensor 'w9' is not in the model"),
    }
    for what, (sd, msg) in cases.items():
        p = tmp_path / (what + ".safetensors")
        save_file(sd, str(p))
        with pytest.raises(tdsl.TdslError, match=msg):
            m.load(p)
        np.testing.assert_array_equal(m["w1"], before)  # nothing loaded on a mismatch
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(tdsl.TdslError, match="bad JSON header"):
        m.load(tmp_path / "junk.safetensors")
    (tmp_path / "short.safetensors").write_bytes(b"\xff\xff\xff\xff\xff\x00\x00\x00{}")
    with pytest.raises(tdsl.TdslError, match="not a safetensors file"):
        m.load(tmp_path / "short.safetensors")
    hdr = b'{"w1":{"dtype":"F32","shape":[5,3],"data_offsets":[0,600]}}'
    (tmp_path / "off.safetensors").write_bytes(len(hdr).to_bytes(8, "little") + hdr + bytes(60))
    with pytest.raises(tdsl.TdslError, match="bad data_offsets"):
        m.load(tmp_path / "off.safetensors")


def test_training_state_round_trips(build, tmp_path):
    """Three Adam steps, save params + optimizer state, reload into a fresh instance:
    both continue identically (the moments and bias corrections are in the file)."""
    a = build(MLP, name="a")
    a.init(2)
    a["x"], a["target"] = XS, TS
    for _ in range(3):
        a.call("train_step")
    a.save(tmp_path / "train.safetensors")
    roles = {t.name: t.role for t in a.tensors.values()}
    saved = load_file(str(tmp_path / "train.safetensors"))
    assert {roles[k] for k in saved} == {"param", "optimizer"}
    assert "w1.adam_m" in saved and "w1.adam_c1" in saved and "w1.adam_mhat" not in saved
    b = build(MLP, name="b")
    b.init(99)
    b.load(tmp_path / "train.safetensors")
    b["x"], b["target"] = XS, TS
    for _ in range(2):
        a.call("train_step")
        b.call("train_step")
        np.testing.assert_array_equal(a["loss"], b["loss"])
    np.testing.assert_array_equal(a["w1"], b["w1"])


def test_cli_save_and_load_checkpoint(tmp_path):
    src = tmp_path / "mlp.tdsl"
    src.write_text(MLP)
    tdslc = os.environ["TDSLC"]
    ck = tmp_path / "cli.safetensors"
    subprocess.run([tdslc, "--run", str(src), "--seed", "4", "--call", "train_step", "--save", str(ck)], check=True)
    sd = load_file(str(ck))
    assert "w2" in sd and "w2.adam_v" in sd
    sd["b2"] = torch.tensor([3.0, -4.0])
    save_file(sd, str(ck))
    out = subprocess.run([tdslc, "--run", str(src), "--load-checkpoint", str(ck), "--call", "init", "--print", "b2",
                          "--json"], check=True, capture_output=True, text=True).stdout
    assert '"values":[3,-4]' not in out  # --call init re-initializes after the load
    out = subprocess.run([tdslc, "--run", str(src), "--load-checkpoint", str(ck), "--print", "b2", "--json"],
                         check=True, capture_output=True, text=True).stdout
    assert '"values":[3,-4]' in out
    r = subprocess.run([tdslc, "--run", str(src), "--load-checkpoint", str(tmp_path / "none.safetensors")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--load-checkpoint: cannot read" in r.stderr  # an unreadable file: 2 (CLI.md)


def test_names_are_tensor_names_not_aliases(build, tmp_path):
    """`w` is both the parameter's own name and the relu's alias: the checkpoint and
    state_dict use the parameter (state_dict returned the relu, a load failed)."""
    m = build("""
let%cd x = { x; o = [ 2 ] }
let%op w = relu ({ w; o = [ 3 ] } * x)
let%op loss = w ++ "...|... => 0"
let%cd step = grad_update loss; sgd_update ~learning_rate:0.1 loss
""")
    m.init(4)
    sd = m.state_dict()
    assert list(sd) == ["w"] and sd["w"].shape == (3, 2)
    assert m["w"].shape == (3,)  # m[name] goes through the alias, as documented
    m.save(tmp_path / "a.safetensors", "params")
    np.testing.assert_array_equal(load_file(str(tmp_path / "a.safetensors"))["w"].numpy(), sd["w"])
    save_file({"w": torch.full((3, 2), 0.25)}, str(tmp_path / "b.safetensors"))
    m.load(tmp_path / "b.safetensors")
    np.testing.assert_array_equal(m.state_dict()["w"], np.full((3, 2), 0.25))
    with pytest.raises(ValueError, match="which must be one of"):
        m.state_dict("weights")


def test_refused_load_sets_no_dimension(build, tmp_path):
    """A checkpoint refused for a later entry (w of another size) had set the model's
    unset dimension n from an earlier one's shape and allocated its tensors: a failed
    m.load left the model changed. Now the dimensions are as they were."""
    src = "let n = dim ()\nlet%op y = ({ w = 1.0; o = [ W ] } ++ \"i=>0\") + ({ b = 1.0; o = [ n ] } ++ \"i=>0\")\n"
    a = build(src.replace("W", "3"), name="a")
    a.set_dim("n", 4)
    a["b"] = [1, 2, 3, 4]
    a.save(str(tmp_path / "a.st"), "all")
    b = build(src.replace("W", "5"), name="b")
    assert b.get_dim("n") is None
    with pytest.raises(tdsl.TdslError, match="tensor 'w' has shape \\[3\\] but the model's is \\[5\\]"):
        b.load(str(tmp_path / "a.st"))
    assert b.get_dim("n") is None and b["b"].shape == (0,)
    c = build(src.replace("W", "3"), name="c")  # the same checkpoint where it fits
    c.load(str(tmp_path / "a.st"))
    assert c.get_dim("n") == 4
    np.testing.assert_array_equal(c["b"], [1, 2, 3, 4])
