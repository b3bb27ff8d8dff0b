"""The standard library's losses, normalization and optimizers against PyTorch, in
float64: training runs compared loss by loss, step by step."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

STEPS = 6
rng = np.random.default_rng(16)
XS = rng.uniform(-2, 2, (8, 3))
TS = rng.uniform(-1, 1, (8, 2))
CLASSES = np.array([0, 2, 1, 1, 0, 2, 2, 1], dtype=np.float64)


def torch_params(m, names):
    return {n: torch.tensor(m[n].copy(), dtype=torch.float64, requires_grad=True) for n in names}


def run_both(m, params, torch_loss, opt, steps=STEPS):
    """Calls train_step `steps` times; PyTorch does the same with `opt` on copies of the
    initial parameters. Returns both loss sequences and the final parameters."""
    p = torch_params(m, params)
    o = opt(list(p.values()))
    ours, theirs = [], []
    for _ in range(steps):
        m.call("train_step")
        ours.append(float(m["loss"].reshape(-1)[0]))
        o.zero_grad()
        loss = torch_loss(p)
        loss.backward()
        o.step()
        theirs.append(loss.item())
    return np.array(ours), np.array(theirs), p


MLP = """
let%cd x = { x; b = [ 8 ]; o = [ 3 ] }
let%cd target = { target; b = [ 8 ]; o = [ 2 ] }
let%op h = relu (({ w1; o = [ 6 ] } * x) + { b1 = 0.1; o = [ 6 ] })
let%op y = ({ w2; o = [ 2 ] } * h) + { b2 = 0.; o = [ 2 ] }
let%op loss = mse y target
let%cd train_step = grad_update loss; OPT ~learning_rate:0.05 OPTARGS loss
"""


def mlp_loss(p):
    x = torch.tensor(XS)
    h = torch.relu(x @ p["w1"].T + p["b1"])
    return F.mse_loss(h @ p["w2"].T + p["b2"], torch.tensor(TS))


@pytest.mark.parametrize("opt,args,torch_opt", [
    ("adam_update", "", lambda ps: torch.optim.Adam(ps, lr=0.05)),
    ("adam_update", "~beta1:0.8 ~beta2:0.99 ~weight_decay:0.01",
     lambda ps: torch.optim.Adam(ps, lr=0.05, betas=(0.8, 0.99), weight_decay=0.01)),
    ("adamw_update", "~weight_decay:0.1", lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1)),
])
def test_adam_mlp_matches_pytorch(build, opt, args, torch_opt):
    m = build(MLP.replace("OPTARGS", args).replace("OPT", opt), precision="double")
    m.init(11)
    m["x"], m["target"] = XS, TS
    ours, theirs, p = run_both(m, ["w1", "b1", "w2", "b2"], mlp_loss, torch_opt)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert theirs[-1] < theirs[0]  # it trains
    for n in p:
        np.testing.assert_allclose(m[n], p[n].detach().numpy(), rtol=1e-9, atol=1e-12)


CLASSIFIER = """
let%cd x = { x; b = [ 8 ]; o = [ 3 ] }
let%cd labels = { labels; b = [ 8 ]; o = [ 1 ] }
let%op logits = ({ w; o = [ 3 ] } * x) + { b = 0.; o = [ 3 ] }
let%op loss = cross_entropy_indices ~classes:3 logits labels
let%cd train_step = grad_update loss; OPT
"""


def ce_loss(p):
    logits = torch.tensor(XS) @ p["w"].T + p["b"]
    return F.cross_entropy(logits, torch.tensor(CLASSES, dtype=torch.long))


@pytest.mark.parametrize("opt,torch_opt", [
    ("sgd_update ~learning_rate:0.5 loss", lambda ps: torch.optim.SGD(ps, lr=0.5)),
    ("adam_update ~learning_rate:0.1 loss", lambda ps: torch.optim.Adam(ps, lr=0.1)),
])
def test_softmax_cross_entropy_classifier_matches_pytorch(build, opt, torch_opt):
    m = build(CLASSIFIER.replace("OPT", opt), precision="double")
    m.init(3)
    m["x"], m["labels"] = XS, CLASSES.reshape(8, 1)
    ours, theirs, _ = run_both(m, ["w", "b"], ce_loss, torch_opt)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert theirs[-1] < theirs[0]


FUNCS = """
let%cd a = { a; b = [ 4 ]; o = [ 3; 5 ] }
let%cd t = { t; b = [ 4 ]; o = [ 3; 5 ] }
let%op sm_last = softmax ~spec:"b|i,j => b|i,0" a
let%op sm_all = softmax a
let%op lsm_mid = log_softmax ~spec:"b|i,j => b|0,j" a
let%op ce_probs = cross_entropy ~spec:"b|i,j => b|i,0" a t
let%op err = mse a t
let%op ln = layer_norm () a
let%op ln_last = layer_norm ~spec:"b|i,j => b|i,0" ~eps:0.001 () a
let%cd idx = { idx; b = [ 4 ]; o = [ 1 ] }
let%op onehot = one_hot ~classes:4 idx
"""


def test_functions_match_pytorch(build):
    m = build(FUNCS, precision="double")
    m.init(0)
    a = rng.normal(size=(4, 3, 5)) * 3
    t = torch.softmax(torch.tensor(rng.normal(size=(4, 3, 5))), -1).numpy()
    m["a"], m["t"] = a, t
    m["idx"] = np.array([[3.0], [0.0], [2.0], [3.0]])
    A, T = torch.tensor(a), torch.tensor(t)
    want = {
        "sm_last": torch.softmax(A, -1),
        "sm_all": torch.softmax(A.reshape(4, 15), -1).reshape(4, 3, 5),
        "lsm_mid": torch.log_softmax(A, 1),
        "ce_probs": F.cross_entropy(A.permute(0, 2, 1), T.permute(0, 2, 1)),
        "err": F.mse_loss(A, T),
        "ln": F.layer_norm(A, (3, 5)),
        "ln_last": F.layer_norm(A, (5,), eps=0.001),
        "onehot": F.one_hot(torch.tensor([3, 0, 2, 3]), 4).double(),
    }
    for name, w in want.items():
        m.call(name + ".forward")
        np.testing.assert_allclose(m[name].reshape(w.shape), w.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_layer_norm_gain_and_bias_gradients(build):
    """The gain and bias (the shape of x's non-batch axes) are parameters: after an init
    that is not the identity, their gradients and x's match PyTorch's."""
    src = FUNCS + 'let%op lnl = (ln *. t) ++ "...|...->... => 0"\nlet%cd ln_step = grad_update lnl\n'
    m = build(src, precision="double")
    m.init(0)
    assert [n for n in m.params if "ln_" in n] == ["a.ln_gain", "a.ln_bias", "a.ln_gain_2", "a.ln_bias_2"]
    a, t = rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 3, 5))
    g, b = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    m["a"], m["t"], m["a.ln_gain"], m["a.ln_bias"] = a, t, g, b
    m.call("ln_step")
    G, B = torch.tensor(g, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss = (F.layer_norm(torch.tensor(a), (3, 5), weight=G, bias=B) * torch.tensor(t)).sum()
    loss.backward()
    np.testing.assert_allclose(m["lnl"].reshape(()), loss.item(), rtol=1e-12)
    np.testing.assert_allclose(m["a.ln_gain.grad"], G.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m["a.ln_bias.grad"], B.grad.numpy(), rtol=1e-10, atol=1e-12)
