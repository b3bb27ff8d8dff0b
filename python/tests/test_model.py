"""The Python package over a compiled model, against numpy."""
import numpy as np
import pytest

import tdsl

LINEAR = """
let%cd x = { x; b = [ 4 ]; o = [ 3 ] }
let%op y = ({ w; o = [ 2 ] } * x) + { b = 0.5; o = [ 2 ] }
let%op loss = (y *. y) ++ "...|...->... => 0"
let%cd step = grad_update loss; sgd_update ~learning_rate:0.1 loss
let i = index 4
let%op row = x @| i
"""


def test_tensors_routines_params(build):
    m = build(LINEAR)
    t = m.tensors
    assert t["x"].shape == (4, 3) and t["x"].role == "input" and t["x"].kinds == (1, 1, 0)
    assert t["w"].shape == (2, 3) and t["w"].role == "param" and t["w"].dtype == np.float32
    assert t["w.grad"].role == "grad"
    assert m.params == ["w", "b"]
    assert "step" in m.routines and "y.forward" in m.routines and "loss.backprop" in m.routines
    assert m.indices == ("i",)


def test_views_are_zero_copy_and_typed(build):
    m = build(LINEAR)
    m.init(3)
    w = m["w"]
    assert w.shape == (2, 3) and w.dtype == np.float32
    w[0, 0] = 42.0
    assert m["w"][0, 0] == 42.0  # the same memory


def test_forward_matches_numpy(build):
    m = build(LINEAR)
    m.init(0)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    m["x"] = xs
    m.call("y.forward")
    want = xs @ m["w"].T + 0.5
    np.testing.assert_allclose(m["y"], want, rtol=1e-6)


def test_sgd_step_matches_numpy(build):
    m = build(LINEAR, precision="double")
    m.init(1)
    xs = np.linspace(-1, 1, 12).reshape(4, 3)
    m["x"] = xs
    w, b = m["w"].copy(), m["b"].copy()
    m.call("step")
    y = xs @ w.T + b
    gy = 2 * y
    np.testing.assert_allclose(m["w"], w - 0.1 * gy.T @ xs, rtol=1e-12)
    np.testing.assert_allclose(m["b"], b - 0.1 * gy.sum(0), rtol=1e-12)
    assert m["w"].dtype == np.float64


def test_shape_checked_on_write(build):
    m = build(LINEAR)
    with pytest.raises(ValueError, match="shape"):
        m["x"] = np.zeros((3, 4))
    m["b"] = [1.0, 2.0]  # a list converts
    np.testing.assert_array_equal(m["b"], [1.0, 2.0])


def test_index_symbols_as_attributes(build):
    m = build(LINEAR)
    m.init(0)
    m["x"] = np.arange(12).reshape(4, 3)
    m.i = 2
    assert m.i == 2 and m.get_index("i") == 2
    m.call("row.forward")
    np.testing.assert_array_equal(m["row"], [6, 7, 8])
    with pytest.raises(tdsl.TdslError, match="out of its range"):
        m.set_index("i", 4)


def test_init_is_reproducible(build):
    m = build(LINEAR)
    m.init(7)
    a = m["w"].copy()
    m.init(8)
    assert not np.array_equal(a, m["w"])
    m.init(7)
    np.testing.assert_array_equal(a, m["w"])


def test_errors(build, tmp_path):
    m = build(LINEAR)
    with pytest.raises(tdsl.TdslError, match="no routine named 'nope'"):
        m.call("nope")
    with pytest.raises(tdsl.TdslError, match="no tensor named 'nope'"):
        m["nope"]
    bad = tmp_path / "bad.tdsl"
    bad.write_text("let%op y = { w; o = [ 2 ] } * undefined_thing\n")
    with pytest.raises(tdsl.CompileError) as e:
        tdsl.compile(bad)
    assert "bad.tdsl:1:" in e.value.diagnostics and e.value.returncode == 1
    with pytest.raises(tdsl.TdslError, match="cannot open model"):
        tdsl.load(tmp_path / "missing.so")


def test_npy_load_file(build, tmp_path):
    m = build(LINEAR)
    xs = np.arange(12, dtype=np.float64).reshape(4, 3)
    np.save(tmp_path / "x.npy", xs)
    m.load_file("x", tmp_path / "x.npy")
    np.testing.assert_array_equal(m["x"], xs)
    np.save(tmp_path / "bad.npy", np.ascontiguousarray(xs.T))
    with pytest.raises(tdsl.TdslError, match=r"has shape \(3, 4\) but tensor x has dims \(4, 3\)"):
        m.load_file("x", tmp_path / "bad.npy")
    np.save(tmp_path / "int.npy", xs.astype(np.int32))
    with pytest.raises(tdsl.TdslError, match="dtype '<i4' is not supported"):
        m.load_file("x", tmp_path / "int.npy")
    np.save(tmp_path / "f.npy", np.asfortranarray(xs))
    with pytest.raises(tdsl.TdslError, match="Fortran"):
        m.load_file("x", tmp_path / "f.npy")


def test_closed_model(build):
    m = build('let%op f = range 3\n')
    m.init(0)
    v = m["f"]
    m.close()
    with pytest.raises(tdsl.TdslError, match="closed"):
        m.call("f.forward")
    assert v.shape == (3,)
