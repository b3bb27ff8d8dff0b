"""PyTorch oracle for the ports of OCANNL's test/training models (testsuite/lit/ocannl-train).

Usage: oracle.py TDSLC MODEL.tdsl WORKDIR NAME MODE

NAME picks the model's definition in models.py (its data, its PyTorch replica, its
learning-rate schedule and its training-run check). MODE:

  data    write the model's host inputs (with the first batch the host writes before
          each step, if it does) as WORKDIR/NAME.TENSOR.npy, for the test's
          `tdslc --check ... --load` run, and print DATA-OK.
  oracle  compile MODEL.tdsl with --precision=double -O0 (the plain loop nests), run
          `init`, copy the initial parameters into a float64 PyTorch replica of the
          same model, then run the same SGD steps on both (same batches, same learning
          rates): every step's loss, and every parameter after the last step, must agree
          to 1e-9 relative (double rounding through a few steps of these models stays
          near 1e-13; the margin covers summation order). Prints ORACLE-OK.
  train   compile MODEL.tdsl in single precision at -O2 (the scheduled code, what a
          model is built with by default) and run the model's short training run. Its
          first steps run beside a float32 replica from the same parameters: their
          losses must agree to 1e-4 relative (float32 rounding of sums of at most a few
          thousand terms in either order, n * 2^-24 < 1e-3 in the worst case and near
          sqrt(n) * 2^-24 in practice; a range problem, an overflow to inf or NaN,
          does not hide in it). Then the loss must fall as the model's check says
          (OCANNL's tests check thresholds on epoch losses). Prints TRAIN-OK.
  both    oracle, then train (one process: PyTorch is imported once).

The replica is written directly in PyTorch (torch.nn.functional, einsum, autograd) from
the model's description; it shares nothing with tdslc but the initial parameter values
and the data, both read back from the compiled model."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import models  # noqa: E402


def runtime_env(tdslc):
    os.environ["TDSLC"] = tdslc
    lib = os.path.join(os.path.dirname(tdslc), "libtdslrt.so")
    if not os.path.exists(lib):  # build/asan/tdslc: the runtime of the plain build
        lib = os.path.join(ROOT, "build", "libtdslrt.so")
    os.environ.setdefault("TDSL_LIBRARY", lib)


def compile_model(src, work, name, precision, O):
    import tdsl
    so = os.path.join(work, "%s-%s.so" % (name, precision))
    return tdsl.load(tdsl.compile(src, out=so, precision=precision, O=O))


def sgd_step(params, lr, weight_decay):
    """SGD as tdsl's sgd_update (and OCANNL's sgd_one): delta = grad + wd * p; p -= lr * delta."""
    with torch.no_grad():
        for p in params.values():
            p -= lr * (p.grad + weight_decay * p)
            p.grad = None


def set_inputs(m, data):
    for k, v in data.items():
        m[k] = v


torch = None


def replica_params(m, names, dtype):
    return {n: torch.tensor(np.array(m[n], dtype=np.float64), dtype=dtype, requires_grad=True) for n in names}


def close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * scale))


def run_tdsl_step(m, spec, k):
    for sym, val in spec.indices(k).items():
        m.set_index(sym, val)
    for name, val in spec.feed(k).items():  # the batch the host writes before this step
        m[name] = val
    m.call(spec.routine)
    return float(np.asarray(m[spec.loss]).reshape(-1)[0])


def torch_step(spec, P, data, k, dtype):
    D = {n: torch.tensor(v, dtype=dtype) for n, v in list(data.items()) + list(spec.feed(k).items())}
    loss = spec.torch_loss(P, D, spec.indices(k))
    loss.backward()
    sgd_step(P, spec.lr(k), spec.weight_decay)
    return float(loss)


def check_names(m, spec):
    got, want = sorted(m.params), sorted(getattr(spec, "model_params", spec.params))
    if got != want:
        print("FAIL: the model's parameters are", got, "the replica's", want)
        return False
    return True


def fresh_model(src, work, name, spec, data, precision, threads, dtype):
    """The compiled model initialized with the spec's inputs, and the torch replica of its
    parameters; (None, None) when the parameter names differ."""
    m = compile_model(src, work, name, precision, threads)
    m.init(spec.seed)
    if not check_names(m, spec):
        return None, None
    set_inputs(m, data)
    return m, replica_params(m, spec.params, dtype)


def main():
    tdslc, src, work, name, mode = sys.argv[1:6]
    runtime_env(os.path.abspath(tdslc))
    os.makedirs(work, exist_ok=True)
    spec = models.MODELS[name]()
    data = spec.data()
    if mode == "data":
        for k, v in list(data.items()) + list(spec.feed(0).items()):  # and the first batch
            np.save(os.path.join(work, "%s.%s.npy" % (name, k)), v)
        print("DATA-OK")
        return 0
    global torch
    models.load_torch()
    torch = models.torch
    bad = 0
    if mode in ("oracle", "both"):
        m, P = fresh_model(src, work, name, spec, data, "double", 0, torch.float64)
        if m is None:
            return 1
        for k in range(spec.oracle_steps):
            lt = run_tdsl_step(m, spec, k)
            lp = torch_step(spec, P, data, k, torch.float64)
            if not close(lt, lp, 1e-9):
                bad += 1
                print("FAIL: step %d loss: tdsl %.17g, torch %.17g" % (k, lt, lp))
        for n in spec.params:
            if not close(m[n], P[n].detach().numpy(), 1e-9):
                bad += 1
                diff = np.max(np.abs(np.asarray(m[n], np.float64) - P[n].detach().numpy()))
                print("FAIL: %s after %d steps differs by %.3g" % (n, spec.oracle_steps, diff))
        print("oracle: %d steps, %d parameters compared" % (spec.oracle_steps, len(spec.params)))
        print("ORACLE-OK" if not bad else "ORACLE-BAD")
    if mode in ("train", "both"):
        m, P = fresh_model(src, work, name, spec, data, "single", 2, torch.float32)
        if m is None:
            return 1
        losses = []
        for k in range(spec.train_steps):
            losses.append(run_tdsl_step(m, spec, k))
            if k < spec.oracle_steps:
                lp = torch_step(spec, P, data, k, torch.float32)
                if not close(losses[k], lp, 1e-4):
                    bad += 1
                    print("FAIL: step %d loss in single precision %.9g, torch (float32) %.9g" % (k, losses[k], lp))
        if not all(np.isfinite(losses)):
            bad += 1
            print("FAIL: a loss is not finite")
        ok, msg = spec.check_training(np.array(losses), m)
        print(msg)
        if not ok:
            bad += 1
        print("TRAIN-OK" if not bad else "TRAIN-BAD")
    if mode not in ("oracle", "train", "both"):
        print("unknown mode", mode)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
