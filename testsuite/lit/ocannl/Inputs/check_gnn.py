# numpy oracle for gnn_broadcast.tdsl.
import json, sys, numpy as np
r = {}
for l in open(sys.argv[1]):
    o = json.loads(l); r[o['name']] = np.array(o['values'], dtype=np.float64)
ra = np.arange(12.).reshape(3, 4); rb = ra + 1
rba = np.arange(24.).reshape(2, 3, 4); radj = np.arange(18.).reshape(2, 3, 3)
want = {'edges_r': np.einsum('if,jf->ijf', ra, rb),
        'edges_rb': np.einsum('gif,gjf->gijf', rba, rba),
        'out_r': np.einsum('gvu,guf->gvf', radj, rba)}
for n, w in want.items():
    print(n, 'ok' if n in r and np.array_equal(r[n], w.ravel()) else 'MISMATCH %s' % r.get(n))
