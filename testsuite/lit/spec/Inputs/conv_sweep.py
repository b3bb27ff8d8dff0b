"""LANGUAGE.md 9.6 swept against a direct numpy/Python loop: 1-D padded (=+) and valid
(<+) convolutions for input sizes 5..8, kernels 1..4, strides 1..3, dilations 1..2, with
sum (+*) and max (@^+) accumulation. Padded: input = stride*output, left padding
(dilation*(kernel-1))/2; valid: input = stride*(output-1) + dilation*(kernel-1) + 1.
Out-of-range positions contribute nothing (the data is negative at the edges, so a fake
0 would win a max). Shapes that fit neither rule must be located errors (one case each).
All cases go through one tdslc --run. Usage: conv_sweep.py TDSLC WORKDIR."""
import json, os, subprocess, sys

tdslc, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
lines, want = [], {}
for n in (5, 6, 7, 8):
    x = [i * 1.5 - 4 - (20 if i in (0, n - 1) else 0) for i in range(n)]
    lines.append("let%%op x%d = [ %s ]" % (n, "; ".join(repr(v) for v in x)))
    for K in (1, 2, 3, 4):
        k = [j * 0.5 - 0.7 for j in range(K)]
        if n == 5:
            lines.append("let%%op k%d = [ %s ]" % (K, "; ".join(repr(v) for v in k)))
        for s in (1, 2, 3):
            for d in (1, 2):
                for mode in ("=+", "<+"):
                    if mode == "=+":
                        if n % s:
                            continue
                        out, padl = n // s, (d * (K - 1)) // 2
                    else:
                        span = n - d * (K - 1) - 1
                        if span < 0 or span % s:
                            continue
                        out, padl = span // s + 1, 0
                    for acc, op in (("sum", "+*"), ("max", "@^+")):
                        name = "y_%d_%d_%d_%d_%s_%s" % (n, K, s, d, "pad" if mode == "=+" else "valid", acc)
                        lines.append('let%%op %s = x%d %s "%d*o%s%d*k; k => o" k%d' % (name, n, op, s, mode, d, K))
                        res = []
                        for o in range(out):
                            vals = [x[s * o + d * j - padl] * k[j] if acc == "sum" else x[s * o + d * j - padl] + k[j]
                                    for j in range(K) if 0 <= s * o + d * j - padl < n]
                            res.append(sum(vals) if acc == "sum" else max(vals))
                        want[name] = res
src = os.path.join(work, "sweep.tdsl")
open(src, "w").write("\n".join(lines) + "\n")
args = [tdslc, "--run", src, "--json"]
for name in want:
    args += ["--print", name]
p = subprocess.run(args, capture_output=True, text=True)
if p.returncode:
    sys.exit("FAIL tdslc: " + p.stderr[:2000])
bad = 0
for line in p.stdout.splitlines():
    o = json.loads(line)
    w = want[o["name"]]
    if o["output"] != [len(w)] or any(abs(g - e) > 1e-4 + 1e-4 * abs(e) for g, e in zip(o["values"], w)):
        bad += 1
        print("FAIL %s: got %s %s, want %s" % (o["name"], o["shape"], o["values"], w))
print("%d cases, %d bad" % (len(want), bad))
