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


def test_opens_initialized(build, tmp_path):
    """Parameters from a checkpoint, no init(): the model's own initial values (b) and
    constants (the range) are there (they were 0 until init())."""
    m = build(LINEAR + "let%op r = y *. (range_of_shape ~output_dims:[ 2 ] () + 3.0)\n")
    assert list(m["b"]) == [0.5, 0.5]
    m.init(5)
    m["b"] = [1.0, 2.0]
    m.save(tmp_path / "ck.safetensors", "params")
    fresh = tdsl.load(m.path)
    fresh.load(tmp_path / "ck.safetensors")
    fresh["x"] = np.ones((4, 3))
    fresh.call("r.forward")
    y = np.ones((4, 3)) @ fresh["w"].T + [1.0, 2.0]
    np.testing.assert_allclose(fresh["r"], y * [3.0, 4.0], rtol=1e-6)
    fresh.close()


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


def test_tensor_is_no_attribute(build):
    """`m.w = arr` made a Python attribute and left the tensor as it was, silently."""
    m = build(LINEAR)
    m.init(0)
    before = m["w"].copy()
    with pytest.raises(AttributeError, match=r"m\['w'\] = value"):
        m.w = np.zeros((2, 3))
    np.testing.assert_array_equal(m["w"], before)
    m.note = "mine"  # other attributes are the host's own
    assert m.note == "mine"


def test_index_named_like_a_method(build):
    """An index symbol `call` and a dimension `path`: `m.call = 2` set the index but
    `m.call` read back the method (and `m.path` the file name), silently. Such names go
    by set_index/get_index, set_dim/get_dim; the attribute write says so."""
    m = build("let call = index 3\nlet path = dim ()\n"
              "let%cd x = { x; b = [ 3; path ]; o = [ 2 ] }\nlet%op row = x @| call\n")
    assert m.indices == ("call",) and m.dims == ("path",)
    with pytest.raises(AttributeError, match=r"m.set_index\('call', value\)"):
        m.call = 2
    with pytest.raises(AttributeError, match=r"m.set_dim\('path', value\)"):
        m.path = 2
    assert callable(m.call) and m.path.endswith(".so")
    m.set_index("call", 2)
    m.set_dim("path", 4)
    assert m.get_index("call") == 2 and m.get_dim("path") == 4
    xs = np.arange(24.0).reshape(3, 4, 2)
    m["x"] = xs
    m.call("row.forward")
    np.testing.assert_array_equal(m["row"], xs[2])


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



def test_compile_a_file_named_like_an_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-lin.tdsl").write_text(LINEAR)
    so = tdsl.compile("-lin.tdsl")  # was passed to tdslc as an unknown option
    assert so == "-lin.so"
    with tdsl.load(so) as m:
        assert "step" in m.routines


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


def test_views_outlive_close_and_gc(build, tmp_path):
    m = build('let%op f = range 3\n')
    m.init(0)
    v = m["f"]
    m.close()
    again = tdsl.load(m.path)  # the same size of instance: would reuse freed memory
    again.init(0)
    again["f"] = [7, 8, 9]
    np.testing.assert_array_equal(v, [0, 1, 2])
    again.close()
    src = tmp_path / "g.tdsl"
    src.write_text('let%op g = range 4\n')
    w = tdsl.load(tdsl.compile(src))  # not through build, which keeps its models
    w.init(0)
    view = w["g"]
    del w
    import gc
    gc.collect()
    junk = [bytearray(b"\xff" * 64) for _ in range(2000)]
    np.testing.assert_array_equal(view, [0, 1, 2, 3])


def test_view_survives_reallocation(build):
    m = build("let b = dim ()\nlet%cd x = { x; b = [ b ]; o = [ 2 ] }\nlet%op y = x *. 2.0\n")
    m["x"] = np.ones((4, 2))
    v = m["x"]
    m.b = 1000  # reallocates x: v keeps the old block
    junk = [np.full(1000, 7.0) for _ in range(100)]
    np.testing.assert_array_equal(v, np.ones((4, 2)))
    assert m["x"].shape == (1000, 2)
    del junk


def test_arguments_are_checked_not_truncated(build, tmp_path):
    m = build(LINEAR)
    m.init(0)
    with pytest.raises(ValueError, match="NUL"):
        m["w\0junk"]
    with pytest.raises(ValueError, match="NUL"):
        m.call("step\0junk")
    with pytest.raises(ValueError, match="NUL"):
        m.save(str(tmp_path / "ck\0junk"))
    assert not (tmp_path / "ck").exists()
    with pytest.raises(TypeError):
        m[None]
    with pytest.raises(TypeError):
        m.call(None)
    assert 3 not in m and "w\0" not in m
    with pytest.raises(ValueError, match="out of range"):
        m.set_index("i", 2 ** 64)  # ctypes would wrap it to 0
    assert m.i == 0
    with pytest.raises(TypeError):
        m.set_index("i", 1.5)
    with pytest.raises(ValueError):
        m.init(2 ** 64)
    with pytest.raises(TypeError, match="complex"):
        m["b"] = np.array([1 + 1j, 2])
    m.set_index("i", np.int64(3))
    assert m.i == 3
    m["w"] = np.arange(12.0).reshape(3, 4)[:, ::2].T  # non-contiguous, other dtype
    np.testing.assert_array_equal(m["w"], [[0, 4, 8], [2, 6, 10]])
    m["w"] = np.arange(6, dtype=">f8").reshape(2, 3)  # big-endian
    np.testing.assert_array_equal(m["w"], np.arange(6).reshape(2, 3))


