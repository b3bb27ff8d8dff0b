#!/usr/bin/python3
"""A decoder-only transformer training step (the model of
testsuite/lit/ocannl-train/Inputs/transformer.tdsl: embedding, one masked multi-head
attention block, a relu feed-forward block, residuals, log-softmax cross-entropy, SGD)
at a size a user trains on a CPU, against a PyTorch eager replica of the same step
(torch.einsum / F.* / autograd, float32), on one pinned CPU ($CPU, default 1), thread
CPU time, interleaved rounds; then both on 2 threads (wall time, needs a free second
core). Prints the median time per step and tdslc's ratio (> 1: tdslc faster).
usage: bench/transformer.py [TDSLC] [ROUNDS] [B S V D H DK DFF]"""
import math, os, statistics, sys, tempfile, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
TDSLC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tdslc"))
os.environ["TDSLC"] = TDSLC
os.environ.setdefault("TDSL_LIBRARY", os.path.join(os.path.dirname(TDSLC), "libtdslrt.so"))
import tdsl  # noqa: E402

ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
B, S, V, D, H, DK, DFF = (map(int, sys.argv[3:10]) if len(sys.argv) > 9 else (32, 64, 64, 128, 4, 32, 512))
SRC = """let vocab = %d
let seq = %d
let batch_size = %d
let d_model = %d
let num_heads = %d
let d_k = %d
let d_v = %d
let d_ff = %d
open "%s/testsuite/lit/ocannl-train/Inputs/transformer.tdsl"
let%%cd input_batch = { input_batch; b = [ batch_size; seq ]; o = [ vocab ] }
let%%cd target_batch = { target_batch; b = [ batch_size; seq ]; o = [ vocab ] }
let%%op mask = causal_mask seq
let model = decoder ()
let%%op logits = model ~mask input_batch
let%%op max_logits = logits @^^ "...|... => ...|0"
let%%op shifted = logits - max_logits
let%%op log_probs = shifted - log (exp shifted ++ "...|... => ...|0")
let%%op nll = neg ((target_batch *. log_probs) ++ "...|... => ...|0")
let%%op loss = (nll ++ "...|... => 0") /. !..(batch_size * seq)
let%%cd train_step = grad_update loss; sgd_update ~learning_rate:0.01 loss
""" % (V, S, B, D, H, DK, DK, DFF, ROOT)
PARAMS = ["model.w_embed", "model.pos_encoding", "mha.w_q", "mha.w_k", "mha.w_v", "mha.w_o", "ffn.w", "ffn.b",
          "ffn.w_out", "model.w_out"]

work = tempfile.mkdtemp(prefix="tfm-")
src = os.path.join(work, "transformer.tdsl")
open(src, "w").write(SRC)
t0 = time.perf_counter()
m = tdsl.load(tdsl.compile(src, out=os.path.join(work, "t.so"), O=3))
compile_s = time.perf_counter() - t0
m.init(seed=1)
rng = np.random.default_rng(0)
eye = np.eye(V, dtype=np.float32)
x = eye[rng.integers(0, V, (B, S))]
y = eye[rng.integers(0, V, (B, S))]
m["input_batch"], m["target_batch"] = x, y
names = {n: n for n in PARAMS}
P = {n: torch.tensor(np.array(m[n]), requires_grad=True) for n in PARAMS}
X, Y = torch.tensor(x), torch.tensor(y)
mask = (torch.arange(S)[:, None] >= torch.arange(S)[None, :])[None, :, :, None]
neg = torch.tensor(-1e9)


def torch_step():
    emb = X @ P["model.w_embed"].T + P["model.pos_encoding"]
    q, k, v = (torch.einsum("bsi,hdi->bshd", emb, P["mha.w_" + n]) for n in "qkv")
    scores = torch.einsum("bshd,bthd->bsth", q, k) / math.sqrt(DK)
    attn = torch.softmax(torch.where(mask, scores, neg), 2)
    att = torch.einsum("bsth,bthe->bshe", attn, v)
    x1 = emb + torch.einsum("bshe,ohe->bso", att, P["mha.w_o"])
    x2 = x1 + F.relu(x1 @ P["ffn.w"].T + P["ffn.b"]) @ P["ffn.w_out"].T
    logits = x2 @ P["model.w_out"].T
    loss = -(Y * torch.log_softmax(logits, -1)).sum() / (B * S)
    loss.backward()
    with torch.no_grad():
        for p in P.values():
            p -= 0.01 * p.grad
            p.grad = None
    return float(loss)


# the same first loss: the replica is the same model
l_torch = torch_step()
m.call("train_step")
l_tdsl = float(np.asarray(m["loss"]).reshape(-1)[0])
assert abs(l_torch - l_tdsl) <= 1e-4 * max(1.0, abs(l_torch)), (l_torch, l_tdsl)


def timed(f, reps, clock):
    t = clock()
    for _ in range(reps):
        f()
    return (clock() - t) / reps


def compare(threads, clock):
    torch.set_num_threads(threads)
    m.set_num_threads(threads)
    fa, fb = (lambda: m.call("train_step")), torch_step
    fa(), fb()
    t = time.perf_counter(); fa(); one = time.perf_counter() - t
    reps = max(1, int(0.2 / max(one, 1e-6)))
    ta, tb = [], []
    for _ in range(ROUNDS):
        ta.append(timed(fa, reps, clock)); tb.append(timed(fb, reps, clock))
    r = [b / a for a, b in zip(ta, tb)]
    print("%d thread%s: tdslc %.2f ms, torch eager %.2f ms: %.2fx (%.2f-%.2f)" % (
        threads, "s" if threads > 1 else "", statistics.median(ta) * 1e3, statistics.median(tb) * 1e3,
        statistics.median(r), min(r), max(r)), flush=True)


print("transformer step: batch %d, seq %d, vocab %d, d_model %d, heads %d, d_k %d, d_ff %d; -O3 compile %.2f s; "
      "first loss %.5f (torch %.5f); load %s" % (B, S, V, D, H, DK, DFF, compile_s, l_tdsl, l_torch, os.getloadavg()))
os.sched_setaffinity(0, {int(os.environ.get("CPU", "1"))})
compare(1, time.thread_time)
os.sched_setaffinity(0, set(range(os.cpu_count())))
compare(2, time.perf_counter)
