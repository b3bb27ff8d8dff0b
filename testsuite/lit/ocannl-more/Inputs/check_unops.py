"""Oracle for primitive_ops.tdsl: reads one --run's --json lines on stdin (xs: the point in
[-5, 5], xp: the same point mapped onto [0.1, 5], then f_OP and x_OP.grad per primitive) and
checks each value and derivative against PyTorch autograd at that point. Prints
"N ops ok", or the first mismatch."""
import json
import sys
import torch

got = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        got[o["name"]] = o["values"]
wrong = [n for n, v in got.items() if len(v) != 1]
if wrong:
    print("not one point:", ", ".join(sorted(wrong)))
    sys.exit(0)

ops = {
    "relu": (torch.relu, "xs"), "sat01": (lambda t: torch.clamp(t, 0.0, 1.0), "xs"),
    "exp": (torch.exp, "xs"), "exp2": (torch.exp2, "xs"), "sin": (torch.sin, "xs"),
    "cos": (torch.cos, "xs"), "tanh": (torch.tanh, "xs"), "neg": (torch.neg, "xs"),
    "log": (torch.log, "xp"), "log2": (torch.log2, "xp"), "sqrt": (torch.sqrt, "xp"),
    "recip": (torch.reciprocal, "xp"), "recip_sqrt": (torch.rsqrt, "xp"),
}
bad = []
for name, (f, src) in ops.items():
    x = torch.tensor(got[src][0], dtype=torch.float64, requires_grad=True)
    y = f(x)
    y.backward()
    want_f, want_g = y.item(), x.grad.item()
    gf, gg = got["f_" + name][0], got["x_" + name + ".grad"][0]
    tol = lambda w: 1e-5 * max(1.0, abs(w))
    if abs(gf - want_f) > tol(want_f) or abs(gg - want_g) > tol(want_g):
        bad.append("%s at %g: got %g, %g want %g, %g" % (name, x.item(), gf, gg, want_f, want_g))
print(bad[0] if bad else "%d ops ok" % len(ops))
