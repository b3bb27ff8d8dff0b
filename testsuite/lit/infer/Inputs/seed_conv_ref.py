# numpy reference for seed_conv.tdsl: 1-D convolution with stride, dilation and both padding
# modes (tdsl(7) rule 6: padded = left pad (dilation*(kernel-1))//2, output = input//stride;
# valid = no padding, input = stride*(output-1) + dilation*(kernel-1) + 1). Prints NAME VALUES.
import numpy as np

def conv(x, k, stride, dil, padded):
    n, K = len(x), len(k)
    o, off = (n // stride, (dil * (K - 1)) // 2) if padded else ((n - dil * (K - 1) - 1) // stride + 1, 0)
    out = np.zeros(o)
    for i in range(o):
        for j in range(K):
            p = stride * i + dil * j - off
            if 0 <= p < n:
                out[i] += x[p] * k[j]
    return out

x, k3, k4 = np.arange(10.0), np.arange(3.0), np.arange(4.0)
for name, v in [("p1", conv(x, k3, 2, 1, True)), ("p2", conv(x, k3, 1, 2, True)), ("p4", conv(x, k4, 1, 1, True)),
                ("p5", conv(x, k4, 2, 3, True)), ("v1", conv(np.arange(11.0), k3, 3, 2, False)),
                ("v2", conv(x, k4, 1, 3, False))]:
    print(name, ",".join("%g" % e for e in v))
