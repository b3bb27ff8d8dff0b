"""numpy oracle for check_slice_shapes.tdsl. `gen PATH` writes the images (2*4*3*3 float32
values 0..71, batch 2,4, output 3,3,1) to PATH; otherwise reads tdslc --run --json lines
(images, the kernel 3,3,1->1, the bias, the result for batch_n = N given as argument) and
checks a padded 3x3 convolution of batch row N (left padding 1, out-of-range skipped)."""
import sys

import numpy as np

import printed

if sys.argv[1] == "gen":
    np.arange(72, dtype=np.float32).tofile(sys.argv[2])
    sys.exit(0)
n = int(sys.argv[1])
t = printed.arrays(sys.stdin)
x = t["images"][n]                         # 4, 3, 3, 1
k = t["batch_images.kernel"]               # oc=1, kh, kw, ic
b = t["batch_images.bias"]
want = np.zeros((4, 3, 3, 1))
for s in range(4):
    for oh in range(3):
        for ow in range(3):
            acc = 0.0
            for kh in range(3):
                for kw in range(3):
                    ih, iw = oh + kh - 1, ow + kw - 1
                    if 0 <= ih < 3 and 0 <= iw < 3:
                        acc += x[s, ih, iw, 0] * k[0, kh, kw, 0]
            want[s, oh, ow, 0] = acc + b[0]
err = np.abs(want - t["processed_images"]).max()
print("CONV-OK" if err < 1e-3 else "CONV-BAD max error %g" % err)
