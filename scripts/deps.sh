#!/bin/sh
# Installs what building and testing tdslc needs (Debian 12), only if missing.
# python3-torch: the gradient checks and the training benchmark; libopenblas0-pthread:
# its BLAS (with the reference libblas3 alone, PyTorch matmuls run ~10x slower).
set -e
pkgs="gcc make re2c bison libgccjit-12-dev llvm-14-tools clang libclang-rt-14-dev python3 python3-numpy python3-torch libopenblas0-pthread"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "deps: installing$missing"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
echo "deps: ok"
