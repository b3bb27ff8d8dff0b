#!/bin/sh
# The runtime under threads (testsuite/runtime/stress.c), built by `make
# check-runtime-threads` into DIR: every part under ThreadSanitizer (host, runtime and
# the model's --emit-c rendering instrumented) and under ASan+UBSan (gccjit model).
# fork is not run under TSan, which does not support a fork of a threaded process.
# Prints a line per run and "N passed, M failed".
dir=${1:-build/rt-stress}
pass=0
fail=0
run() {
  label=$1; shift
  if out=$(timeout 120 "$@" 2>&1); then
    pass=$((pass + 1)); echo "PASS: $label"
  else
    fail=$((fail + 1)); echo "FAIL: $label"; echo "$out" | head -n 40
  fi
}
rm -rf "$dir/d" && mkdir -p "$dir/d"
for part in storm close twice direct; do
  run "tsan $part" env TSAN_OPTIONS=halt_on_error=1:exitcode=66 "$dir/host-tsan" "$dir/stress-tsan.so" "$dir/d" $part
done
for part in storm close twice direct fork many; do
  run "asan $part" "$dir/host-asan" "$dir/stress.so" "$dir/d" $part
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
