#!/bin/sh
# Runs every test of tdslc: C unit tests, the lit suite against the plain build and
# against the ASan+UBSan build. Prints a summary per part and a last line
# "N passed, M failed".
cd "$(dirname "$0")/.." || exit 2
B=build
# lit: $LIT, else the newest llvm-N's copy, else one on PATH (pip's lit).
if [ -z "$LIT" ]; then
  for f in $(ls -d /usr/lib/llvm-*/build/utils/lit/lit.py 2>/dev/null | sort -t- -k2 -n -r); do
    LIT="/usr/bin/python3 $f"
    break
  done
fi
LIT=${LIT:-lit}
pass=0
fail=0
# libgccjit leaks internally; LeakSanitizer ignores it (the lit config does the same).
LSAN_OPTIONS="suppressions=$PWD/testsuite/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS

for kind in unit unit-asan; do
  for t in $B/$kind/test_*; do
    [ -x "$t" ] || continue
    if "$t" > $B/$kind/$(basename "$t").log 2>&1; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: $t (see $B/$kind/$(basename "$t").log)"
      tail -n 20 $B/$kind/$(basename "$t").log
    fi
  done
done
echo "unit tests: $pass passed, $fail failed"

run_lit() {
  label=$1
  out=$B/lit-$label.log
  TDSLC=$2 $LIT -sv testsuite/lit > "$out" 2>&1
  p=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$out" | head -n 1)
  f=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$out" | head -n 1)
  p=${p:-0}; f=${f:-0}
  if [ "$p" = 0 ] && [ "$f" = 0 ]; then
    echo "lit ($label): no result, see $out"; f=1
  fi
  grep -E '^(FAIL|XPASS|UNRESOLVED):' "$out" | head -n 50
  echo "lit ($label): $p passed, $f failed"
  pass=$((pass + p))
  fail=$((fail + f))
}
run_lit plain "$PWD/$B/tdslc"
run_lit asan "$PWD/$B/asan/tdslc"

# Fuzzing smoke: the front end over the seed corpus plus a few seconds of mutations
# (`make fuzz` runs longer). New inputs go to a scratch directory, not the corpus.
# Both libFuzzer smokes use a fixed seed, so that a commit's verdict does not depend on
# the draw; `make fuzz` and `make fuzz-meta` explore with random seeds.
fz=$B/fuzz/fuzz_parse
if [ -x "$fz" ]; then
  rm -rf $B/fuzz/smoke && mkdir -p $B/fuzz/smoke
  if "$fz" -seed=1 -max_total_time=20 -timeout=10 -max_len=8192 -dict=testsuite/fuzz/tdsl.dict -artifact_prefix=$B/fuzz/smoke/ \
       $B/fuzz/smoke testsuite/fuzz/corpus > $B/fuzz/smoke.log 2>&1; then
    pass=$((pass + 1)); echo "fuzz smoke: passed"
  else
    fail=$((fail + 1)); echo "FAIL: fuzz smoke (see $B/fuzz/smoke.log)"; tail -n 30 $B/fuzz/smoke.log
  fi
fi

# The runtime's metadata parser (libFuzzer, testsuite/fuzz/fuzz_meta.c): 10 seconds.
fm=$B/fuzz/fuzz_meta
if [ -x "$fm" ]; then
  rm -rf $B/fuzz/meta_smoke && mkdir -p $B/fuzz/meta_smoke
  if "$fm" -seed=1 -max_total_time=10 -timeout=10 -max_len=4096 -artifact_prefix=$B/fuzz/meta_smoke/ \
       $B/fuzz/meta_smoke testsuite/fuzz/meta_corpus > $B/fuzz/meta_smoke.log 2>&1; then
    pass=$((pass + 1)); echo "metadata fuzz smoke: passed"
  else
    fail=$((fail + 1)); echo "FAIL: metadata fuzz smoke (see $B/fuzz/meta_smoke.log)"; tail -n 30 $B/fuzz/meta_smoke.log
  fi
fi

# The runtime's checkpoint and array readers (testsuite/fuzz/fuzz_load.c): 10 seconds.
# libFuzzer's 2 GB memory limit makes an allocation a hostile file asks for a failure.
fl=$B/fuzz/fuzz_load
if [ -x "$fl" ]; then
  rm -rf $B/fuzz/load_smoke && mkdir -p $B/fuzz/load_smoke
  if "$fl" -seed=1 -max_total_time=10 -timeout=10 -max_len=4096 -dict=testsuite/fuzz/load.dict \
       -artifact_prefix=$B/fuzz/load_smoke/ $B/fuzz/load_smoke testsuite/fuzz/load_corpus > $B/fuzz/load_smoke.log 2>&1; then
    pass=$((pass + 1)); echo "checkpoint fuzz smoke: passed"
  else
    fail=$((fail + 1)); echo "FAIL: checkpoint fuzz smoke (see $B/fuzz/load_smoke.log)"; tail -n 30 $B/fuzz/load_smoke.log
  fi
