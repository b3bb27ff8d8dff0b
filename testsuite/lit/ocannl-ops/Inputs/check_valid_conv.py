"""numpy oracle for conv_detection_boundary.tdsl: each case NAME:NSP:STRIDE names a valid
(`<+`) convolution y = NAME of x = NAME_x (batch..., NSP spatial axes, channel axes) and
k = NAME_k (output oc, input: NSP window axes, channel axes), read from tdslc --run --json
lines on stdin; prints "NAME ok" per match, else the largest difference."""
import itertools
import json
import sys

import numpy as np

t = {}
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        t[o["name"]] = (o, np.array(o["values"], dtype=np.float64))
for case in sys.argv[1:]:
    name, nsp, stride = case.split(":")
    nsp, stride = int(nsp), int(stride)
    xo, x = t[name + "_x"]
    ko, k = t[name + "_k"]
    yo, y = t[name]
    x = x.reshape(xo["batch"] + xo["output"])
    k = k.reshape(ko["output"] + ko["input"])       # oc, window..., channels...
    y = y.reshape(yo["batch"] + yo["output"])       # batch..., out spatial..., oc
    nb = len(xo["batch"])
    win = k.shape[1:1 + nsp]
    want = np.zeros(y.shape)
    for idx in itertools.product(*[range(d) for d in y.shape]):
        b, osp, oc = idx[:nb], idx[nb:nb + nsp], idx[-1]
        s = 0.0
        for w in itertools.product(*[range(d) for d in win]):
            pos = tuple(stride * o + ww for o, ww in zip(osp, w))
            s += (x[b + pos] * k[(oc,) + w]).sum()
        want[idx] = s
    err = np.abs(want - y).max() / max(1.0, np.abs(want).max())
    print(name, "ok" if err < 1e-5 else "BAD relative error %g" % err)
