"""The CLI contract (doc: /work/shared/spec/CLI.md, tdslc(1)) sentence by sentence, as
an outside test reads it: exit statuses, diagnostics, --dump-shapes text and JSON,
--run text and JSON, the options of Invocation and Additions and their interactions.
Expected numbers come from numpy. Usage: contract.py TDSLC WORKDIR; prints one line
per failed check and a summary."""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

TDSLC, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
os.chdir(WORK)
checks = failures = 0


def check(cond, what):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("FAIL: " + what)


def tdslc(*args, rc=0):
    p = subprocess.run([TDSLC] + list(args), capture_output=True, timeout=300)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    check(p.returncode == rc, "%s: exit %d, expected %d\n%s" % (" ".join(args), p.returncode, rc, err[-2000:]))
    try:
        p.stderr.decode("utf-8")
        p.stdout.decode("utf-8")
    except UnicodeDecodeError:
        check(False, "%s: output is not UTF-8" % " ".join(args))
    return out, err


def write(name, text):
    with open(name, "w") as f:
        f.write(text)
    return name


def lines_json(out, what):
    objs = []
    for line in out.splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError as e:
            check(False, "%s: not JSON: %r (%s)" % (what, line, e))
    return objs


SHAPE_KEYS = ["name", "shape", "batch", "input", "output"]

# ---- --dump-shapes: every kind of dim and row -------------------------------------
shapes = write("shapes.tdsl", """let n = dim ()
let%op hey = range_of_shape ~batch_dims:[ 2 ] ~input_dims:[ 3 ] ~output_dims:[ 4 ] ()
let%op s = (range 3) ++ "i => "
let%op b = range_of_shape ~batch_dims:[ 2 ] ()
let%cd c = { c; b = [ 3; 4 ]; i = [ 5 ]; o = [ ("rgb", 3) ] }
let%cd d = { d; o = [ n ] }
let%cd e = { e; o = [ ? ] }
let%op w = { w; i = [ 2 ]; o = [ 16 ] }
""")
want = [("hey", "2|3->4", [2], [3], [4]), ("s", "", [], [], []), ("b", "2|", [2], [], []),
        ("c", "3,4|5->rgb=3", [3, 4], [5], [3]), ("d", "n", [], [], ["n"]), ("e", "?", [], [], ["?"]),
        ("w", "2->16", [], [2], [16])]
out, _ = tdslc("--dump-shapes", shapes)
check(out == "".join("%s: %s\n" % (n, sh) for n, sh, *_ in want), "--dump-shapes text:\n" + out)
out, _ = tdslc("--dump-shapes", "--json", shapes)
got = lines_json(out, "--dump-shapes --json")
for o in got:
    check(list(o) == SHAPE_KEYS, "--dump-shapes --json keys %s" % list(o))
check([[o.get(k) for k in SHAPE_KEYS] for o in got] == [list(w) for w in want], "--dump-shapes --json:\n" + out)
for o in got:
    for k in ("batch", "input", "output"):
        check(all(type(x) is int or x == "?" or x == "n" for x in o[k]), "dims of %s: %s" % (o["name"], o[k]))

# ---- --run: memory order, grads, non-finite, forward rules, --call order ------------
run = write("run.tdsl", """let%op m = range_of_shape ~batch_dims:[ 2 ] ~input_dims:[ 3 ] ~output_dims:[ 4 ] ()
let%op nf = log [ 0.; -1.; 1. ] + ([ 0.; 0.; 1e30 ] *. [ 0.; 0.; 1e30 ])
let%op s = (range 3) ++ "i => "
let%op b = range_of_shape ~batch_dims:[ 2 ] ()
let%op w = { w = [ 1.; 2. ] }
let%op h = w *. [ 3.; 4. ]
let%op loss = (h *. h) ++ "... => 0"
let%cd step = grad_update loss; w =- 0.5 * w.grad
let%cd twice = w =: w + w
""")
RUN_KEYS = SHAPE_KEYS + ["values"]
out, _ = tdslc("--run", run, "--print", "m", "--print", "nf", "--print", "s", "--print", "b", "--json")
got = {o["name"]: o for o in lines_json(out, "--run --json")}
for o in got.values():
    check(list(o) == RUN_KEYS, "--run --json keys %s" % list(o))
# range_of_shape counts in memory order: batch, output, input.
m = np.arange(24).reshape(2, 4, 3)
check(got["m"]["values"] == m.ravel().tolist(), "m values")
check([got["m"][k] for k in SHAPE_KEYS] == ["m", "2|3->4", [2], [3], [4]], "m shape fields")
with np.errstate(all="ignore"):
    nf = (np.log(np.float32([0, -1, 1])) + np.float32([0, 0, 1e30]) * np.float32([0, 0, 1e30])).tolist()
