"""Empty tensors (a dimension of size 0) end to end, against numpy and PyTorch.

Usage: empty_oracle.py TDSLC WORKDIR MODE [--precision=double]

Each case is a .tdsl program, the routines to call, and the tensors to print with their
expected values, computed here by numpy / torch (never by tdslc). MODE:
  run    tdslc --run ... --json (in process)
  so     tdslc -o CASE.so, then the Python package (tdsl.Model) opens it, calls the
         routines and reads numpy views
  cuda   --backend=cuda --run under the emulation (the --emit-cuda source compiled as
         host C with testsuite/cuda/shim.h, TDSL_CUDA_EMULATE)
  check  tdslc --check -O3 (scheduled code against the naive loops) on every case
Prints PASS/FAIL per case, then ALL-OK or the number of failures (exit 1)."""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
tdslc, work, mode = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
extra = sys.argv[4:]
os.makedirs(work, exist_ok=True)
dbl = torch.float64


def E(*shape):
    return np.zeros(shape)


def ein(spec, *xs):
    """torch.einsum on float64 tensors (the corner cases of PyTorch's test_linalg.py)."""
    return torch.einsum(spec, *[torch.tensor(np.asarray(x, dtype=np.float64)) for x in xs]).numpy()


def semiring_fold(op, neutral, arr, axis):
    """A reduction as the fold of its accumulator from the neutral element (numpy's max
    and min refuse empty axes; the tropical semiring's neutral elements are -inf, +inf)."""
    arr = np.asarray(arr, dtype=np.float64)
    out = np.full(np.delete(arr.shape, axis), neutral)
    for k in range(arr.shape[axis]):
        out = op(out, np.take(arr, k, axis=axis))
    return out


def grads(build):
    """build(params) -> loss; returns {name + '.grad': gradient} by torch autograd."""
    ps = {}
    loss = build(ps)
    loss.backward()
    return {k + ".grad": v.grad.numpy() for k, v in ps.items()}


def param(ps, name, arr):
    t = torch.tensor(np.asarray(arr, dtype=np.float64), dtype=dbl, requires_grad=True)
    ps[name] = t
    return t


W3 = [1.0, -2.0, 3.0]


def g_compose(ps):
    a, b, p = param(ps, "a", np.ones((3, 0))), param(ps, "b", np.ones(0)), param(ps, "p", [1.0, 2.0, 3.0])
    return ((a @ b + p) * torch.tensor(W3, dtype=dbl)).sum()


def g_sum_empty(ps):
    v, q = param(ps, "v", np.ones((2, 0))), param(ps, "q", [1.5, 2.0])
    return (v.sum(1) * q + q).sum()


def g_bcast(ps):
    x, y = param(ps, "x", [[1.0, 2.0, 3.0]]), param(ps, "y", np.ones((0, 3)))
    return ((x + y) * 2.0).sum() + (x * x).sum()


