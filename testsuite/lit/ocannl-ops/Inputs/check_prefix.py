"""Oracle for uniform_odd_sizes.tdsl: the first file holds the --json value of u for the
16-cell reference, each further FILE:N the value of u with N cells. Checks that each has
exactly N values in [0, 1), equal to the reference's first N (the stream depends only on
the flat index), and prints one line per file."""
import json
import sys

def load(path):
    with open(path) as f:
        return [json.loads(line)["values"] for line in f if line.startswith("{")][0]

ref = load(sys.argv[1])
for arg in sys.argv[2:]:
    path, n = arg.rsplit(":", 1)
    v = load(path)
    ok = len(v) == int(n) and all(0 <= x < 1 for x in v) and v == ref[:len(v)]
    print("n=%s" % n, "ok" if ok else "BAD %r" % v)