check(len(got["nf"]["values"]) == 3 and str(got["nf"]["values"]) == str(nf), "non-finite: %s vs %s" % (got["nf"]["values"], nf))
check(re.search(r'"values":\[-Infinity,NaN,Infinity\]', out) is not None, "NaN/Infinity spelling:\n" + out)
check(got["s"]["shape"] == "" and got["s"]["values"] == [3], "scalar with no axes: %s" % got["s"])
check(got["b"]["shape"] == "2|" and got["b"]["values"] == [0, 1], "batch-only: %s" % got["b"])
# Text: a header line NAME: SHAPE per tensor; an empty shape prints as nothing.
out, _ = tdslc("--run", run, "--print", "s", "--print", "b")
check(out.splitlines()[0] == "s: " and out.splitlines()[2] == "b: 2|", "--run text headers:\n" + out)

w0 = np.float32([1, 2])
hw = w0 * np.float32([3, 4])
grad = 2 * hw * np.float32([3, 4])
out, _ = tdslc("--run", run, "--call", "step", "--print", "w", "--print", "w.grad", "--print", "loss", "--json")
got = {o["name"]: o for o in lines_json(out, "--run grad")}
check(got["w.grad"]["values"] == grad.tolist(), "w.grad %s vs %s" % (got["w.grad"]["values"], grad))
check(got["w.grad"]["shape"] == "2", "T.grad has T's shape")
check(got["w"]["values"] == (w0 - 0.5 * grad).tolist(), "w after step")
check(got["loss"]["values"] == [float((hw * hw).sum())], "loss %s" % got["loss"]["values"])
# --call runs in order, and nothing else runs: h is not recomputed after twice.
out, _ = tdslc("--run", run, "--call", "h.forward", "--call", "twice", "--print", "h", "--print", "w", "--json")
got = {o["name"]: o for o in lines_json(out, "--call order")}
check(got["h"]["values"] == hw.tolist() and got["w"]["values"] == (2 * w0).tolist(), "--call order:\n" + out)
out, _ = tdslc("--run", run, "--call", "twice", "--call", "h.forward", "--print", "h", "--json")
check(lines_json(out, "")[0]["values"] == (2 * hw).tolist(), "--call order reversed:\n" + out)
# T.forward of a parameter runs nothing (init set it): twice's effect stays.
out, _ = tdslc("--run", run, "--call", "twice", "--call", "w.forward", "--print", "w", "--json")
check(lines_json(out, "")[0]["values"] == (2 * w0).tolist(), "w.forward of a parameter ran something:\n" + out)
# Without --call, each printed tensor's .forward runs; an intermediate keeps its value.
out, _ = tdslc("--run", run, "--print", "loss", "--print", "h", "--json")
got = {o["name"]: o for o in lines_json(out, "")}
check(got["h"]["values"] == hw.tolist(), "intermediate h after loss.forward")
# The init routine may be called, and a T.backprop.
tdslc("--run", run, "--call", "init", "--call", "loss.forward", "--call", "loss.backprop", "--print", "w.grad")
# A name the model lacks is a bad command line (CLI.md: 2; the input has no error).
tdslc("--run", run, "--print", "nosuch", rc=2)
tdslc("--run", run, "--call", "nosuch", rc=2)

# ---- --seed, --set, --load (raw and .npy), checkpoints, precision, -O ----------------
io = write("io.tdsl", """let n = dim ()
let%op x = { x; b = [ n ]; o = [ 3 ] }
let%op w = { w; i = [ 3 ]; o = [ 2 ] }
let%op y = w * x
let%op loss = y ++ "...|... => 0"
let%cd train = grad_update loss; w =- 0.1 * w.grad
""")
xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1
xs.astype("<f4").tofile("x.bin")
np.save("x.npy", xs)
np.save("x64.npy", xs.astype(np.float64))


def run_json(*args, rc=0):
    out, err = tdslc("--run", *args, "--json", rc=rc)
    return {o["name"]: o for o in lines_json(out, " ".join(args))}