def test_copies_are_independent_instances(build):
    """copy.copy / copy.deepcopy open the model again with the same state (a copy that
    shared the handle closed the original when it was collected); pickling is refused."""
    import copy
    import gc
    import pickle

    m = build(LINEAR)
    m.init(3)
    m["x"] = np.arange(12.0).reshape(4, 3)
    m.call("step")
    for c in (copy.copy(m), copy.deepcopy(m)):
        np.testing.assert_array_equal(c["y"], m["y"])
        c["x"] = np.zeros((4, 3))
        c.call("step")
        np.testing.assert_array_equal(m["x"], np.arange(12.0).reshape(4, 3))
        c.close()
    c = copy.copy(m)
    del c
    gc.collect()
    m.call("step")  # the original is still open
    m.i = 2
    d = copy.deepcopy(m)
    assert d.i == 2
    m.call("step")
    d.call("step")
    np.testing.assert_array_equal(d["w"], m["w"])
    d.close()
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(m)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m["x"])), np.arange(12.0).reshape(4, 3))


def test_non_numbers_are_refused(build):
    m = build(LINEAR)
    m.init(0)
    for bad, what in ((None, "NoneType"), ("1.5", "str"), (np.array([1, None, 2] * 4, dtype=object).reshape(4, 3), "dtype object"),
                      (np.array([["1", "2", "3"]] * 4), "dtype <U1")):
        with pytest.raises(TypeError, match="takes numbers, not .*" + what):
            m["x"] = bad
    m["x"] = np.array([[True, False, True]] * 4)
    np.testing.assert_array_equal(m["x"][1], [1, 0, 1])


def test_reload_recompiled_model(tmp_path):
    """A model recompiled at the path of one still loaded (a view of the closed model
    keeps its library) came back as the old library: dlopen knows a library by its
    name, so the new tdsl.load had the old tensors and code, silently. The runtime now
    loads a changed file through a copy of its own name (tdsl_open)."""
    src = tmp_path / "m.tdsl"
    so = str(tmp_path / "m.so")
    src.write_text("let%op y = { w = 1.0; o = [ 3 ] } + 1\n")
    m1 = tdsl.load(tdsl.compile(src, out=so))
    m1.call("y.forward")
    view = m1["y"]
    m1.close()
    src.write_text("let%op z = { v = 2.0; o = [ 5 ] } * 3\n")
    m2 = tdsl.load(tdsl.compile(src, out=so))
    assert "z" in m2.tensors and "y" not in m2.tensors
    m2.call("z.forward")
    np.testing.assert_array_equal(m2["z"], np.full(5, 6.0, np.float32))
    np.testing.assert_array_equal(view, np.full(3, 2.0, np.float32))  # the old one's view
    m3 = tdsl.load(so)  # the same file again: one more instance of the new model
    m3.call("z.forward")
    np.testing.assert_array_equal(m3["z"], np.full(5, 6.0, np.float32))
    m2.close()
    m3.close()


def test_compile_out_dash(tmp_path, monkeypatch):
    """tdsl.compile(out="-") must make a file named "-" that tdsl.load opens: tdslc reads
    "-o -" as the standard output (as gcc), which the package captured as text."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.tdsl").write_text("let%op y = { w = 1.0; o = [ 3 ] } + 1\n")
    so = tdsl.compile("m.tdsl", out="-")
    m = tdsl.load(so)
    m.call("y.forward")
    np.testing.assert_array_equal(m["y"], np.full(3, 2.0, np.float32))
    m.close()
    assert (tmp_path / "-").is_file()


def test_num_threads(build):
    # a matmul large enough for parallel loops: the same bits on 1 and 3 threads
    m = build('let%op c = { a = uniform (); o = [ 256 ]; i = [ 128 ] } * { b = uniform (); o = [ 128 ]; i = [ 256 ] }\n')
    m.init(3)
    m.set_num_threads(1)
    assert m.get_num_threads() == 1
    m.call("c.forward")
    one = np.array(m["c"])
    m.set_num_threads(3)
    assert m.get_num_threads() == 3
    m.call("c.forward")
    np.testing.assert_array_equal(m["c"], one)
    np.testing.assert_allclose(one, np.array(m["a"], np.float64) @ np.array(m["b"], np.float64), rtol=1e-4)
    for bad in (0, 1025, -1, 1 << 32):
        with pytest.raises(ValueError, match="want 1 to 1024"):
            m.set_num_threads(bad)
    with pytest.raises(TypeError):
        m.set_num_threads(2.0)
    assert m.get_num_threads() == 3
