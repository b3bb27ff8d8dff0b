"""Trains the moons MLP (2-H-H-1, relu, hinge loss, SGD with weight decay: the model of
bench/train_b10_h16.tdsl) for two steps with tdslc --run from loaded weights and data,
and compares the weights and the loss with the same two steps in numpy (float64): the
routine tdslc fuses (sched_fuse.c) against an oracle that knows nothing of it.
With --emit-c as the flag, the --emit-c rendering is compiled by cc and run through
libtdslrt (its parallel loops go to the runtime's pool like the gccjit model's).
usage: fusion_numpy.py TDSLC WORKDIR BATCH HIDDEN [FLAGS...]
prints "N results checked, M mismatches" (and the threads the model ran with)."""
import json, os, subprocess, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import emit_c_results, mlp_src  # noqa: E402

tdslc, work, B, H, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
os.makedirs(work, exist_ok=True)
src = os.path.join(work, "mlp_%d_%d.tdsl" % (B, H))
with open(src, "w") as f:
    f.write(mlp_src(B, H))
rng = np.random.default_rng(13)
x = rng.uniform(-1, 1, (B, 2)).astype(np.float32)
ins = {"xs": x, "ys": np.where(x[:, :1] * x[:, 1:] > 0, 1, -1).astype(np.float32),
       "w1": rng.uniform(-1, 1, (H, 2)).astype(np.float32), "b1": rng.uniform(-0.3, 0.3, H).astype(np.float32),
       "w2": rng.uniform(-0.5, 0.5, (H, H)).astype(np.float32), "b2": rng.uniform(-0.3, 0.3, H).astype(np.float32),
       "w3": rng.uniform(-1, 1, (1, H)).astype(np.float32)}
loads = []
for k, v in ins.items():
    path = os.path.join(work, "%s_%d_%d.bin" % (k, B, H))
    v.tofile(path)
    loads += ["--load", "%s=%s" % (k, path)]
p = {k: v.astype(np.float64) for k, v in ins.items()}
x, y = p["xs"], p["ys"][:, 0]
loss = None
for step in range(2):
    p1 = x @ p["w1"].T + p["b1"]
    h1 = np.maximum(p1, 0)
    p2 = h1 @ p["w2"].T + p["b2"]
    h2 = np.maximum(p2, 0)
    out = h2 @ p["w3"][0]
    m = 1 - y * out
    loss = np.maximum(m, 0).sum() / B
    dout = -y * (m > 0) / B
    g = {"w3": (dout @ h2)[None, :]}
    dp2 = dout[:, None] * p["w3"][0] * (p2 > 0)
    g["b2"], g["w2"] = dp2.sum(0), dp2.T @ h1
    dp1 = (dp2 @ p["w2"]) * (p1 > 0)
    g["b1"], g["w1"] = dp1.sum(0), dp1.T @ x
    for k in g:
        p[k] = p[k] - 0.1 * (g[k] + 0.0001 * p[k])
want = {k: p[k] for k in ("w1", "b1", "w2", "b2", "w3")}
want["scalar_loss"] = np.array([loss])
prints = []
for k in want: prints += ["--print", k]


if flags == ["--emit-c"]:
    results, threads = emit_c_results(tdslc, src, ins, ["train_step", "train_step"], want)
    print("threads %d" % threads)
else:
    out = subprocess.run([tdslc, "--run", "--json", src] + flags + loads + ["--call", "train_step", "--call", "train_step"] + prints,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit("tdslc failed: " + out.stderr)
    results = {t["name"]: t["values"] for t in map(json.loads, out.stdout.splitlines())}
bad = 0
for name, values in results.items():
    got, exp = np.array(values, dtype=np.float64), want[name].ravel()
    err = np.max(np.abs(got - exp)) if got.size == exp.size else np.inf
    tol = 1e-4 * (1 + np.max(np.abs(exp)))
    if not err <= tol:
        print("%s: max error %g > %g" % (name, err, tol))
        bad += 1
print("%d results checked, %d mismatches" % (len(want), bad))
sys.exit(1 if bad else 0)
