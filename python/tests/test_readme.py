"""The ```python examples of README.md and python/README.md run as written, against a
model that has the names they use, so that a renamed method or a changed behaviour
shows up as a failing example rather than as a reader's surprise."""
import copy
import os
import re
import shutil

import numpy as np
import pytest

import tdsl

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# python/README.md's names: a host input x over a dynamic batch n, an index symbol
# batch_n, a parameter w1, a routine train_step.
MODEL = """let n = dim ()
let batch_n = index 4
let%cd x = { x; b = [ n ]; o = [ 2 ] }
let%op h = relu (({ w1; o = [ 4 ] } * x) + !@batch_n)
let%op loss = mean h
let%cd train_step = grad_update loss; sgd_update ~learning_rate:0.1 ~momentum:0.9 loss
"""


def python_blocks(page):
    text = open(os.path.join(ROOT, page)).read()
    return re.findall(r"^```python\n(.*?)^```\s*$", text, re.S | re.M)


def run(code, where):
    env = {"tdsl": tdsl, "np": np, "copy": copy}
    # xs: the host data the examples copy in, shaped as their models' input
    env["xs"] = np.ones((80, 10, 2) if "moons" in code else (3, 2), np.float32)
    exec(compile(code, where, "exec"), env)
    return env


def test_python_readme(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.tdsl").write_text(MODEL)
    np.save(tmp_path / "xs.npy", np.ones((5, 2), np.float32))
    (block,) = python_blocks("python/README.md")
    env = run(block, "python/README.md")
    m = env["m"]
    assert m.n == 5  # load_file of a (5, 2) array set the dimension
    assert env["sd"].keys() == {"w1"}
    assert (tmp_path / "ck.safetensors").exists()


def test_top_readme(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(ROOT, "samples", "moons", "moons.tdsl"), tmp_path)
    blocks = python_blocks("README.md")
    assert blocks, "README.md has a ```python example"
    for i, block in enumerate(blocks):
        run(block, "README.md python block %d" % i)
    assert (tmp_path / "moons.safetensors").exists()


@pytest.mark.parametrize("page", ["README.md", "python/README.md"])
def test_blocks_found(page):
    assert python_blocks(page)
