#!/bin/sh
# make bench-gpu: tdslc --backend=cuda against PyTorch on the same GPU, in one run:
# sgemm fp32 1024^3 and 4096^3 (and TF32 when tdslc has --tf32), the MLP training step
# at batch 8192 / hidden 1024 and batch 1000 / hidden 256, the moons step (batch 10),
# a batched matmul, a padded 3x3 convolution and a row reduction. Prints ms per call
# (per step) and the ratio torch ms / tdslc ms (above 1: tdslc is faster).
# Without an NVIDIA GPU it says so and exits 0. usage: bench/gpu.sh [SECONDS per measure]
# It never runs make (the GPU machine of bench/gpu-run.sh has no re2c/bison): build first.
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
OUT=$B/bench-gpu
SECS=${1:-${BENCH_SECS:-2}}
# BENCH_GPU_FORCE=1 runs it anyway (to test the script: every tdslc cell is then n/a).
if [ -z "$BENCH_GPU_FORCE" ] && ! python3 testsuite/cuda/has_gpu.py; then
  echo "bench-gpu: no NVIDIA GPU on this machine: nothing measured"
  exit 0
fi
mkdir -p $OUT
set -e
${CC:-gcc} -O2 -Iruntime -o $OUT/gpu_tdsl bench/gpu_tdsl.c -L$B -ltdslrt -Wl,-rpath,"$PWD/$B"
${CC:-gcc} -O2 -Iruntime -o $OUT/train_tdsl bench/train_tdsl.c -L$B -ltdslrt -Wl,-rpath,"$PWD/$B"
set +e
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '.')
ARCH=${ARCH:-sm_${cap:-80}}
PY=${PYTHON:-python3}
TORCH=yes
$PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null || TORCH=no
[ $TORCH = no ] && echo "(no PyTorch with CUDA for $PY: torch columns n/a)"
ms_of() { sed -n 's/^ms //p'; }
steps_ms() { sed -n 's/^steps\/s //p' | awk '{ if ($1 > 0) printf "%.4f", 1000 / $1 }'; }
ratio() { awk -v t="$1" -v p="$2" 'BEGIN { if (t > 0 && p > 0) printf "%.3fx", p / t; else printf "n/a" }'; }
row() { printf "%-40s %12s %12s %10s\n" "$1" "${2:-n/a}" "${3:-n/a}" "$(ratio "$2" "$3")"; }
# tdslc ms per call of ROUTINE of bench/gpu/NAME.tdsl (FLAGS extra), its output c.
tdsl_ms() {
  name=$1; shift
  if $B/tdslc --backend=cuda --arch=$ARCH "$@" bench/gpu/$name.tdsl -o $OUT/$name$TAG.so 2> $OUT/$name$TAG.log; then
    $OUT/gpu_tdsl $OUT/$name$TAG.so c.forward c "$SECS" 2>> $OUT/$name$TAG.log | ms_of
  fi
}
torch_ms() { [ $TORCH = yes ] && $PY bench/gpu_torch.py "$1" "$SECS" 2>> $OUT/torch.log | ms_of; }
echo "tdslc --backend=cuda --arch=$ARCH vs PyTorch, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), ${SECS}s per measure"
printf "%-40s %12s %12s %10s\n" "work" "tdslc ms" "torch ms" "torch/tdslc"
for n in 1024 4096; do
  TAG= ; row "sgemm fp32 ${n}^3" "$(tdsl_ms sgemm$n)" "$(torch_ms sgemm$n)"
  t=
  if $B/tdslc --help 2>&1 | grep -q -- --tf32; then TAG=-tf32; t=$(tdsl_ms sgemm$n --tf32); fi
  TAG= ; row "sgemm ${n}^3, TF32 (torch allow_tf32)" "$t" "$(torch_ms sgemm$n-tf32)"
done
TAG=
row "bmm fp32 32 x 256^3" "$(tdsl_ms bmm)" "$(torch_ms bmm)"
row "conv 3x3 pad 1, 8x32x56x56 -> 32" "$(tdsl_ms conv3x3)" "$(torch_ms conv3x3)"
row "row sum 4096 x 4096" "$(tdsl_ms rowsum)" "$(torch_ms rowsum)"
for cfg in "8192 1024" "1000 256" "10 16"; do
  set -- $cfg
  model=$OUT/train_b$1_h$2.so
  t=
  if $B/tdslc --backend=cuda --arch=$ARCH bench/train_b$1_h$2.tdsl -o $model 2> $OUT/train-b$1.log; then
    t=$($OUT/train_tdsl $model $1 "$SECS" 2>> $OUT/train-b$1.log | steps_ms)
  fi
  p=
  [ $TORCH = yes ] && p=$($PY bench/train_torch.py $1 $2 "$SECS" cuda 2>> $OUT/torch.log | steps_ms)
  row "MLP step batch $1, hidden $2 (eager)" "$t" "$p"
done
# The moons step against tdslc's own CPU code (the issue asks for no slower than 3x).
c=
if $B/tdslc -O3 bench/train_b10_h16.tdsl -o $OUT/train_b10_h16_cpu.so 2> $OUT/train-cpu.log; then
  c=$($OUT/train_tdsl $OUT/train_b10_h16_cpu.so 10 "$SECS" 2>> $OUT/train-cpu.log | steps_ms)
fi
printf "%-40s %12s %12s %10s\n" "MLP step batch 10: tdslc CPU" "${c:-n/a}" "" "cuda/CPU $(ratio "$c" "$t")"
echo "(logs in $OUT; n/a: that side failed or is missing, see its log)"