fi

# Whole-pipeline fuzzing smoke (testsuite/fuzz/pipeline.py): the regression inputs of
# testsuite/fuzz/regress, then 20 seconds of generated and mutated programs (fixed seed)
# through the ASan+UBSan compiler (`make fuzz` runs longer).
if [ -x $B/asan/tdslc ]; then
  if /usr/bin/python3 testsuite/fuzz/pipeline.py --tdslc "$PWD/$B/asan/tdslc" --time 20 --seed 1 \
       --out $B/fuzz/pipeline-smoke > $B/fuzz/pipeline-smoke.log 2>&1; then
    pass=$((pass + 1)); echo "pipeline fuzz smoke: passed ($(tail -n 1 $B/fuzz/pipeline-smoke.log))"
  else
    fail=$((fail + 1)); echo "FAIL: pipeline fuzz smoke (see $B/fuzz/pipeline-smoke.log)"; tail -n 20 $B/fuzz/pipeline-smoke.log
  fi
fi

# The shared conformance suite's expectations at -O0, -O3 and in double precision.
out=$(sh testsuite/conformance/run-flags.sh "$PWD/$B/tdslc" 2>&1)
echo "$out" | grep -E '^(\[|SKIP)' | grep -v XFAIL | head -n 40
p=$(echo "$out" | tail -n 1 | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(echo "$out" | tail -n 1 | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$p" ]; then p=0; f=1; echo "$out" | tail -n 5; fi
echo "conformance (-O0, -O3, double, --check-bounds): $p passed, $f failed"
pass=$((pass + p))
fail=$((fail + f))

# Counted parts that print their own "N passed, M failed" last line.
run_part() {
  label=$1; shift
  out=$B/$label.log
  "$@" > "$out" 2>&1
  last=$(tail -n 1 "$out")
  p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
  f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  if [ -z "$p" ]; then
    echo "$label: no result, see $out"; tail -n 5 "$out"; p=0; f=1
  fi
  grep -E '^FAIL' "$out" | cut -c1-400 | head -n 40
  echo "$label: $p passed, $f failed"
  pass=$((pass + p))
  fail=$((fail + f))
}
# Gradients of every differentiable op and of composite models against PyTorch,
# finite differences and the gradient rules of tdsl(7) (testsuite/gradcheck/gradcheck.py).
# The cases themselves: PyTorch's gradients against finite differences of PyTorch's loss
# (inputs away from kinks and ties, finite differences accurate to the tolerance).
run_part gradcheck-selftest /usr/bin/python3 testsuite/gradcheck/gradcheck.py --selftest
run_part gradcheck /usr/bin/python3 testsuite/gradcheck/gradcheck.py --tdslc "$PWD/$B/tdslc" --workdir "$B/gradcheck"
# The same models through the sanitized compiler, against PyTorch only.
run_part gradcheck-asan /usr/bin/python3 testsuite/gradcheck/gradcheck.py --tdslc "$PWD/$B/asan/tdslc" \
  --workdir "$B/gradcheck-asan" --no-fd --no-f32
# The differential oracle (tdslc --check): every conformance values case and sample at
# -O0..-O3 against the plain -O0 loop IR, and the CUDA backend under emulation.
run_part check-oracle /usr/bin/python3 testsuite/check/oracle.py --tdslc "$PWD/$B/tdslc"
run_part check-oracle-cuda /usr/bin/python3 testsuite/check/oracle.py --tdslc "$PWD/$B/tdslc" --cuda --levels 0,3
# The runtime under threads: one model from several threads, close while in use, fork,
# under TSan and ASan (testsuite/runtime/threads.sh; `make check-runtime-threads`).
if [ -x $B/rt-stress/host-tsan ]; then
  run_part runtime-threads sh testsuite/runtime/threads.sh $B/rt-stress
fi
# Samples built against the installed toolchain (testsuite/samples.sh).
run_part samples sh testsuite/samples.sh

# The Python package (python/tdsl) against numpy and PyTorch: models, checkpoints read
# by safetensors, the stdlib's losses and optimizers step by step (pytest).
out=$B/pytest.log
TDSLC="$PWD/$B/tdslc" TDSL_LIBRARY="$PWD/$B/libtdslrt.so" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  python/tests > "$out" 2>&1
last=$(tail -n 1 "$out")
p=$(echo "$last" | grep -o '[0-9]* passed' | awk '{print $1}')
f=$(echo "$last" | grep -o '[0-9]* \(failed\|errors\{0,1\}\)' | awk '{s += $1} END {print s + 0}')
if [ -z "$p" ]; then p=0; f=$((f + 1)); echo "pytest: no result, see $out"; tail -n 5 "$out"; fi
grep -E '^(FAILED|ERROR)' "$out" | head -n 40
echo "pytest: $p passed, $f failed"
pass=$((pass + p))
fail=$((fail + f))

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
