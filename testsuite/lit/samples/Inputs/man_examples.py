"""Checks the examples of tdsl(7), so that the page cannot drift from the compiler:
- every .EX block of EXAMPLES OF OPERATIONS, EXAMPLE and DEFINING OPERATIONS compiles
  (tdslc --dump-shapes);
- every one-line `let%op` / `let%cd` example of the STANDARD LIBRARY entries compiles,
  appended to that section's first block (its declarations);
- what the comments of EXAMPLES OF OPERATIONS claim holds. A comment is split at ": ";
  its first part, when it is a shape in --dump-shapes notation with a separator
  (`3->2`, `2|2`, `2,3`, `q=1`), is the tensor's shape; a part that is a list of
  numbers separated by ", " (`2, 4, 6`, or one number) is every value of the tensor as
  `tdslc --run --print` shows it after init. Other comments claim nothing.
Prints one line per example or claim, then a count.
usage: man_examples.py TDSLC tdsl.7 WORKDIR"""
import json
import os
import re
import subprocess
import sys

tdslc, page, work = sys.argv[1:4]
text = open(page).read()


def unroff(s):
    s = s.replace("\\(dq", '"').replace("\\(aq", "'").replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", s)


def section(name):
    m = re.search(r"^\.SH %s\n(.*?)(?=^\.SH )" % re.escape(name), text, re.S | re.M)
    assert m, "no section " + name
    return m.group(1)


def blocks(sec):
    return [unroff(b) for b in re.findall(r"^\.EX\n(.*?)^\.EE", sec, re.S | re.M)]


def write(name, src):
    path = os.path.join(work, name + ".tdsl")
    with open(path, "w") as f:
        f.write(src)
    return path


def compiles(name, src):
    r = subprocess.run([tdslc, "--dump-shapes", write(name, src)], capture_output=True, text=True)
    print("ok " + name if r.returncode == 0 else "FAIL %s\n%s" % (name, r.stderr))
    return r.returncode == 0


SHAPE = re.compile(r"^(?:[\w=,]+\|)?(?:[\w=,]+->)?[\w=,]+$")
NUMBERS = re.compile(r"^-?\d+(?:\.\d*)?(?:, -?\d+(?:\.\d*)?)*$")


def claims(src):
    """(name, shape or None, values or None) for each commented `let%op NAME = ...`."""
    out = []
    for m in re.finditer(r"^let%op (\w+) = .*\(\* (.*?) \*\)\s*$", src, re.M):
        parts = m.group(2).split(": ")
        first = parts[0]
        shape = first if SHAPE.match(first) and re.search(r"[,|=]|->", first) else None
        values = [float(v) for p in parts if NUMBERS.match(p) for v in p.split(", ")]
        if shape or values:
            out.append((m.group(1), shape, values or None))
    return out


def check_claims(name, src):
    """Returns (claims checked, claims failed)."""
    cl = claims(src)
    path = write(name, src)
    r = subprocess.run([tdslc, "--dump-shapes", path], capture_output=True, text=True)
    shapes = dict(l.split(": ", 1) if ": " in l else (l.rstrip(":"), "")
                  for l in r.stdout.splitlines())
    cmd = [tdslc, "--run", path, "--json"]
    for n, _, v in cl:
        if v is not None:
            cmd += ["--print", n]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print("FAIL %s: --run\n%s" % (name, r.stderr))
        return len(cl), len(cl)
    printed = {o["name"]: o["values"] for o in map(json.loads, r.stdout.splitlines())}
    failed = 0
    for n, shape, values in cl:
        bad = []
        if shape is not None and shapes.get(n) != shape:
            bad.append("shape %s, the page says %s" % (shapes.get(n), shape))
        if values is not None:
            got = printed.get(n)
            if got is None or len(got) != len(values) or any(
                    abs(g - w) > 1e-6 * max(1.0, abs(w)) for g, w in zip(got, values)):
                bad.append("values %s, the page says %s" % (got, values))
        failed += bool(bad)
        print("FAIL claim %s: %s" % (n, "; ".join(bad)) if bad else "ok claim " + n)
    return len(cl), failed


failed = 0
examples = 0
ops = blocks(section("EXAMPLES OF OPERATIONS"))
for i, b in enumerate(ops):
    examples += 1
    failed += not compiles("ops%d" % i, b)
n, f = check_claims("ops_claims", ops[0])
examples += n
failed += f
for sec in ("EXAMPLE", "DEFINING OPERATIONS"):
    for i, b in enumerate(blocks(section(sec))):
        examples += 1
        failed += not compiles("%s%d" % (sec.split()[0].lower(), i), b)
std = section("STANDARD LIBRARY")
decls = blocks(std)[0]
for i, line in enumerate(re.findall(r"^\.B (let%(?:op|cd) .*)$", std, re.M)):
    examples += 1
    failed += not compiles("std%d" % i, decls + unroff(line) + "\n")
print("%d examples, %d failed" % (examples, failed))
sys.exit(1 if failed or examples < 40 else 0)
