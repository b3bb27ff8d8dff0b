# numpy oracle for einsum_trivia_shapes.tdsl (OCANNL's einsum_trivia.ml prints these
# tensors rounded; numpy gives every value). Axes in memory order: batch, output, input.
import json, sys, numpy as np
r = {}
for l in open(sys.argv[1]):
    o = json.loads(l); r[o['name']] = np.array(o['values'], dtype=np.float64)
def rs(b, i, o):  # range_of_shape, indexed [batch..., output..., input...]
    n = int(np.prod(b + o + i)); return np.arange(n, dtype=np.float64).reshape(b + o + i)
hey2 = rs([2, 3], [4, 5], [6, 7])          # a b e f c d
a3 = rs([2], [3], [4]); b3 = rs([5], [6], [7]); b4 = rs([2], [4], [5])
E = np.einsum
want = {
  'ho2': E('abefcd->cfdbae', hey2),
  'ho2_r': E('abefcd->cda', hey2),
  'ho3b': E('abefcd->adebcf', hey2),
  'c3': E('ikj,lnm->ilknjm', a3, b3),
  'a2': a3 * a3,
  'c4': E('boh,bhi->boi', b4, a3),
  'd4': E('ahi,boh->aboi', a3, b4),
  'e4': E('bhi,boh->oi', a3, b4),
  'f4': E('ahi,boh->oi', a3, b4),
}
ti = np.zeros((4, 3)); ti[:, 0] = np.arange(4)
tj = np.zeros((5, 3)); tj[:, 1] = np.arange(5)
tk = np.zeros((6, 3)); tk[:, 2] = np.arange(6)
want['positions'] = ti[:, None, None, :] + tj[None, :, None, :] + tk[None, None, :, :]
want['tk'] = tk
for n, w in want.items():
    print(n, 'ok' if n in r and r[n].size == w.size and np.array_equal(r[n], w.ravel()) else 'MISMATCH')
