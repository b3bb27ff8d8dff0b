"""Oracle for composite_param_init.tdsl: after one SGD step (learning rate 0.01) on
sum (w *. w), w.grad holds 2 w_old and w = w_old - 0.01 * 2 w_old = 0.98 w_old; the
initial values (2 uniform - 1) lie in [-1, 1) and are not all equal."""
import json
import sys

t = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        t[o["name"]] = o["values"]
old = [g / 2 for g in t["w.grad"]]
print("init range:", all(-1 <= v < 1 for v in old) and len(set(old)) == len(old))
print("sgd step:", all(abs(n - 0.98 * o) <= 1e-5 for n, o in zip(t["w"], old)) and len(old) == 4)
