"""Oracle for online_softmax.tdsl: reads the --json lines of probs, out, loss and x.grad on
stdin and recomputes them with PyTorch: x = 0.1 * range (7x4), scores = x x^T, the causal
mask with the first 3 keys masked for queries 3.. (masked scores -inf), softmax over the
keys, out = probs x, loss = sum(out^2), and x's gradient by autograd. Prints one line per
tensor, plus whether every value is finite."""
import json
import math
import sys
import torch

got = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        got[o["name"]] = o["values"]

seq, d, prefix = 7, 4, 3
x = (0.1 * torch.arange(seq * d, dtype=torch.float64).reshape(seq, d)).requires_grad_(True)
mask = torch.tensor([[1.0 if (s >= t and (t >= prefix or s < prefix)) else 0.0
                      for t in range(seq)] for s in range(seq)], dtype=torch.float64)
scores = x @ x.T
masked = torch.where(mask > 0, scores, torch.tensor(-math.inf, dtype=torch.float64))
probs = torch.softmax(masked, dim=1)
out = probs @ x
loss = (out * out).sum()
loss.backward()
want = {"probs": probs, "out": out, "loss": loss.reshape(1), "x.grad": x.grad}
for name, w in want.items():
    v = got.get(name)
    w = w.detach().reshape(-1)
    ok = v is not None and len(v) == w.numel() and torch.allclose(
        torch.tensor(v, dtype=torch.float64), w, rtol=1e-4, atol=1e-5)
    print(name, "ok" if ok else "BAD %r vs %r" % (v, w.tolist()))
print("finite", all(math.isfinite(x) for v in got.values() for x in v))
