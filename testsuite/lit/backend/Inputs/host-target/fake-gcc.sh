#!/bin/sh
# Stands in for `gcc -### -E -march=native ...`: prints the cc1 line a gcc of the kind
# named by $FAKE_TARGET would print on stderr.
[ -n "$FAKE_GCC_LOG" ] && echo "$*" >> "$FAKE_GCC_LOG"
case "$FAKE_TARGET" in
  old-gcc-avx512) flags='"-march=znver3" -mmmx -msse2 -mavx -mavx2 -mfma -mavx512f -mavx512vl -mno-avx512er' ;;
  old-gcc-avx2) flags='"-march=znver3" -mmmx -msse2 -mavx -mavx2 -mfma -mno-avx512f' ;;
  plain) flags='"-march=x86-64" -mmmx -msse2 -mno-avx -mno-avx2 -mno-avx512f' ;;
  bare) flags='"-march=x86-64"' ;;
  none) exit 1 ;;
esac
echo " /usr/lib/gcc/x86_64-linux-gnu/12/cc1 -E -quiet /dev/null $flags --param l1-cache-size=32" >&2