# (name, program, calls, {tensor: expected})
CASES = [
    # PyTorch test_linalg.py test_einsum_corner_cases
    ("torch_i", 'let%op r = [ ] ++ "i=>i"', [], {"r": ein("i", [])}),
    ("torch_ij_j", 'let%op r = [ [ ]; [ ] ] ++ "ij=>j"', [], {"r": ein("i j -> j", E(2, 0))}),
    ("torch_ij_i", 'let%op r = [ [ ]; [ ] ] ++ "ij=>i"', [], {"r": ein("ij->i", E(2, 0))}),
    ("torch_ijk_k", 'let%op r = [ [ [ ]; [ ] ] ] +* "ijk;k=>ij" [ ]', [],
     {"r": ein("ijk,k->ij", E(1, 2, 0), E(0))}),
    # numpy
    ("np_sum", 'let%op a = range_of_shape ~output_dims:[ 0; 3 ] ()\nlet%op r = a ++ "ij=>"', [],
     {"r": np.einsum("ij->", np.ones((0, 3)))}),
    ("np_sum_cols", 'let%op a = range_of_shape ~output_dims:[ 0; 3 ] ()\nlet%op r = a ++ "ij=>j"', [],
     {"r": np.einsum("ij->j", np.ones((0, 3)))}),
    ("np_matmul_k0", 'let%op a = { a = 1.; o = [ 2; 0 ] }\nlet%op b = { b = 2.; o = [ 0; 3 ] }\n'
     'let%op r = a +* "ik;kj=>ij" b', [], {"r": np.ones((2, 0)) @ np.ones((0, 3))}),
    ("np_compose_k0", 'let%op a = { a = 1.; o = [ 2 ]; i = [ 0 ] }\nlet%op b = { b = 1.; o = [ 0 ]; i = [ 3 ] }\n'
     'let%op r = a * b', [], {"r": np.ones((2, 0)) @ np.ones((0, 3))}),
    ("np_outer", 'let%op r = range 2 +* "i;j=>ij" range 0', [], {"r": np.outer(np.arange(2.0), np.arange(0.0))}),
    ("np_outer_sum", 'let%op r = range 0 +++ "i;j=>ij" range 3', [],
     {"r": np.add.outer(np.arange(0.0), np.arange(3.0))}),
    ("np_bcast_0_1", 'let%op a = range_of_shape ~output_dims:[ 0; 3 ] ()\n'
     'let%op b = range_of_shape ~output_dims:[ 1; 3 ] ()\nlet%op r = a + b', [],
     {"r": np.zeros((0, 3)) + np.arange(3.0).reshape(1, 3)}),
    ("np_pointwise", 'let%op r = relu (range 0) *. exp (range 0)', [], {"r": np.maximum(np.arange(0.0), 0)}),
    ("np_literal_2_0", 'let%op r = [ [ ]; [ ] ]', [], {"r": np.array([[], []])}),
    ("np_stack", 'let%op r = [ range 0; range 0 ]', [], {"r": np.stack([np.arange(0.0), np.arange(0.0)])}),
    ("np_init_literal", 'let%op w = { w = [ ] }\nlet%op r = [ w; w ] ++ "ij=>i"', [],
     {"r": np.stack([np.zeros(0), np.zeros(0)]).sum(1)}),
    ("np_batch_empty", 'let%op x = { x = 1.; b = [ 0 ]; o = [ 2 ] }\nlet%op r = x ++ "b|i=>i"', [],
     {"r": np.ones((0, 2)).sum(0)}),
    # the accumulators' neutral elements over an empty axis
    ("acc_max", 'let%op r = [ [ ]; [ ] ] @^^ "ij=>i"', [],
     {"r": semiring_fold(np.maximum, -np.inf, E(2, 0), 1)}),
    ("acc_prod_min", 'let%op x = [ [ ]; [ ] ]\nlet%cd pr = { pr; o = [ 2 ] } =:* x ~logic:"ij=>i"\n'
     'let%cd mn = { mn; o = [ 2 ] } =:@- x ~logic:"ij=>i"', ["pr", "mn"],
     {"pr": semiring_fold(np.multiply, 1.0, E(2, 0), 1), "mn": semiring_fold(np.minimum, np.inf, E(2, 0), 1)}),
    # gradients (torch autograd); loss = sum(f * weights) through grad_update
    ("grad_compose", 'let%op a = { a = 1.; o = [ 3 ]; i = [ 0 ] }\nlet%op b = { b = 1.; o = [ 0 ] }\n'
     'let%op p = { p = [ 1.; 2.; 3. ] }\nlet%op f = (a * b) + p\n'
     'let%op loss = (f *. [ 1.; -2.; 3. ]) ++ "i=>"\nlet%cd step = grad_update loss', ["step"],
     dict(grads(g_compose), loss=np.array(g_compose({}).item()))),
    ("grad_sum_empty", 'let%op v = { v = 1.; o = [ 2; 0 ] }\nlet%op q = { q = [ 1.5; 2. ] }\n'
     'let%op loss = ((v ++ "ij=>i") *. q + q) ++ "i=>"\nlet%cd step = grad_update loss', ["step"],
     dict(grads(g_sum_empty), loss=np.array(g_sum_empty({}).item()))),
    ("grad_bcast", 'let%op x = { x = [ [ 1.; 2.; 3. ] ] }\nlet%op y = { y = 1.; o = [ 0; 3 ] }\n'
     'let%op loss = ((x + y) *. !.2. ++ "ij=>") + ((x *. x) ++ "ij=>")\nlet%cd step = grad_update loss', ["step"],
     dict(grads(g_bcast), loss=np.array(g_bcast({}).item()))),
]


