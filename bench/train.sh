#!/bin/sh
# Training-step benchmark (make bench): steps/second of the moons MLP training step
# (2-H-H-1, hinge loss, SGD) at batch 10 / hidden 16 and batch 1000 / hidden 256, for
# tdslc (bench/train_b*_h*.tdsl through tdsl.h), PyTorch eager (bench/train_torch.py)
# and hand-written C (bench/train_ref.c, -O3 -march=native), all single-threaded, in
# one run; prints a table with the ratios of steps per second of CPU time (the wall clock
# of a loaded machine says little). Then the batch-1000 step on two threads, tdslc
# against PyTorch at 2 threads and at its best setting (wall clock: meaningful only on
# an otherwise idle machine).   usage: bench/train.sh [SECONDS per measure]
cd "$(dirname "$0")/.." || exit 2
B=build
OUT=$B/bench
SECS=${1:-${BENCH_SECS:-2}}
TDSLC_OPT=${TDSLC_OPT:--O3}
mkdir -p $OUT
set -e
${CC:-gcc} -O3 -march=native -o $OUT/train_ref bench/train_ref.c
${CC:-gcc} -O2 -Iruntime -o $OUT/train_tdsl bench/train_tdsl.c -L$B -ltdslrt -Wl,-rpath,"$PWD/$B"
set +e
num() { sed -n 's/^cpu steps\/s //p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else printf "n/a" }'; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TDSL_NUM_THREADS=1
printf "training step, moons MLP, single thread, %ss per measure (steps/s of CPU time, higher is better)\n" "$SECS"
printf "%-22s %12s %12s %12s %13s %11s\n" "config" "tdslc" "torch eager" "C -O3" "tdslc/torch" "tdslc/C"
for cfg in "10 16" "1000 256"; do
  set -- $cfg
  model=$OUT/train_b$1_h$2.so
  t=0
  if $B/tdslc $TDSLC_OPT bench/train_b$1_h$2.tdsl -o $model 2> $OUT/tdslc-b$1.log; then
    t=$($OUT/train_tdsl $model $1 "$SECS" 2>> $OUT/tdslc-b$1.log | num)
  fi
  [ -n "$t" ] || t=0
  [ "$t" = 0 ] && echo "  (tdslc failed at batch $1, see $OUT/tdslc-b$1.log: $(tail -n 1 $OUT/tdslc-b$1.log))"
  p=$(/usr/bin/python3 bench/train_torch.py $1 $2 "$SECS" 2> $OUT/torch-b$1.log | num)
  [ -n "$p" ] || { p=0; echo "  (torch failed, see $OUT/torch-b$1.log)"; }
  c=$($OUT/train_ref $1 $2 "$SECS" | num)
  printf "%-22s %12s %12s %12s %13s %11s\n" "batch $1, hidden $2" "$t" "$p" "$c" "$(ratio $t $p)" "$(ratio $t $c)"
done

# Two threads (both cores): wall-clock steps/s of the batch-1000 step, tdslc at 2 threads
# against PyTorch at 2 threads and at 1 thread (whichever is faster is its best setting
# here), three interleaved rounds, the median of each.
wall() { sed -n 's/^steps\/s //p'; }
med3() { printf "%s\n%s\n%s\n" "$1" "$2" "$3" | sort -g | sed -n 2p; }
model=$OUT/train_b1000_h256.so
if [ -f $model ]; then
  T=""; P2=""; P1=""
  for r in 1 2 3; do
    T="$T $(TDSL_NUM_THREADS=2 $OUT/train_tdsl $model 1000 "$SECS" 2> /dev/null | wall)"
    P2="$P2 $(OMP_NUM_THREADS=2 BENCH_THREADS=2 /usr/bin/python3 bench/train_torch.py 1000 256 "$SECS" 2> /dev/null | wall)"
    P1="$P1 $(BENCH_THREADS=1 /usr/bin/python3 bench/train_torch.py 1000 256 "$SECS" 2> /dev/null | wall)"
  done
  t=$(med3 $T); p2=$(med3 $P2); p1=$(med3 $P1)
  best=$(awk -v a="$p1" -v b="$p2" 'BEGIN { print (a > b ? a : b) }')
  printf "\ntraining step, batch 1000, hidden 256, 2 threads, %ss per measure (wall-clock steps/s, median of 3 interleaved rounds)\n" "$SECS"
  printf "%-22s %12s %12s %12s %13s %14s\n" "config" "tdslc 2 thr" "torch 2 thr" "torch 1 thr" "tdslc/torch" "tdslc/best"
  printf "%-22s %12s %12s %12s %13s %14s\n" "batch 1000, hidden 256" "$t" "$p2" "$p1" "$(ratio $t $p2)" "$(ratio $t $best)"
fi
