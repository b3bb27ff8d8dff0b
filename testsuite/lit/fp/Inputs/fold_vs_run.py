"""Compile-time folding against run time at special values: each case is a compile-time
expression `!.(F x)` (folded by the compiler, src/eval_math.c) and the same operation on
a tensor holding x (computed by the generated code), in single and double precision;
numpy (float64, then rounded to the element type) is the oracle for both, of x itself
for the folded form and of the tensor's value (x rounded to the element type: 1e300 is
inf in a float tensor, so its log is inf, not 690.8) for the computed one. Float literals
beyond the element type's range: +-inf (below its smallest denormal: +-0), as C's
conversion. usage: fold_vs_run.py TDSLC WORKDIR"""
import json, math, os, subprocess, sys
import numpy as np

tdslc, work = sys.argv[1], sys.argv[2]
tdslc = os.path.abspath(tdslc) if os.sep in tdslc else tdslc
os.makedirs(work, exist_ok=True)
NAN, INF = "(0. /. 0.)", "(1. /. 0.)"
X = {"nan": (NAN, np.nan), "inf": (INF, np.inf), "ninf": ("(-. " + INF + ")", -np.inf),
     "nzero": ("(-. 0.)", -0.0), "zero": ("0.", 0.0), "neg": ("(-1.)", -1.0), "big": ("1e300", 1e300)}
UN = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
      "erf": np.vectorize(math.erf)}
BIN = {"max": (np.maximum, "max2"), "min": (np.minimum, "min2")}
lines, want, names, want_single = [], {}, [], {}
with np.errstate(all="ignore"):
    for f, npf in UN.items():
        for k, (src, v) in X.items():
            if f in ("sin", "cos", "exp") and k == "big":
                continue  # libm's argument reduction of 1e300: not a special value
            c, r = "c_%s_%s" % (f, k), "r_%s_%s" % (f, k)
            lines += ["let%%op %s = !.(%s %s)" % (c, f, src), "let%%op %s = %s (!.%s)" % (r, f, src)]
            want[c] = want[r] = npf(v)
            # the tensor !.x in single precision holds x rounded to float (1e300: inf)
            want_single[r] = npf(np.float64(np.float32(v)))
    for f, (npf, op) in BIN.items():
        for k1, k2 in [("nan", "neg"), ("neg", "nan"), ("nzero", "zero"), ("zero", "nzero"), ("inf", "ninf")]:
            c, r = "c_%s_%s_%s" % (f, k1, k2), "r_%s_%s_%s" % (f, k1, k2)
            lines += ["let%%op %s = !.(%s %s %s)" % (c, f, X[k1][0], X[k2][0]),
                      "let%%op %s = %s (!.%s) (!.%s)" % (r, op, X[k1][0], X[k2][0])]
            # OCaml's Float.max/min (NaN if either is NaN), as np.maximum; the sign of a
            # zero tie is the second argument's for max and min (a > b ? a : b)
            want[c] = want[r] = npf(X[k1][1], X[k2][1]) if not (X[k1][1] == 0 and X[k2][1] == 0) else X[k2][1]
    for k, (lit, v) in {"l39": ("1e39", 1e39), "lm39": ("(-1e39)", -1e39), "l46": ("1e-46", 1e-46),
                        "lm46": ("(-1e-46)", -1e-46), "l400": ("1e400", np.inf)}.items():
        lines.append("let%%op %s = !.%s" % (k, lit))
        want[k] = v
    lines.append("let%op arr = [ 1e39; -1e39; 1e-46; 3.4028235e38; 3.4028236e38 ]")
    want["arr"] = np.array([1e39, -1e39, 1e-46, 3.4028235e38, 3.4028236e38])
names = list(want)
with open(os.path.join(work, "fold.tdsl"), "w") as fh:
    fh.write("\n".join(lines) + "\nlet%cd run = " + "; ".join(n + ".forward" for n in names) + "\n")
bad = 0
for prec, dt in (("single", np.float32), ("double", np.float64)):
    args = [tdslc, "--run", "fold.tdsl", "--json", "--call", "run", "--precision=" + prec]
    for n in names:
        args += ["--print", n]
    r = subprocess.run(args, cwd=work, capture_output=True, text=True)
    if r.returncode:
        print("tdslc failed:", r.stderr[-2000:]); sys.exit(1)
    for line in r.stdout.splitlines():
        o = json.loads(line, parse_int=float)
        got = np.array([float(v) for v in o["values"]], dtype=dt)
        with np.errstate(all="ignore"):
            w = want_single.get(o["name"], want[o["name"]]) if prec == "single" else want[o["name"]]
            exp = np.atleast_1d(np.asarray(w, dtype=np.float64).astype(dt))
            same = (np.isnan(got) & np.isnan(exp)) | ((got == exp) & (np.signbit(got) == np.signbit(exp)))
            close = np.isfinite(exp) & (np.abs(got - exp) <= 4 * np.finfo(dt).eps * np.abs(exp))
        if not (same | close).all():
            print("FAIL %s %s: tdslc %s numpy %s" % (prec, o["name"], got.tolist(), exp.tolist())); bad += 1
print("%d values checked twice, %d mismatches" % (len(names), bad))
sys.exit(1 if bad else 0)
