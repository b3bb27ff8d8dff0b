"""numpy oracle for mlp_names.tdsl. `gen PATH` writes one-hot contexts (batch 2, block 3,
vocabulary 5; token ids (2b + s) mod 5) as float32; otherwise reads tdslc --run --json
lines and recomputes out = w2 tanh(sum_{s,e} (c x)[b,s,e] w1[h,s,e] + b1) + b2."""
import sys

import numpy as np

import printed

if sys.argv[1] == "gen":
    x = np.zeros((2, 3, 5), dtype=np.float32)
    for b in range(2):
        for s in range(3):
            x[b, s, (2 * b + s) % 5] = 1
    x.tofile(sys.argv[2])
    sys.exit(0)
t = printed.arrays(sys.stdin)
x = t["input_batch"]                       # b s v
emb = np.einsum("ev,bsv->bse", t["c"], x)  # c: e v
hid = np.tanh(np.einsum("bse,hse->bh", emb, t["w1"]) + t["b1"])
out = np.einsum("oh,bh->bo", t["w2"], hid) + t["b2"]
err = np.abs(out - t["out"]).max()
print("MLP-OK" if err < 1e-4 else "MLP-BAD max error %g" % err)
