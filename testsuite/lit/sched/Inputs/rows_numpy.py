"""Row fusion (src/sched_fuse.c row_fusable): a routine running softmax, log_softmax, a
column sum of shifted exps and the gradient of sum(softmax(x) * w), on an N x N batch
(rows fuse from N = 768 on, not at N = 64), against numpy. usage: rows_numpy.py TDSLC
WORKDIR N [FLAGS...] (FLAGS --emit-c: the C rendering compiled by cc, on 2 threads);
prints "N results checked, M mismatches"."""
import os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import emit_c_results, load_args, run_and_compare  # noqa: E402

tdslc, work, n, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
os.makedirs(work, exist_ok=True)
src = os.path.join(work, "rows%d.tdsl" % n)
with open(src, "w") as f:
    f.write(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.tdsl")).read().replace("768", str(n)))
rng = np.random.default_rng(11)
ins = {"x": rng.uniform(-8, 8, (n, n)).astype(np.float32), "w": rng.uniform(-1, 1, (n, n)).astype(np.float32)}
x, w = (v.astype(np.float64) for v in ins.values())
ins["a"] = ins["w"]
z = x - x.max(axis=1, keepdims=True)
e = np.exp(z)
s = e / e.sum(axis=1, keepdims=True)
want = {"s": s, "ls": z - np.log(e.sum(axis=1, keepdims=True)), "cs": e.sum(axis=0),
        "x.grad": s * (w - (s * w).sum(axis=1, keepdims=True)), "u": w - w.max(axis=1)[None, :]}
if flags != ["--emit-c"]:
    run_and_compare([tdslc, "--run", "--json", src, "--call", "step"] + load_args(work, ins) + flags, want, 1e-5)
got, _ = emit_c_results(tdslc, src, ins, ["step"], want, threads=2)
bad = 0
for k, v in want.items():
    if not np.max(np.abs(got[k] - v.ravel())) <= 1e-5 * (1 + np.max(np.abs(v))):
        print("%s: differs" % k)
        bad += 1
print("%d results checked, %d mismatches" % (len(want), bad))
sys.exit(1 if bad else 0)
