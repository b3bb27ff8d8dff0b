#!/bin/sh
# Runs the shared conformance suite (../shared/conformance) against build/tdslc with
# each code-generation flag set: -O0, -O3, --precision=double, -O1 --check-bounds (every `values`
# expectation must hold with each). Skips cleanly when the suite is absent.
# Cases listed in xfail.txt (with the reason, a bug in another stage) are reported as
# XFAIL and do not fail the run. Skips when the compiler has no front end yet.
# The last line is "N passed, M failed" (over all flag sets).
# usage: run-flags.sh [TDSLC] [extra args for the runner, e.g. --filter grad_]
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
tdslc=${1:-$root/build/tdslc}
[ $# -gt 0 ] && shift
suite=$root/../shared/conformance
[ -d "$suite" ] || suite=/work/shared/conformance
if [ ! -x "$suite/run" ]; then
  echo "SKIP: no conformance suite (../shared/conformance)"
  exit 0
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
probe=$tmp/probe.tdsl
echo 'let%op x = range 2' > "$probe"
"$tdslc" --dump-shapes "$probe" >/dev/null 2>&1
if [ $? -eq 2 ]; then
  echo "SKIP: $tdslc has no front end yet"
  echo "0 passed, 0 failed"
  exit 0
fi
xfail=$(sed -n 's/^\([a-z0-9_]*\).*/\1/p' "$root/testsuite/conformance/xfail.txt" 2>/dev/null | tr '\n' ' ')
pass=0
fail=0
for flags in -O0 -O3 --precision=double "-O1 --check-bounds"; do
  name=$(echo "$flags" | tr -dc 'A-Za-z0-9')
  printf '#!/bin/sh\nexec "%s" "$@" %s\n' "$tdslc" "$flags" > "$tmp/tdslc-$name"
  chmod +x "$tmp/tdslc-$name"
  out=$("$suite/run" --tdslc "$tmp/tdslc-$name" "$@" 2>&1)
  for case in $(echo "$out" | sed -n 's/^PASS \([^ :]*\).*/\1/p'); do
    pass=$((pass + 1))
    case " $xfail " in *" $case "*) echo "[$flags] XPASS $case (listed in xfail.txt)";; esac
  done
  for case in $(echo "$out" | sed -n 's/^FAIL \([^ :]*\).*/\1/p'); do
    case " $xfail " in
      *" $case "*) echo "[$flags] XFAIL $case";;
      *) fail=$((fail + 1)); echo "$out" | grep "^FAIL $case" | sed "s/^/[$flags] /";;
    esac
  done
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
