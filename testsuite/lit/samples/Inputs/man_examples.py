"""Checks the examples of tdsl(7): every .EX block of the sections EXAMPLES OF
OPERATIONS and STANDARD LIBRARY compiles (tdslc --dump-shapes), and so does every
one-line `let%op` / `let%cd` example of the STANDARD LIBRARY entries, appended to that
section's first block (its declarations). A block using an initializer the compiler
does not know yet is reported as skipped. Prints one line per example, then a count.
usage: man_examples.py TDSLC tdsl.7 WORKDIR"""
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


def compiles(name, src):
    path = os.path.join(work, name + ".tdsl")
    with open(path, "w") as f:
        f.write(src)
    r = subprocess.run([tdslc, "--dump-shapes", path], capture_output=True, text=True)
    if r.returncode and re.search(r"unknown identifier '(kaiming|xavier)_uniform'", r.stderr):
        print("SKIP %s (initializer not in this compiler)" % name)
        return True
    print("ok " + name if r.returncode == 0 else "FAIL %s\n%s" % (name, r.stderr))
    return r.returncode == 0


failed = 0
examples = 0
for i, b in enumerate(blocks(section("EXAMPLES OF OPERATIONS"))):
    examples += 1
    failed += not compiles("ops%d" % i, b)
std = section("STANDARD LIBRARY")
decls = blocks(std)[0]
for i, line in enumerate(re.findall(r"^\.B (let%(?:op|cd) .*)$", std, re.M)):
    examples += 1
    failed += not compiles("std%d" % i, decls + unroff(line) + "\n")
print("%d examples, %d failed" % (examples, failed))
sys.exit(1 if failed or examples < 10 else 0)
