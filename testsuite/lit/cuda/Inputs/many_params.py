"""A routine summing N parameters of 2 cells (fused.test: N parameters and N - 1 partial
sums, each a buffer of the fused kernel). usage: many_params.py N"""
import sys

n = int(sys.argv[1])
for i in range(n):
    print("let%%op x%d = { x%d = uniform (); o = [ 2 ] }" % (i, i))
print("let%op s = " + " + ".join("x%d" % i for i in range(n)))
print("let%cd run = s.forward")