a = run_json(io, "--seed", "7", "--print", "w")["w"]["values"]
b = run_json(io, "--seed", "7", "--print", "w")["w"]["values"]
c = run_json(io, "--seed", "8", "--print", "w")["w"]["values"]
d = run_json(io, "--print", "w")["w"]["values"]
e = run_json(io, "--seed", "0", "--print", "w")["w"]["values"]
check(a == b and a != c and d == e, "--seed: same seed same values, default 0")
for load in ("x.bin", "x.npy"):
    got = run_json(io, "--set", "n=4", "--load", "x=" + load, "--print", "x", "--print", "w", "--print", "y")
    check(got["x"]["shape"] == "4|3" and got["x"]["batch"] == [4], "--set n=4 sizes x: %s" % got["x"]["shape"])
    check(got["x"]["values"] == xs.ravel().tolist(), "--load %s" % load)
    W = np.float32(got["w"]["values"]).reshape(2, 3)
    check(np.allclose(got["y"]["values"], (xs @ W.T).ravel(), rtol=1e-5, atol=1e-6), "y = w * x after --load %s" % load)
# A .npy file sets the dynamic dimension itself.
got = run_json(io, "--load", "x=x.npy", "--print", "x")
check(got["x"]["shape"] == "4|3", ".npy sets n: %s" % got["x"]["shape"])
for prec in ("--precision=double", "-O0", "-O1", "-O3", "--strict-fp", "--no-cache", "--check-bounds"):
    got = run_json(io, prec, "--load", "x=x64.npy" if prec == "--precision=double" else "x=x.npy", "--seed", "3",
                   "--call", "train", "--print", "w", "--print", "y")
    ref = run_json(io, "--load", "x=x.npy", "--seed", "3", "--call", "train", "--print", "w", "--print", "y")
    check(np.allclose(got["w"]["values"], ref["w"]["values"], rtol=1e-5), "%s agrees with -O2" % prec)
tdslc("--run", io, "--seed", "3", "--load", "x=x.npy", "--call", "train", "--save", "ck.safetensors")
check(os.path.exists("ck.safetensors"), "--save wrote the checkpoint")
trained = run_json(io, "--seed", "3", "--load", "x=x.npy", "--call", "train", "--print", "w")["w"]["values"]
back = run_json(io, "--load-checkpoint", "ck.safetensors", "--print", "w")["w"]["values"]
check(trained == back, "--load-checkpoint restores w: %s vs %s" % (back, trained))
tdslc("--run", io, "--load", "x=nofile.bin", rc=2)  # an unreadable file: exit 2 (CLI.md)
tdslc("--run", io, "--set", "n", rc=2)

# ---- compiled outputs: .so, -c, --emit-header, --name, --emit-c, -MD/-MF, -I, -v -----
os.makedirs("lib", exist_ok=True)
write("lib/helper.tdsl", "let%op twice x = x + x\n")
main = write("main.tdsl", 'open "helper.tdsl"\nlet%op x = { x; o = [ 3 ] }\nlet%op y = twice x\n')
tdslc(main, rc=1)  # the opened file is not found without -I
tdslc("-I", "lib", main)
check(os.path.exists("main.so"), "default output FILE.so")
tdslc("-Ilib", "-c", main)
with open("main.o", "rb") as f:
    hdr = f.read(18)
check(hdr[:4] == b"\x7fELF" and struct.unpack("<H", hdr[16:18])[0] == 1, "-c writes a relocatable object")
tdslc("-I", "lib", "--name=mdl", "-c", main, "-o", "named.o", "--emit-header=named.h")
syms = subprocess.run(["nm", "named.o"], capture_output=True, text=True).stdout
check(re.search(r" T mdl_", syms) is not None, "--name prefixes the symbols")
check("mdl_" in open("named.h").read(), "--name prefixes the header")
out, _ = tdslc("-I", "lib", "--emit-c", main)
write("main.c", out)
cc = subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-o", "emitted.so", "main.c", "-lm"], capture_output=True, text=True)
check(cc.returncode == 0, "--emit-c compiles: " + cc.stderr[-500:])
tdslc("-I", "lib", "-MD", main, "-o", "dep.so")
deps = open("dep.d").read() if os.path.exists("dep.d") else ""
check(deps.startswith("dep.so:") and "main.tdsl" in deps and "helper.tdsl" in deps, "-MD: " + deps)
tdslc("-I", "lib", "-MF", "other.d", main, "-o", "dep2.so")
check(os.path.exists("other.d") and "helper.tdsl" in open("other.d").read(), "-MF")
_, err = tdslc("-v", "--no-cache", "-I", "lib", main, "-o", "v.so")
check(re.search(r"^tdslc: parse ", err, re.M) is not None, "-v phases:\n" + err)
_, err = tdslc("--time-report", "-I", "lib", main, "-o", "t.so")
check("TOTAL" in err, "--time-report")
tdslc("--check", "-I", "lib", main)
tdslc("-I", "lib", "--dump-projections", "--json", main)
out, _ = tdslc("-I", "lib", "--dump-projections", "--json", main)
lines_json(out, "--dump-projections --json")
out, _ = tdslc("--version")
check(re.fullmatch(r"tdslc \d+\.\d+\.\d+\n", out) is not None, "--version: " + out)
out, _ = tdslc("--help")
for opt in ("-o OUT", "-c ", "--backend", "--arch", "-O0", "-I DIR", "--precision", "--emit-header", "--emit-c",
            "--emit-ptx", "--dump-shapes", "--dump-projections", "--json", "--run", "--version"):
    check(opt in out, "--help mentions " + opt)

