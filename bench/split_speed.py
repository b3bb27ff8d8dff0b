#!/usr/bin/env python3
"""Speed of the code a split compile generates (tdslc -j): the training step of a deep
MLP (bench/gen_mlp.py) compiled as groups (the default: kernels at the -O level, glue
at -O1, storage through base offsets) against the same model compiled in one context
(--no-split). Interleaved rounds, pinned to one CPU, thread CPU time per step.
usage: split_speed.py TDSLC [LAYERS] [ROUNDS]   (prints: layers, us/step each, ratio)"""
import os
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "python"))
os.environ.setdefault("TDSL_LIBRARY", os.path.join(root, "build", "libtdslrt.so"))
import numpy as np  # noqa: E402
import tdsl  # noqa: E402


def main():
    tdslc = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory(prefix="tdslc-split-") as d:
        run(tdslc, layers, rounds, d)


def run(tdslc, layers, rounds, d):
    src = os.path.join(d, "mlp.tdsl")
    with open(src, "w") as f:
        f.write(subprocess.run([sys.executable, os.path.join(root, "bench", "gen_mlp.py"), str(layers)],
                               capture_output=True, text=True, check=True).stdout)
    models = {}
    for kind, extra in (("split", []), ("one context", ["--no-split"])):
        so = os.path.join(d, kind.replace(" ", "_") + ".so")
        subprocess.run([tdslc, "--no-cache", src, "-o", so] + extra, check=True)
        m = tdsl.load(so)
        m.init(1)
        rng = np.random.default_rng(0)
        m["xs"] = (rng.standard_normal(m["xs"].shape) * 0.1).astype(np.float32)
        m["ys"] = np.ones(m["ys"].shape, np.float32)
        models[kind] = m
    steps = 2000
    best = {k: [] for k in models}
    for _ in range(rounds):
        for k, m in models.items():
            t = time.thread_time()
            for _ in range(steps):
                m.call("train_step")
            best[k].append((time.thread_time() - t) / steps * 1e6)
    med = {k: sorted(v)[len(v) // 2] for k, v in best.items()}
    print("MLP %d layers train_step: split %.1f us, one context %.1f us, ratio %.3f (median of %d)"
          % (layers, med["split"], med["one context"], med["one context"] / med["split"], rounds))


if __name__ == "__main__":
    main()
