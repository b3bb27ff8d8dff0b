#!/bin/sh
# make check-gpu: the CUDA backend on a real GPU. Every conformance case with values runs
# on both backends and must agree (check_cases.py --gpu); then the moons sample trains
# with each backend and the times are compared. Without an NVIDIA GPU: says so, exit 0.
cd "$(dirname "$0")/../.." || exit 2
B=${B:-build}
if ! python3 testsuite/cuda/has_gpu.py; then
  echo "check-gpu: no NVIDIA GPU on this machine: skipped"
  exit 0
fi
fail=0
# The hand-built graphs of the unit test, on the GPU instead of the emulation.
if TDSL_CUDA_GPU=1 "$B/unit/test_cuda_emulate" > "$B/check-gpu-unit.log" 2>&1; then
  echo "PASS unit test_cuda_emulate on the GPU"
else
  echo "FAIL unit test_cuda_emulate on the GPU:"; tail -n 20 "$B/check-gpu-unit.log"; fail=1
fi
python3 testsuite/cuda/check_cases.py --gpu --tdslc "$B/tdslc" -j 4 || fail=1

# Dynamic dimensions: the moons model with a dynamic batch (trained at 10, predicting at
# 1, 800 and 10) on the GPU against the CPU model. Needs numpy.
PY=${PYTHON:-python3}
dyn=$(mktemp -d)
if "$B/tdslc" -O0 testsuite/lit/cuda/Inputs/moons_dyn.tdsl -o "$dyn/mc.so" &&
   "$B/tdslc" --backend=cuda testsuite/lit/cuda/Inputs/moons_dyn.tdsl -o "$dyn/mg.so" &&
   "$PY" testsuite/lit/cuda/Inputs/moons_dyn_cuda.py "$PWD" "$dyn/mc.so" "$dyn/mg.so" --gpu > "$dyn/out.txt" 2>&1 &&
   [ "$(grep -c ': same$' "$dyn/out.txt")" = 8 ]; then
  echo "PASS dynamic batch (moons) on the GPU"
else
  echo "FAIL dynamic batch (moons) on the GPU:"; tail -n 20 "$dyn/out.txt"; fail=1
fi
rm -rf "$dyn"

if [ -f samples/moons/moons.tdsl ] && [ -f samples/moons/main.c ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cc -O2 -Iruntime -o "$tmp/moons" samples/moons/main.c "$B/libtdslrt.a" -ldl -lm || fail=1
  for be in cc cuda; do
    if ! (cd samples/moons && "../../$B/tdslc" --backend=$be moons.tdsl -o "$tmp/moons-$be.so"); then
      echo "FAIL moons: --backend=$be does not compile"; fail=1; continue
    fi
    start=$(python3 -c 'import time; print(time.time())')
    # moons exits 3 when the training accuracy is below 100%: not a failure here.
    rc=0
    (cd samples/moons && "$tmp/moons" "$tmp/moons-$be.so") > "$tmp/out-$be.txt" 2>&1 || rc=$?
    if [ $rc = 0 ] || [ $rc = 3 ]; then
      secs=$(python3 -c "import time; print('%.3f' % (time.time() - $start))")
      echo "moons ($be): run took $secs s; $(grep '^trained' "$tmp/out-$be.txt" | tail -n 1);" \
        "$(grep -i accuracy "$tmp/out-$be.txt" | tail -n 1)"
    else
      echo "FAIL moons ($be):"; tail -n 5 "$tmp/out-$be.txt"; fail=1
    fi
  done
fi
[ $fail = 0 ] && echo "check-gpu: ok" || echo "check-gpu: FAILED"
exit $fail
