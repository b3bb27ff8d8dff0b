#!/bin/sh
# Compile-time benchmark (make bench-compile): tdslc at its default optimization level
# on the moons sample and on deep MLPs from bench/gen_mlp.py (10, 50, 100, 200 layers
# of width 16; "mlpN"), writing a .so each. Prints wall and CPU seconds (CPU includes gcc's
# assembler and linker) and peak RSS per model; wall clock depends on the machine's
# load, CPU time much less.   usage: bench/compile_time.sh [LAYERS...]
cd "$(dirname "$0")/.." || exit 2
B=build
OUT=$B/bench/compile
mkdir -p $OUT
LAYERS=${*:-10 50 100 200}
printf "compile time, tdslc default -O (%s cores, load %s)\n" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf "%-16s %10s %10s %12s\n" "model" "wall s" "cpu s" "peak RSS MB"
measure() { # NAME FILE
  if /usr/bin/time -f "%e %U %S %M" -o $OUT/$1.time $B/tdslc "$2" -o $OUT/$1.so 2> $OUT/$1.log; then
    awk -v n="$1" '{ printf "%-16s %10.2f %10.2f %12.0f\n", n, $1, $2 + $3, $4 / 1024 }' $OUT/$1.time
  else
    printf "%-16s %10s (tdslc failed, see %s)\n" "$1" "-" "$OUT/$1.log"
  fi
}
measure moons samples/moons/moons.tdsl
for l in $LAYERS; do
  /usr/bin/python3 bench/gen_mlp.py "$l" > $OUT/mlp$l.tdsl
  measure "mlp$l" $OUT/mlp$l.tdsl
done
