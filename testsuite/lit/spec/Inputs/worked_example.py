"""LANGUAGE.md section 8 (the normative worked example), run as written and checked
against numpy: init's parameters are read back, then two train_step calls on one batch
(batch_n, step_n set), and the infer routine on a host-filled point, are recomputed in
float64 (relu MLP, hinge loss averaged over the batch, SGD with weight decay 1e-4 and the
step-dependent learning rate). Usage: worked_example.py TDSLC MODEL WORKDIR."""
import json, os, subprocess, sys
import numpy as np

tdslc, model, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)
flat = rng.normal(size=(80, 10, 2)).astype("<f4")
classes = np.where(flat[..., :1] * flat[..., 1:] > 0, 1.0, -1.0).astype("<f4")
point = np.array([0.25, -0.5], dtype="<f4")
flat.tofile(os.path.join(work, "flat.bin"))
classes.tofile(os.path.join(work, "classes.bin"))
point.tofile(os.path.join(work, "point.bin"))
PARAMS = ["w1", "b1", "w2", "b2", "w3"]


def run(*args):
    p = subprocess.run([tdslc, "--run", model, "--json", "--seed", "5", *args], capture_output=True, text=True, cwd=work)
    if p.returncode:
        sys.exit("tdslc failed (%d): %s" % (p.returncode, p.stderr))
    out = {}
    for line in p.stdout.splitlines():
        o = json.loads(line)
        shape = o["batch"] + o["output"] + o["input"]
        out[o["name"]] = np.array(o["values"], dtype=np.float64).reshape(shape)
    return out


prints = sum((["--print", n] for n in PARAMS), [])
p0 = run(*prints)
check = []
# Shapes as section 8 implies: w1 2->16 is stored output-major (16, 2), and so on.
check.append(("shapes", [p0[n].shape for n in PARAMS] == [(16, 2), (16,), (16, 16), (16,), (1, 16)]))

B, S = 37, 1500
loads = ["--load", "moons_flat=flat.bin", "--load", "moons_classes=classes.bin"]
got = run(*loads, "--set", "batch_n=%d" % B, "--set", "step_n=%d" % S, "--call", "train_step", "--call", "train_step",
          *prints, "--print", "scalar_loss", "--print", "learning_rate", "--print", "w1.grad")

p = {n: p0[n].copy() for n in PARAMS}
x, c = flat[B].astype(np.float64), classes[B].astype(np.float64)
lr = 0.1 * (2 * 6400 - S) / 6400
for step in range(2):
    h1p = x @ p["w1"].T + p["b1"]; h1 = np.maximum(h1p, 0)
    h2p = h1 @ p["w2"].T + p["b2"]; h2 = np.maximum(h2p, 0)
    out = h2 @ p["w3"].T
    m = 1 - c * out
    loss = np.maximum(m, 0).sum() / 10
    d_out = -(m > 0).astype(np.float64) * c / 10
    g = {"w3": d_out.T @ h2}
    d_h2 = (d_out @ p["w3"]) * (h2p > 0)
    g["w2"], g["b2"] = d_h2.T @ h1, d_h2.sum(0)
    d_h1 = (d_h2 @ p["w2"]) * (h1p > 0)
    g["w1"], g["b1"] = d_h1.T @ x, d_h1.sum(0)
    for n in PARAMS:
        p[n] = p[n] - lr * (g[n] + 1e-4 * p[n])
check.append(("learning_rate", np.allclose(got["learning_rate"], lr, rtol=1e-6)))
# scalar_loss and the gradients are the second step's (train_step recomputes them).
check.append(("scalar_loss", np.allclose(got["scalar_loss"], loss, rtol=1e-4, atol=1e-6)))
check.append(("w1.grad", np.allclose(got["w1.grad"], g["w1"], rtol=1e-4, atol=1e-6)))
for n in PARAMS:
    check.append((n + " after two steps", np.allclose(got[n], p[n], rtol=1e-4, atol=1e-6)))

inf = run("--load", "point=point.bin", "--call", "infer", "--print", "mlp_result")
h = np.maximum(p0["w1"] @ point + p0["b1"], 0)
h = np.maximum(p0["w2"] @ h + p0["b2"], 0)
check.append(("infer", np.allclose(inf["mlp_result"], p0["w3"] @ h, rtol=1e-4, atol=1e-6)))
for what, ok in check:
    print(("OK " if ok else "FAIL ") + what)
