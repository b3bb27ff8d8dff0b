"""Oracle for affine_view_executed.tdsl: r (uniform, 2x9 cells) holds 18 distinct values in
[0, 1); y = r + x with x = 10, 20, ..., 180 and z = 2r in every cell, w = y + z."""
import json
import sys

t = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        t[o["name"]] = o["values"]
r, y, z, w = t["r"], t["y"], t["z"], t["w"]
x = [10.0 * (i + 1) for i in range(18)]
close = lambda a, b: abs(a - b) <= 1e-5 * (1 + abs(b))
print("range:", all(0 <= v < 1 for v in r) and len(r) == 18)
print("distinct:", len(set(r)) == 18)
print("y:", len(y) == 18 and all(close(y[i], r[i] + x[i]) for i in range(18)))
print("z:", len(z) == 18 and all(close(z[i], 2 * r[i]) for i in range(18)))
print("w:", len(w) == 18 and all(close(w[i], 3 * r[i] + x[i]) for i in range(18)))
