"""Dynamic dimensions (issue 17) end to end: the moons model compiled once with a
dynamic batch trains at batch 10 and predicts at batch 1 and 800 with the values of
static models compiled at those sizes (the oracle; in double precision, as the dynamic
model's plain loops and the static one's scheduled ones may sum in another order), the Python API of dims, run-time
broadcasting of a size that is 1, and the run-time checks of sizes."""
import os

import numpy as np
import pytest

import tdsl

MOONS = """
let n_batches = 80
let batch_n = index n_batches
let step_n = index ()
{decls}
let%cd moons_flat = {{ moons_flat; b = [ n_batches; {tb} ]; o = [ 2 ] }}
let%cd moons_classes = {{ moons_classes; b = [ n_batches; {tb} ]; o = [ 1 ] }}
let%op mlp x = {{ w3 }} * relu ({{ b2; o = [ 16 ] }} + ({{ w2 }} * relu ({{ b1; o = [ 16 ] }} + ({{ w1 }} * x))))
let%op moons_input = moons_flat @| batch_n
let%op moons_class = moons_classes @| batch_n
let%op margin_loss = relu (1 - (moons_class *. mlp moons_input))
let%op scalar_loss = (margin_loss ++ "...|... => 0") /. !..10
let%op learning_rate = 0.1 *. ((2 *. !..80) - !@step_n) /. !..80
let%cd train_step = grad_update scalar_loss; sgd_update ~learning_rate ~weight_decay:0.0001 scalar_loss
let%cd mlp_result = mlp {{ point; b = [ {pb} ]; o = [ 2 ] }}
let%cd infer = mlp_result.forward
"""

PARAMS = ("w1", "b1", "w2", "b2", "w3")


