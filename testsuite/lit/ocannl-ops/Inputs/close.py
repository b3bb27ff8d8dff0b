"""Compares the values of tdslc --run --json output (stdin) with expected values within a
tolerance. Usage: close.py [--tol T] NAME=v1,v2,... | NAME=all:v ...  (all:v: every value
is v) | NAME=lt:v (every value finite and below v).  Expected values come from the
test's oracle (OCANNL's .expected, numpy or torch), written in the test's comments. Prints
"NAME ok" per match, "NAME BAD got ... want ..." otherwise, and "ALL-OK" when all matched."""
import json
import sys

args = sys.argv[1:]
tol = 1e-4
if args and args[0] == "--tol":
    tol = float(args[1])
    args = args[2:]
want = {}
for a in args:
    name, vals = a.split("=", 1)
    if vals.startswith("all:") or vals.startswith("lt:"):
        kind, v = vals.split(":", 1)
        want[name] = (kind, float(v))
    else:
        want[name] = [float(v) for v in vals.split(",")]
got = {}
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        obj = json.loads(line)
        got[obj["name"]] = obj["values"]
bad = 0
for name, w in want.items():
    g = got.get(name)
    if isinstance(w, tuple) and w[0] == "lt":
        if g and all(abs(x) < float("inf") and x < w[1] for x in g):
            print(name, "ok")
        else:
            bad += 1
            print(name, "BAD got", g, "want below", w[1])
        continue
    if isinstance(w, tuple) and g:
        w = [w[1]] * len(g)
    if g is not None and len(g) == len(w) and all(
            abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(g, w)):
        print(name, "ok")
    else:
        bad += 1
        print(name, "BAD got", g, "want", w)
if not bad:
    print("ALL-OK")
