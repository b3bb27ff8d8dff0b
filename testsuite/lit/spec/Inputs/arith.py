"""LANGUAGE.md 3, 9.5 and 9.16, compile-time numbers, against OCaml's semantics computed
here: ints stay ints under + - * / mod (/ truncates toward zero, mod takes the dividend's
sign), a float operand or a dotted operator gives a float, ** and **. are right
associative, precedence by the first character of the operator; sqrt exp log sin cos tanh
floor ceil abs min max fold. Each value reaches a tensor through !.. (an int) or !. (a
float), all in one --run. Usage: arith.py TDSLC WORKDIR."""
import json, math, os, subprocess, sys

tdslc, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
div = lambda a, b: math.trunc(a / b)
mod = lambda a, b: int(math.fmod(a, b))
cases = [  # (expression, expected, is_int)
    ("7 / 2", 3, True), ("-7 / 2", -3, True), ("7 / -2", -3, True), ("-(7 / 2)", -3, True),
    ("7 mod 3", 1, True), ("-7 mod 3", mod(-7, 3), True), ("7 mod -3", mod(7, -3), True),
    ("7 / 2 * 2", 6, True), ("2 + 3 * 4", 14, True), ("10 - 4 - 3", 3, True), ("7 mod 4 * 2", 6, True),
    ("10 / 3 * 3 + 10 mod 3", 10, True), ("100 / 7 / 2", div(div(100, 7), 2), True),
    ("1 + 2 *. 3", 7.0, False), ("7 / 2.", 3.5, False), ("7. /. 2.", 3.5, False), ("2.5 +. 1", 3.5, False),
    ("1e2 /. 8.", 12.5, False), ("2 *. 3", 6.0, False), ("5 -. 7", -2.0, False),
    ("2. ** 3. ** 2.", 512.0, False), ("2 **. 3", 8.0, False), ("(2. ** 3.) ** 2.", 64.0, False),
    ("sqrt 8.", math.sqrt(8), False), ("exp 1.", math.e, False), ("log 10.", math.log(10), False),
    ("sin 1.", math.sin(1), False), ("cos 1.", math.cos(1), False), ("tanh 0.5", math.tanh(0.5), False),
    ("floor 2.7", 2.0, False), ("ceil 2.2", 3.0, False), ("floor (-2.5)", -3.0, False), ("abs (-3.5)", 3.5, False),
    ("abs (-3)", 3, True), ("min 2 3", 2, True), ("max 2 3", 3, True), ("max 2 3.5", 3.5, False),
    ("min 2. 3.", 2.0, False), ("sqrt 9", 3.0, False), ("max 3 4 * 2", 8, True), ("1 + abs (-2) * 3", 7, True),
]
lines = []
for i, (e, w, is_int) in enumerate(cases):
    lines.append("let v%d = %s" % (i, e))
    lines.append("let%%op t%d = %s(v%d)" % (i, "!.." if is_int else "!.", i))
# A float where an int is required (a dimension) must be refused: ints stay ints.
src = os.path.join(work, "arith.tdsl")
open(src, "w").write("\n".join(lines) + "\n")
args = [tdslc, "--run", src, "--json", "--precision=double"]
for i in range(len(cases)):
    args += ["--print", "t%d" % i]
p = subprocess.run(args, capture_output=True, text=True)
if p.returncode:
    sys.exit("FAIL tdslc: " + p.stderr[:2000])
bad = 0
for line, (e, w, _) in zip(p.stdout.splitlines(), cases):
    got = json.loads(line)["values"][0]
    if abs(got - w) > 1e-12 * max(1, abs(w)):
        bad += 1
        print("FAIL %s: got %r, want %r" % (e, got, w))
# Int-ness: an int expression sizes a tensor, a float one does not.
open(os.path.join(work, "dims.tdsl"), "w").write("let n = 7 / 2\nlet%op r = range n\n")
p = subprocess.run([tdslc, "--dump-shapes", os.path.join(work, "dims.tdsl")], capture_output=True, text=True)
if p.stdout.strip() != "r: 3":
    bad += 1; print("FAIL 7 / 2 as a size: " + p.stdout + p.stderr)
open(os.path.join(work, "fdims.tdsl"), "w").write("let n = 7 / 2.\nlet%op r = range n\n")
p = subprocess.run([tdslc, "--dump-shapes", os.path.join(work, "fdims.tdsl")], capture_output=True, text=True)
if p.returncode != 1:
    bad += 1; print("FAIL 7 / 2. as a size should be an error: %d %s" % (p.returncode, p.stderr))
print("%d cases, %d bad" % (len(cases) + 2, bad))
