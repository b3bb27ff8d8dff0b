"""The same training loop from Python and from a C host program over one compiled model
(samples/moons/moons.tdsl): the data goes in as numpy arrays in Python and as .npy files
in C; both checkpoints must be the same bytes (same parameters, optimizer state, header)."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import tdsl

from conftest import ROOT

HOST = r"""
#include <stdio.h>
#include "tdsl.h"
#define CK(x) do { if (x) { printf("error: %s\n", tdsl_error(m)); return 1; } } while (0)
int main(int argc, char **argv) {
  char err[512];
  tdsl_model *m = tdsl_open(argv[1], err, sizeof err);
  if (!m) { puts(err); return 1; }
  CK(tdsl_init(m, 7));
  CK(tdsl_load_file(m, "moons_flat", "xy.npy"));
  CK(tdsl_load_file(m, "moons_classes", "cls.npy"));
  long step = 0;
  for (int e = 0; e < 2; e++)
    for (long b = 0; b < 80; b++) {
      CK(tdsl_set_index(m, "batch_n", b));
      CK(tdsl_set_index(m, "step_n", step++));
      CK(tdsl_call(m, "train_step"));
    }
  CK(tdsl_save(m, argc > 2 ? argv[2] : "c.safetensors", TDSL_SAVE_TRAINING));
  tdsl_close(m);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_python_loop_matches_c_host(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    so = tdsl.compile(os.path.join(ROOT, "samples", "moons", "moons.tdsl"), out=str(tmp_path / "moons.so"))
    rng = np.random.default_rng(0)
    t = np.pi * rng.random(800)
    up = np.arange(800) % 2 == 0
    x = np.where(up, np.cos(t), 1 - np.cos(t)) + 0.1 * rng.standard_normal(800)
    y = np.where(up, np.sin(t), 0.5 - np.sin(t)) + 0.1 * rng.standard_normal(800)
    xy = np.stack([x, y], -1).reshape(80, 10, 2)
    cls = np.where(up, 1.0, -1.0).reshape(80, 10, 1)
    np.save("xy.npy", xy.astype(np.float32))
    np.save("cls.npy", cls)  # float64: converted by the runtime, as by m[...] = below
    (tmp_path / "host.c").write_text(HOST)
    rt = os.path.dirname(os.environ["TDSL_LIBRARY"])
    subprocess.run(["cc", "-I", os.path.join(ROOT, "runtime"), "-o", "host", "host.c", os.environ["TDSL_LIBRARY"],
                    "-Wl,-rpath," + rt, "-ldl", "-lcjson", "-lm"], check=True)
    r = subprocess.run(["./host", so], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with tdsl.load(so) as m:
        m.init(7)
        m["moons_flat"] = xy  # float64, converted to the model's float32
        m["moons_classes"] = cls[..., 0]  # size-1 axis left out
        step = 0
        for _ in range(2):
            for b in range(80):
                m.batch_n, m.step_n = b, step
                step += 1
                m.call("train_step")
        assert float(m["scalar_loss"]) < 0.5
        m.save("py.safetensors")
    assert (tmp_path / "c.safetensors").read_bytes() == (tmp_path / "py.safetensors").read_bytes()
