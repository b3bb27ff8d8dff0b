#!/bin/sh
# Installs what building and testing tdslc needs (Debian 12), only if missing.
# python3-torch: the gradient checks and the training benchmark; libopenblas0-pthread:
# its BLAS (with the reference libblas3 alone, PyTorch matmuls run ~10x slower).
# libcjson-dev: the runtime's checkpoint JSON header; python3-pytest, python3-matplotlib:
# the Python package's tests and sample; safetensors (not packaged by Debian 12) comes
# from PyPI for Debian's python3: the checkpoint tests read tdslc files with it.
set -e
pkgs="gcc make re2c bison libgccjit-12-dev llvm-14-tools clang libclang-rt-14-dev python3 python3-numpy python3-torch libopenblas0-pthread libcjson-dev python3-pytest python3-matplotlib python3-pip"
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
if ! /usr/bin/python3 -c 'import safetensors' >/dev/null 2>&1; then
  echo "deps: installing safetensors (pip)"
  /usr/bin/python3 -m pip install -q --break-system-packages safetensors
fi
echo "deps: ok"
