"""Prints each tensor of a safetensors file as NAME DTYPE SHAPE [BEGIN,END] (sorted)."""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
for k in sorted(h):
    if k != "__metadata__":
        print(k, h[k]["dtype"], h[k]["shape"], h[k]["data_offsets"])
