#!/bin/sh
# The runtime under threads (testsuite/runtime/stress.c), built by `make
# check-runtime-threads` into DIR: every part under ThreadSanitizer (host, runtime and
# the model's --emit-c rendering instrumented) and under ASan+UBSan (gccjit model).
# fork runs in a host without sanitizers: TSan does not support a fork of a threaded
# process, and GCC 12's ASan allocator does not take its locks around fork, so a child
# forked while another thread is in malloc hangs in its first allocation (1 in 6 runs
# here; seen in the child's stacks: every thread waiting on the allocator's mutex).
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
for part in storm close twice direct many; do
  run "asan $part" "$dir/host-asan" "$dir/stress.so" "$dir/d" $part
done
run "fork" "$dir/host-plain" "$dir/stress.so" "$dir/d" fork
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
