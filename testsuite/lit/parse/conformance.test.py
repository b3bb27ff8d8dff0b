# Helper of conformance.test: runs tdslc --dump-ast on every conformance case.
import glob, os, subprocess, sys

tdslc, cases = sys.argv[1], sys.argv[2]
if not os.path.isdir(cases):
    print("conformance-parse: ok (no conformance directory, skipped)")
    sys.exit(0)
bad = []
for f in sorted(glob.glob(os.path.join(cases, "*.tdsl"))):
    p = subprocess.run([tdslc, "--dump-ast", f], capture_output=True, text=True)
    name = os.path.basename(f)
    if name == "err_syntax.tdsl":
        if p.returncode != 1 or (name + ":3:") not in p.stderr or "')'" not in p.stderr:
            bad.append("%s: rc=%d %s" % (name, p.returncode, p.stderr))
    elif p.returncode != 0 or not p.stdout.strip():
        bad.append("%s: rc=%d %s" % (name, p.returncode, p.stderr))
for b in bad:
    print("FAIL", b)
print("conformance-parse: ok" if not bad else "conformance-parse: %d failures" % len(bad))
