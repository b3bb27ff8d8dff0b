#!/bin/sh
# Compile-time benchmark (make bench-compile): tdslc at its default optimization level
# on the moons sample and on deep MLPs from bench/gen_mlp.py (10, 50, 100, 200 layers
# of width 16; "mlpN"), writing a .so each, with a cold cache (a fresh cache directory);
# then the 50-layer MLP again (warm: every group from the cache) and with layer 25's
# width changed (edit: the groups it touched recompiled). Prints wall and CPU seconds
# (CPU includes the compile workers, gcc's assembler and linker) and peak RSS (the
# largest process) per row; wall clock depends on the machine's load, CPU time much
# less.   usage: bench/compile_time.sh [LAYERS...]
cd "$(dirname "$0")/.." || exit 2
B=build
OUT=$B/bench/compile
rm -rf $OUT/cache
mkdir -p $OUT/edit
export XDG_CACHE_HOME=$PWD/$OUT/cache
LAYERS=${*:-10 50 100 200}
printf "compile time, tdslc default -O, %s cores, %s; load %s\n" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-22s %10s %10s %12s\n" "model" "wall s" "cpu s" "peak RSS MB"
measure() { # NAME FILE [OUT]
  if /usr/bin/time -f "%e %U %S %M" -o $OUT/$1.time $B/tdslc -v "$2" -o ${3:-$OUT/$1.so} 2> $OUT/$1.log; then
    awk -v n="$1" '{ printf "%-22s %10.2f %10.2f %12.0f\n", n, $1, $2 + $3, $4 / 1024 }' $OUT/$1.time
  else
    printf "%-22s %10s (tdslc failed, see %s)\n" "$1" "-" "$OUT/$1.log"
  fi
}
measure moons samples/moons/moons.tdsl
for l in $LAYERS; do
  /usr/bin/python3 bench/gen_mlp.py "$l" > $OUT/mlp$l.tdsl
  measure "mlp$l" $OUT/mlp$l.tdsl
done
if [ -f $OUT/mlp50.tdsl ]; then
  measure mlp50-warm $OUT/mlp50.tdsl $OUT/mlp50w.so
  /usr/bin/python3 bench/gen_mlp.py 50 --edit 25 > $OUT/edit/mlp50.tdsl
  measure mlp50-edit25 $OUT/edit/mlp50.tdsl $OUT/edit/mlp50.so
  for r in mlp50 mlp50-warm mlp50-edit25; do
    printf "  %-12s %s\n" $r "$(grep -h "groups (" $OUT/$r.log | sed 's/^tdslc: //')"
  done
fi
