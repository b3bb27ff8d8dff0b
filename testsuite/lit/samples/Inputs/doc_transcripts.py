"""Checks the examples of the documentation that can be run as written.
- In a man page, an .EX block; in Markdown, a ``` fenced block.
- A fenced block tagged ```tdsl is a whole program: it must compile (tdslc
  --dump-shapes), and it is the file a later transcript of the same page names when no
  `$ cat` wrote that file (README's "A model ... then compile it: $ tdslc ... moons.tdsl").
- A block whose lines start with "$ " is a terminal transcript. `$ cat FILE` followed by
  lines writes FILE; `$ tdslc ARGS` (a trailing \\ continues the line) runs the compiler
  under test in a scratch directory, and the lines up to the next "$ " are its output,
  standard error included; a line "..." stands for any number of lines. The exit status
  must be 1 when that output shows an error, else 0. A transcript running anything else
  is skipped (said so).
Prints one line per checked block, then a count.
usage: doc_transcripts.py TDSLC WORKDIR FILE..."""
import os
import re
import shlex
import subprocess
import sys

# The sanitized compiler (make check runs this test with it too) prints LeakSanitizer's
# table of suppressed libgccjit leaks on stderr at exit; a transcript shows none.
QUIET_ENV = dict(os.environ)
if "LSAN_OPTIONS" in QUIET_ENV:
    QUIET_ENV["LSAN_OPTIONS"] += ":print_suppressions=0"

tdslc, work = sys.argv[1:3]
pages = sys.argv[3:]


def unroff(s):
    s = s.replace("\\(dq", '"').replace("\\(aq", "'").replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", s)


def blocks(path):
    """(tag, text) of each example block, in page order."""
    text = open(path).read()
    if path.endswith(".md"):
        return [(m.group(1), m.group(2)) for m in
                re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.S | re.M)]
    return [("", unroff(b)) for b in re.findall(r"^\.EX\n(.*?)^\.EE", text, re.S | re.M)]


def matches(want, got):
    """want's lines against got's, "..." matching any run of lines."""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(want[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and want[0] == got[0] and matches(want[1:], got[1:])


def transcript(where, where_page, text, models, d):
    """Checks one transcript; returns None when skipped, else whether it held."""
    steps = []  # (command line, following lines)
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps and steps[-1][0].endswith("\\"):
            steps[-1][0] = steps[-1][0][:-1] + " " + line.strip()
        elif steps:
            steps[-1][1].append(line)
    if any(shlex.split(c)[0] not in ("cat", "tdslc") for c, _ in steps):
        print("SKIP %s (runs more than cat and tdslc)" % where)
        return None
    ok = True
    for cmd, lines in steps:
        argv = shlex.split(cmd)
        if argv[0] == "cat":
            with open(os.path.join(d, argv[1]), "w") as f:
                f.write("".join(l + "\n" for l in lines))
            continue
        for k, a in enumerate(argv):
            if not a.endswith(".tdsl") or os.path.exists(os.path.join(d, a)):
                continue
            if "/" in a:
                # a path into the tree, relative to the page (README's ../shared/...)
                tree = os.path.join(os.path.dirname(os.path.abspath(where_page)), a)
                if not os.path.exists(tree):
                    print("SKIP %s ($ %s: no %s in this checkout)" % (where, cmd, a))
                    return None
                argv[k] = tree
            elif a in models or "" in models:
                with open(os.path.join(d, a), "w") as f:
                    f.write(models.get(a, models.get("")))
            else:
                print("FAIL %s: $ %s: no file %s and no ```tdsl block before" % (where, cmd, a))
                return False
        r = subprocess.run([tdslc] + argv[1:], cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=QUIET_ENV)
        got = r.stdout.splitlines()
        want_rc = 1 if any(": error: " in l for l in lines) else 0
        if not matches(lines, got) or r.returncode != want_rc:
            print("FAIL %s: $ %s\n--- the page shows (exit %d)\n%s\n--- tdslc prints (exit %d)\n%s"
                  % (where, cmd, want_rc, "\n".join(lines), r.returncode, r.stdout))
            ok = False
    return ok


checked = failed = 0
for page in pages:
    name = os.path.basename(page)
    models = {}
    for i, (tag, text) in enumerate(blocks(page)):
        where = "%s block %d" % (name, i)
        d = os.path.join(work, "%s.%d" % (name, i))
        os.makedirs(d, exist_ok=True)
        if tag == "tdsl":
            models[""] = text
            path = os.path.join(d, "example.tdsl")
            with open(path, "w") as f:
                f.write(text)
            r = subprocess.run([tdslc, "--dump-shapes", path], capture_output=True, text=True)
            checked += 1
            failed += r.returncode != 0
            print("ok %s (compiles)" % where if r.returncode == 0 else
                  "FAIL %s: does not compile\n%s" % (where, r.stderr))
        elif any(l.startswith("$ ") for l in text.splitlines()):
            res = transcript(where, page, text, models, d)
            if res is not None:
                checked += 1
                failed += not res
                if res:
                    print("ok %s (transcript)" % where)
print("%d checked, %d failed" % (checked, failed))
sys.exit(1 if failed else 0)
