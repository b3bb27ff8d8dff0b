#!/usr/bin/env python3
"""has_gpu.py: exit 0 when the NVIDIA driver loads and sees a CUDA device; otherwise
prints why on stderr and exits 1 (make check-gpu and make bench-gpu then skip)."""
import ctypes
import sys

try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    sys.exit("no NVIDIA driver (%s)" % e)
n = ctypes.c_int(0)
if cu.cuInit(0) != 0 or cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
    sys.exit("no CUDA device")
