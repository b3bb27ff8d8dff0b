#!/usr/bin/env python3
"""Peak memory of `tdslc ACTION` on deep MLPs (bench/gen_mlp.py) at depths n and 2n.

usage: deep_rss.py TDSLC ROOT N [ACTION]   (ACTION: --dump-ir unless given)

Prints the two peaks and their ratio: a compiler whose memory is linear in the depth
doubles (plus its fixed start-up memory); one storing per pair of statements grows
about 4x. Counted by the kernel (wait4's ru_maxrss), not timed.
"""
import os
import subprocess
import sys
import tempfile


def peak_kb(tdslc, action, path):
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([tdslc, action, path], stdout=null)
        _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("tdslc %s %s: status %d" % (action, path, status))
    return usage.ru_maxrss


def main():
    tdslc, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    action = sys.argv[4] if len(sys.argv) > 4 else "--dump-ir"
    gen = os.path.join(root, "bench", "gen_mlp.py")
    peaks = []
    with tempfile.TemporaryDirectory() as d:
        for layers in (n, 2 * n):
            path = os.path.join(d, "mlp%d.tdsl" % layers)
            with open(path, "w") as f:
                subprocess.run([sys.executable, gen, str(layers)], stdout=f, check=True)
            peaks.append(peak_kb(tdslc, action, path))
    ratio = peaks[1] / peaks[0]
    print("peak %d layers: %d KB, %d layers: %d KB, ratio %.2f" % (n, peaks[0], 2 * n, peaks[1], ratio))
    print("growth: %s" % ("linear" if ratio < 2.2 else "superlinear"))


if __name__ == "__main__":
    main()