# ---- usage errors: exit 2, and no output written ------------------------------------
for args in (["--dump-shapes", "--run", run], ["--json", run], ["--print", "m", run], ["--tf32", "--dump-shapes", run],
             ["--dump-ast", "--json", run], ["--emit-c", "-o", "x.so", run], ["--arch=sm_80", run], [run, run],
             ["-o"], ["-O4", run], ["--seed=-1", "--run", run], ["--seed", "x", "--run", run], ["-o", run, run],
             ["--emit-header=" + run, run], ["nosuch.tdsl"], ["--run", run, "--save", run]):
    tdslc(*args, rc=2)
check(open(run).read().startswith("let%op m"), "the input survived --save")
# Nor an output over a file the model reads: an opened source, a --load input.
helper = open("lib/helper.tdsl").read()
for args in (["-I", "lib", main, "-o", "lib/helper.tdsl"], ["-I", "lib", main, "--emit-header=lib/helper.tdsl"],
             ["-I", "lib", main, "-MF", "lib/helper.tdsl"]):
    _, err = tdslc(*args, rc=2)
    check("is a file the model reads" in err, "output over an opened file: " + err)
check(open("lib/helper.tdsl").read() == helper, "the opened file survived")
tdslc("--run", io, "--load", "x=x.npy", "--save", "x.npy", rc=2)
check(np.array_equal(np.load("x.npy"), xs), "the --load file survived --save")

# ---- diagnostics: GCC style, which file, the caret ----------------------------------
DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|note): (?P<msg>.*)\n"
                  r" {0,4}(?P=line) \| (?P<src>.*)\n {6}\| (?P<caret>[ \t]*\^~*)$", re.M)
write("lib/bad.tdsl", "let%op bad x = x + undefined_name\n")
useopen = write("useopen.tdsl", 'open "bad.tdsl"\nlet%op x = { x; o = [ 3 ] }\nlet%op y = bad x\n')
_, err = tdslc("-I", "lib", "--dump-shapes", useopen, rc=1)
ds = [m.groupdict() for m in DIAG.finditer(err)]
check(len(ds) >= 2 and ds[0]["file"] == "lib/bad.tdsl" and ds[0]["kind"] == "error"
      and (ds[0]["line"], ds[0]["col"]) == ("1", "20"), "error in the opened file names it:\n" + err)
check(any(d["file"] == "useopen.tdsl" and d["line"] == "3" and d["kind"] == "note" for d in ds),
      "and leads back to the user's line:\n" + err)
mm = write("mm.tdsl", "let%op x = { x; o = [ 3 ] }\nlet%op w = { w; i = [ 4 ]; o = [ 2 ] }\nlet%op y = w * x\n")
_, err = tdslc("--dump-shapes", mm, rc=1)
ds = [m.groupdict() for m in DIAG.finditer(err)]
check(ds and ds[0]["file"] == "mm.tdsl" and ds[0]["line"] == "3" and ds[0]["col"] == "14" and
      ds[0]["src"] == "let%op y = w * x" and ds[0]["caret"].index("^") == 13 and
      any(d["kind"] == "note" for d in ds), "shape error:\n" + err)
check(len(DIAG.sub("", err).strip()) == 0, "every diagnostic line in the fixed form:\n" + err)
# A stdlib function given a bad argument: the user's call site is named.
std = write("std.tdsl", "let%op x = { x; o = [ 3 ] }\nlet%op z = mse x { t; o = [ 4 ] }\n")
_, err = tdslc("--dump-shapes", std, rc=1)
ds = [m.groupdict() for m in DIAG.finditer(err)]
check(ds and ds[0]["file"] == "std.tdsl" and ds[0]["line"] == "2", "stdlib shape error at the call:\n" + err)
std2 = write("std2.tdsl", "let%op x = { x; o = [ 3 ] }\nlet%op z = one_hot ~classes:0 x\n")
_, err = tdslc("--dump-shapes", std2, rc=1)
ds = [m.groupdict() for m in DIAG.finditer(err)]
check(any(d["file"] == "std2.tdsl" and d["line"] == "2" for d in ds), "stdlib staging error leads to the call:\n" + err)

print("%d checks, %d failures" % (checks, failures))