def run(cmd, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("TDSL_CUDA_EMULATE", None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, timeout=600)


def from_json(out):
    got = {}
    for line in out.splitlines():
        o = json.loads(line)
        shape = tuple(o["batch"] + o["output"] + o["input"])
        got[o["name"]] = np.array(o["values"], dtype=np.float64).reshape(shape)
    return got


def from_python(so, calls, names):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("TDSL_LIBRARY", os.path.join(ROOT, "build", "libtdslrt.so"))
    import tdsl
    with tdsl.Model(so) as m:
        m.init(0)
        for c in calls or [n + ".forward" for n in names if not n.endswith(".grad")]:
            m.call(c)
        return {n: np.array(m[n], dtype=np.float64) for n in names}


def compare(want, got):
    for n, w in want.items():
        w = np.asarray(w, dtype=np.float64)
        if n not in got:
            return "%s not printed" % n
        g = got[n]
        if g.shape != w.shape:
            return "%s: shape %s, expected %s" % (n, g.shape, w.shape)
        if not np.allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True):
            return "%s: %s, expected %s" % (n, g.tolist(), w.tolist())
    return None


def one(name, prog, calls, want):
    src = os.path.join(work, name + ".tdsl")
    with open(src, "w") as f:
        f.write(prog + "\n")
    names = list(want)
    args = [src] + extra
    for c in calls:
        args += ["--call", c]
    for n in names:
        args += ["--print", n]
    if mode == "check":
        p = run([tdslc, "--check", "-O3", src] + extra)
        return None if p.returncode == 0 else "--check: exit %d: %s" % (p.returncode, (p.stdout + p.stderr).strip())
    if mode == "so":
        so = os.path.join(work, name + ".so")
        p = run([tdslc, src, "-o", so] + extra)
        if p.returncode:
            return "compile: exit %d: %s" % (p.returncode, p.stderr.strip())
        try:
            return compare(want, from_python(so, calls, names))
        except Exception as ex:  # reported as the case's failure
            return "python: %r" % ex
    env = None
    cmd = [tdslc, "--run", "--json"] + args
    if mode == "cuda":
        p = run([tdslc, "--backend=cuda", "--emit-cuda", src] + extra)
        if p.returncode:
            return "--emit-cuda: exit %d: %s" % (p.returncode, p.stderr.strip())
        cu, lib = os.path.join(work, name + ".cu"), os.path.join(work, name + ".emu.so")
        with open(cu, "w") as f:
            f.write(p.stdout)
        p = run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", os.path.join(ROOT, "testsuite", "cuda", "shim.h"),
                 "-x", "c", cu, "-shared", "-fPIC", "-o", lib, "-lm"])
        if p.returncode:
            return "the kernels do not compile as host C: " + p.stderr.strip()[-2000:]
        env = {"TDSL_CUDA_EMULATE": lib}
        cmd = [tdslc, "--backend=cuda", "--run", "--json"] + args
    p = run(cmd, env)
    if p.returncode:
        return "exit %d: %s" % (p.returncode, p.stderr.strip())
    return compare(want, from_json(p.stdout))


fails = 0
for name, prog, calls, want in CASES:
    why = one(name, prog, calls, want)
    print("%s: %s [%s]%s" % ("FAIL" if why else "PASS", name, mode, ": " + why if why else ""))
    fails += bool(why)
print("ALL-OK" if not fails else "%d FAILED" % fails)
sys.exit(1 if fails else 0)