def moons(n, seed=0):
    """The two half-moons, n points with classes +-1 (numpy)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    upper = rng.integers(0, 2, n)
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    pts = np.stack([x, y], 1) + rng.normal(0, 0.1, (n, 2))
    return pts, np.where(upper, 1.0, -1.0)


def train(m, pts, cls):
    m["moons_flat"] = pts.reshape(80, 10, 2)
    m["moons_classes"] = cls.reshape(80, 10, 1)
    for step in range(80):
        m.batch_n = step
        m.step_n = step
        m.call("train_step")


def predict(m, points):
    m["point"] = points
    m.call("infer")
    return m["mlp_result"].copy()


def test_moons_dynamic_batch(build):
    pts, cls = moons(800)
    queries = {1: moons(1, seed=1)[0], 800: moons(800, seed=2)[0]}
    dyn = build(MOONS.format(decls="let batch = dim ()", tb="batch", pb="batch"), name="moons_dyn", precision="double")
    assert dyn.dims == ("batch",)
    dyn.init(seed=3)
    train(dyn, pts, cls)
    assert dyn.batch == 10
    for p, q in queries.items():
        static = build(MOONS.format(decls="", tb="10", pb=str(p)), name="moons_%d" % p, precision="double")
        static.init(seed=3)
        train(static, pts, cls)
        for w in PARAMS:
            np.testing.assert_allclose(dyn[w], static[w], rtol=1e-9, atol=1e-12)
        got = predict(dyn, q)
        assert dyn.batch == p and got.shape == (p, 1)
        np.testing.assert_allclose(got, predict(static, q), rtol=1e-9, atol=1e-12)


SMALL = """
let n = dim ()
let%cd x = { x; b = [ n ]; o = [ 3 ] }
let%op y = x *. 2. + { c = [1; 2; 3] }
let%op s = y ++ "...|... => 0"
"""


def test_dims_api(build, tmp_path):
    m = build(SMALL)
    m.init()
    assert m.dims == ("n",) and m.n is None  # unset (0 would be an empty batch)
    assert m["x"].shape == (0, 3)
    m.save(tmp_path / "empty.safetensors", which="all")  # unset: empty tensors
    m.load(tmp_path / "empty.safetensors")
    with pytest.raises(tdsl.TdslError, match="dimension n is not set"):
        m.call("s.forward")
    x = np.arange(12.0).reshape(4, 3)
    m["x"] = x  # sets n
    assert m.n == 4 and m.get_dim("n") == 4 and m["y"].shape == (4, 3)
    m.call("s.forward")
    np.testing.assert_allclose(m["y"], x * 2 + [1, 2, 3])
    np.testing.assert_allclose(m["s"], [(x * 2 + [1, 2, 3]).sum()])
    m.set_dim("n", 2)
    assert m["x"].shape == (2, 3) and m.tensors["y"].shape == (2, 3)
    m.n = 5
    assert m.get_dim("n") == 5
    with pytest.raises(tdsl.TdslError, match="axis 1 has size 3, not 4"):
        m["x"] = np.zeros((2, 4))
    with pytest.raises(tdsl.TdslError, match="out of its range"):
        m.set_dim("n", -1)


BCAST = """
let n = dim ()
let%cd a = { a; b = [ n ]; o = [ 3 ] }
let%cd b = { b; b = [ 4 ]; o = [ 3 ] }
let%op c = a + b
"""


def test_runtime_broadcast_and_check(build):
    m = build(BCAST)
    m.init()
    b = np.arange(12.0).reshape(4, 3)
    m["b"] = b
    a4 = np.arange(12.0).reshape(4, 3) * 10
    m["a"] = a4
    m.call("c.forward")
    np.testing.assert_allclose(m["c"], a4 + b)
    a1 = np.array([[1.0, 2.0, 3.0]])
    m["a"] = a1  # n = 1: broadcast at run time
    m.call("c.forward")
    np.testing.assert_allclose(m["c"], a1 + b)
    m["a"] = np.ones((2, 3))  # n = 2: neither 4 nor 1
    with pytest.raises(tdsl.TdslError, match="n = 2, expected 4 or 1"):
        m.call("c.forward")


JOIN = """
let n = dim ()
let m = dim ()
let%cd a = { a; b = [ n ]; o = [ 3 ] }
let%cd b = { b; b = [ m ]; o = [ 3 ] }
let%op c = a + b
"""


@pytest.mark.parametrize("n,m", [(1, 4), (4, 1), (4, 4), (3, 4)])
def test_two_dynamic_sizes_broadcast(build, n, m):
    """`? vs ?`: c's size is the join of n and m, computed by the runtime; numpy's
    broadcasting is the oracle, and sizes it refuses fail the call."""
    mod = build(JOIN)
    mod.init()
    assert mod.dims == ("n", "m")
    a, b = np.arange(3.0 * n).reshape(n, 3), np.cos(np.arange(3.0 * m)).reshape(m, 3)
    mod["a"], mod["b"] = a, b
    assert (mod.n, mod.m) == (n, m) and mod.get_dim("max(n,m)") == max(n, m)
    try:
        want = a + b
    except ValueError:
        with pytest.raises(tdsl.TdslError, match=r"n = 3, max\(n,m\) = 4"):
            mod.call("c.forward")
        return
    mod.call("c.forward")
    np.testing.assert_allclose(mod["c"], want, rtol=1e-6)
    with pytest.raises(tdsl.TdslError, match="computed from the dimensions it joins"):
        mod.set_dim("max(n,m)", 4)


CKPT = """
let n = dim ()
let m = dim ()
let%op y = ({ p; b = [ n ]; o = [ 2 ] } *. 2.) + { q; b = [ m ]; o = [ 2 ] }
"""


def test_checkpoint_sets_dynamic_dims(build, tmp_path):
    """tdsl_load sets unset dims from the saved shapes, refuses shapes that contradict
    dims already set (or each other), and checks joins; the file is written by the
    safetensors package where it must be malformed."""
    from safetensors.numpy import save_file

    src = build(CKPT, name="src")
    src.init(1)
    p, q = np.arange(8.0).reshape(4, 2), np.array([[10.0, 20.0]])
    src["p"], src["q"] = p, q
    src.call("y.forward")
    src.save(tmp_path / "all.safetensors", "all")
    src.save(tmp_path / "params.safetensors", "params")

    dst = build(CKPT, name="dst")
    dst.init(2)
    assert (dst.n, dst.m) == (None, None)
    dst.load(tmp_path / "all.safetensors")
    assert (dst.n, dst.m) == (4, 1) and dst.get_dim("max(n,m)") == 4
    np.testing.assert_array_equal(dst["p"], p)
    np.testing.assert_array_equal(dst["y"], p * 2 + q)

    part = build(CKPT, name="part")
    part.init(2)
    part.n = 4  # agrees with the file; m is set by the load
    part.load(tmp_path / "params.safetensors")
    assert part.m == 1
    part.call("y.forward")
    np.testing.assert_allclose(part["y"], p * 2 + q)

    other = build(CKPT, name="other")
    other.init(2)
    other.n = 2
    with pytest.raises(tdsl.TdslError, match=r"its tensors have n = 4, but n is set to 2"):
        other.load(tmp_path / "params.safetensors")
    assert other.n == 2 and other.m is None

    save_file({"p": np.zeros((4, 2), np.float32), "p.grad": np.zeros((5, 2), np.float32)},
              str(tmp_path / "two.safetensors"))
    fresh = build(CKPT, name="fresh")
    fresh.init(0)
    with pytest.raises(tdsl.TdslError, match="tensor 'p.grad' has n = 5 where an earlier tensor has n = 4|"
                                             "tensor 'p' has n = 4 where an earlier tensor has n = 5"):
        fresh.load(tmp_path / "two.safetensors")
    assert fresh.n is None
    save_file({"p": np.zeros((4, 2), np.float32), "q": np.zeros((1, 2), np.float32),
               "y": np.zeros((3, 2), np.float32)}, str(tmp_path / "join.safetensors"))
    with pytest.raises(tdsl.TdslError, match=r"max\(n,m\) = 3, but the dimensions it joins make it 4"):
        fresh.load(tmp_path / "join.safetensors")


THREADED = """
import sys, threading
import tdsl
m = tdsl.load(sys.argv[1])
m.init(0)
m.n = 300
stop = []
def resize():
    k = 0
    while not stop:
        m.n = 300 + (k % 5) * 40
        m["x"] = [[0.5] * 64] * (200 + k % 3)
        k += 1
t = threading.Thread(target=resize)
t.start()
try:
    for _ in range(60):
        m.call("step")
finally:
    stop.append(1)
    t.join()
print("ok", m.n > 0)
"""


def test_threads_share_a_model(tmp_path):
    """A call in one thread while another resizes the model: ctypes releases the GIL, and
    a reallocation freed the buffers the running call used (a segfault); the calls now
    take turns."""
    import subprocess
    import sys

    src = tmp_path / "thr.tdsl"
    src.write_text("""
let n = dim ()
let%cd x = { x; b = [ n ]; o = [ 64 ] }
let%op y = relu ({ w; o = [ 256 ] } * x)
let%op loss = (y *. y) ++ "...|...->... => 0"
let%cd step = grad_update loss; sgd_update ~learning_rate:0.0001 loss
""")
    so = tdsl.compile(src)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tdsl.__file__)))
    r = subprocess.run([sys.executable, "-c", THREADED, so], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "ok True" in r.stdout, (r.returncode, r.stderr[-2000:])
