# numpy oracle for conv_padding.tdsl: x = arange(n*n) (one channel), kernel = arange(4*3*3)
# as (oc, kh, kw); padded: left padding (k-1)/2, out = n/stride; valid: out = (n-k)/stride+1.
import json, sys, numpy as np
r = {}
for l in open(sys.argv[1]):
    o = json.loads(l); r[o['name']] = np.array(o['values'], dtype=np.float64)
k = np.arange(4*9).reshape(4,3,3)  # oc, kh, kw (memory: output then input)
def conv(n, stride, pad):
    x = np.arange(n*n).reshape(n,n).astype(float)
    if pad:
        out = n // stride; lp = (3-1)//2
        xp = np.zeros((n+2*3, n+2*3)); xp[3:3+n,3:3+n] = x
        res = np.zeros((out,out,4))
        for i in range(out):
            for j in range(out):
                for c in range(4):
                    s = 0
                    for a in range(3):
                        for b in range(3):
                            ii = stride*i + a - lp; jj = stride*j + b - lp
                            if 0 <= ii < n and 0 <= jj < n: s += x[ii,jj]*k[c,a,b]
                    res[i,j,c] = s
        return res
    out = (n-3)//stride + 1
    res = np.zeros((out,out,4))
    for i in range(out):
        for j in range(out):
            for c in range(4):
                res[i,j,c] = (x[stride*i:stride*i+3, stride*j:stride*j+3]*k[c]).sum()
    return res
for name, n, s, p in [('pad5',5,1,1),('valid5',5,1,0),('pad6',6,2,1),('valid9',9,2,0)]:
    e = conv(n,s,p).ravel()
    assert e.shape == r[name].shape and np.allclose(e, r[name]), name
    print(name, "ok")
