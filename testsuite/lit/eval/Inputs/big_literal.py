"""Writes a big ndarray literal as someone pasting weights would (tdsl), and its values
as numpy sees them (an .npy in memory order: batch, output, input).

usage: big_literal.py OUT.tdsl OUT.npy B O I
The literal is `[| [ (x, x, ...); ... ]; ... |]`: B batch cells of O rows of I numbers,
spelled in every way the lexer reads a number (ints, `3.`, exponents, `-` with and
without a space), declared with its dims in an inline parameter, and used by a tensor."""
import random
import sys

import numpy as np

out_tdsl, out_npy, B, O, I = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
r = random.Random(7)


def number():
    """A spelling and its value."""
    k = r.randrange(8)
    if k == 0:
        v = r.randrange(-99, 100)
        return str(v), float(v)
    if k == 1:
        v = r.randrange(0, 10)
        return "%d." % v, float(v)
    if k == 2:
        m, e = r.randrange(1, 10), r.randrange(-4, 4)
        s = "%de%d" % (m, e)
        return s, float(s)
    if k == 3:
        s = "%.3fE+%d" % (r.uniform(0, 1), r.randrange(0, 3))
        return "- " + s, -float(s)
    x = r.uniform(-1, 1)
    s = "%.6g" % x
    return s, float(s)


vals = np.empty((B, O, I))
with open(out_tdsl, "w") as f:
    f.write("let%op w = { w = [|\n")
    for b in range(B):
        rows = []
        for o in range(O):
            cells = []
            for i in range(I):
                s, v = number()
                cells.append(s)
                vals[b, o, i] = v
            rows.append("(" + ", ".join(cells) + ")")
        f.write("  [ " + ";\n    ".join(rows) + " ]" + (";\n" if b < B - 1 else "\n"))
    f.write("|]; b = [%d]; o = [%d]; i = [%d] }\n" % (B, O, I))
    f.write("let%op y = w *. 2.0\n")
np.save(out_npy, vals)
