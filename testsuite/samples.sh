#!/bin/sh
# Builds the samples as a downstream project would: `make install` into a local prefix,
# then each sample's two-line Makefile (tdsl.mk through pkg-config) in a copy under
# build/samples, and runs them. micrograd must print the micrograd README numbers
# (computed by micrograd/PyTorch, not by tdslc); moons must reach 100% training accuracy,
# in C and from Python (samples/moons/train.py, which also writes a PNG).
# Prints PASS/FAIL per check and "N passed, M failed".
cd "$(dirname "$0")/.." || exit 2
B=build
PREFIX="$PWD/$B/samples/prefix"
W="$PWD/$B/samples"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1: $2"; }
rm -rf "$W" && mkdir -p "$W"
if ! make -s install PREFIX="$PREFIX" > "$W/install.log" 2>&1; then
  ko install "make install failed: $(tail -n 3 "$W/install.log")"
  echo "$pass passed, $((fail + 2)) failed"; exit 1
fi
ok install
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
build() {  # build NAME: copies samples/NAME and builds it with its Makefile
  cp -r "samples/$1" "$W/$1" &&
  make -C "$W/$1" > "$W/$1/build.log" 2>&1
}

if build micrograd; then
  out=$(cd "$W/micrograd" && ./micrograd 2>&1)
  want="g = 24.7041
a.grad = 138.8338
b.grad = 645.5773"
  if [ "$out" = "$want" ]; then ok micrograd; else ko micrograd "printed:
$out
wanted:
$want"; fi
else
  ko micrograd "build failed: $(tail -n 5 "$W/micrograd/build.log")"
fi

if build moons; then
  if (cd "$W/moons" && timeout 120 ./moons > moons.log 2>&1); then
    ok moons
    grep -E "^(epoch|training)" "$W/moons/moons.log" | tail -n 3
  else
    ko moons "exit $?: $(grep -v '^[|+]' "$W/moons/moons.log" | tail -n 6)"
  fi
else
  ko moons "build failed: $(tail -n 5 "$W/moons/build.log")"
fi
# The same model trained from Python through the installed tdsl package: it must train
# and write its PNG (loss curve and decision boundary) and a checkpoint.
PY_SITE=$(echo "$PREFIX"/lib/python3*/dist-packages)
if (cd "$W/moons" && env -u TDSLC -u TDSL_LIBRARY PYTHONPATH="$PY_SITE" timeout 300 /usr/bin/python3 train.py \
      --out moons.png > train-py.log 2>&1) &&
   [ "$(head -c 4 "$W/moons/moons.png" | od -An -c | tr -d ' ')" = "211PNG" ] && [ -s "$W/moons/moons.safetensors" ]; then
  ok moons-python
  tail -n 2 "$W/moons/train-py.log"
else
  ko moons-python "$(tail -n 6 "$W/moons/train-py.log")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
