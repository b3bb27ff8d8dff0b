"""The reverse of the example checks: what the tools offer, the pages name.
- every option `tdslc --help` lists is described in tdslc(1) (as a tagged paragraph or
  in its text), and every option tdslc(1) describes in a tagged paragraph is in --help
  or is -h;
- every function, type and constant runtime/tdsl.h declares is named in tdslc(1);
- every operation of the prelude and function of the standard library is named in tdsl(7);
- every environment variable the compiler, runtime or back ends read is named in
  tdslc(1), or in HACKING.md for a test hook;
- every public function of the python package and every public method or property of
  tdsl.Model is named in python/README.md.
Prints one line per missing name, then a count.
usage: doc_coverage.py TDSLC ROOT"""
import ast
import os
import re
import subprocess
import sys

tdslc, root = sys.argv[1:3]


def unroff(s):
    s = s.replace("\\(dq", '"').replace("\\(aq", "'").replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", s)


man1 = unroff(open(os.path.join(root, "man", "tdslc.1")).read())
missing = checked = 0


def need(name, text, where):
    global missing, checked
    checked += 1
    # a method ".call" is named by "m.call(" or by "`call`"
    pat = (r"[.`]" + re.escape(name[1:]) if name.startswith(".")
           else r"(?<![\w-])" + re.escape(name)) + r"(?![\w-])"
    if not re.search(pat, text):
        missing += 1
        print("MISSING %s in %s" % (name, where))


helptext = subprocess.run([tdslc, "--help"], capture_output=True, text=True).stdout
opts = set()
for line in helptext.splitlines():
    for tok in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line):
        opts.add(tok)
opts.discard("-O0")  # "-O0 ... -O3" is one entry
for o in sorted(opts):
    need(o, man1, "tdslc(1)")
# The options tdslc(1) gives a paragraph of their own (.TP then a .B/.BI line).
described = set(re.findall(r"^\.TP\n\.B[IR]? +\"?(--?[A-Za-z][\w-]*)", man1, re.M))
for o in sorted(described - {"-h"}):
    need(o, helptext, "tdslc --help")

header = open(os.path.join(root, "runtime", "tdsl.h")).read()
header = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
names = set(re.findall(r"\b(tdsl_\w+)\s*\(", header))
names |= set(re.findall(r"\b(TDSL_[A-Z0-9_]+)\b", header)) - {"TDSL_H"}
names |= set(re.findall(r"typedef\s+(?:struct|enum)\s+(tdsl_\w+)", header))
for n in sorted(names):
    need(n, man1, "tdslc(1)")

# The prelude's and the standard library's top-level names. An op `f_` that the function
# `f` wraps (pointpow_ under pointpow) is f's implementation, not a name of its own.
man7 = unroff(open(os.path.join(root, "man", "tdsl.7")).read())
for lib in ("prelude.tdsl", "stdlib.tdsl"):
    src = open(os.path.join(root, "lib", lib)).read()
    defined = set(re.findall(r"^(?:let%(?:op|cd)|let|op) +([a-z]\w*)", src, re.M))
    for n in sorted(defined):
        if not (n.endswith("_") and n[:-1] in defined):
            need(n, man7, "tdsl(7)")

# Environment variables: a user's in tdslc(1), a test hook's in HACKING.md.
hacking = open(os.path.join(root, "HACKING.md")).read()
envs = set()
for sub in ("src", "runtime", "backends"):
    for dirpath, _, files in os.walk(os.path.join(root, sub)):
        for f in files:
            if f.endswith((".c", ".h")):
                envs |= set(re.findall(r'getenv\("(\w+)"\)', open(os.path.join(dirpath, f)).read()))
for e in sorted(envs):
    need(e, man1 + hacking, "tdslc(1) or HACKING.md")

pyreadme = open(os.path.join(root, "python", "README.md")).read()
tree = ast.parse(open(os.path.join(root, "python", "tdsl", "__init__.py")).read())
for node in tree.body:
    if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
        need("tdsl.%s" % node.name, pyreadme, "python/README.md")
    if isinstance(node, ast.ClassDef) and node.name == "Model":
        for f in node.body:
            if isinstance(f, ast.FunctionDef) and not f.name.startswith("_"):
                need("." + f.name, pyreadme, "python/README.md")
print("%d names checked, %d missing" % (checked, missing))
sys.exit(1 if missing or checked < 60 else 0)
