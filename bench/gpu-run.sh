#!/bin/sh
# gpu-run.sh: everything GPU-side in one command on a lent GPU machine (its image has
# CUDA, PyTorch and gcc but no libgccjit, re2c or bison), in two halves:
#   here:        sh bench/gpu-run.sh prepare   (make, then ../shared/tools/gpu-bundle: .gpu/)
#   GPU machine: sh bench/gpu-run.sh           (device run with carry [".gpu"])
# The second half runs make check-gpu's script (conformance cases and gradient checks
# against the CPU backend, the moons sample trains) and then make bench-gpu's, and
# leaves their output in $OUT (or build/) for the session to read.
cd "$(dirname "$0")/.." || exit 2
if [ "$1" = prepare ]; then
  make -j2 all build/unit/test_cuda_emulate || exit 1
  sh ../shared/tools/gpu-bundle || exit 1
  # libraries tdslc and libtdslrt need beyond the bundle's libgccjit (the GPU image lacks them)
  for l in libcjson.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')" .gpu/lib/ || exit 1
  done
  exit 0
fi
[ -f .gpu/env.sh ] || { echo "gpu-run.sh: no .gpu/ (run 'sh bench/gpu-run.sh prepare' first, carry .gpu)"; exit 2; }
. .gpu/env.sh
dest=${OUT:-build}
mkdir -p "$dest"
nvidia-smi > "$dest/nvidia-smi.txt" 2>&1
B=build sh testsuite/cuda/check-gpu.sh 2>&1 | tee "$dest/check-gpu.txt"
B=build sh bench/gpu.sh "${BENCH_SECS:-2}" 2>&1 | tee "$dest/bench-gpu.txt"
