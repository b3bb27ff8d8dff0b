"""Writes files for hostile-size.tdsl into DIR: a .npy and a safetensors checkpoint
whose shapes claim 2^30 x 3 float32 values over 24 bytes of data, and a valid .npy."""
import json
import struct
import sys

d = sys.argv[1]


def npy(name, shape, data):
    h = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (shape,)).encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    open("%s/%s.npy" % (d, name), "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)


npy("huge", (1 << 30, 3), bytes(24))
npy("ok", (2, 3), struct.pack("<6f", 0, 1, 2, 3, 4, 5))
h = json.dumps({"data": {"dtype": "F32", "shape": [1 << 30, 3], "data_offsets": [0, 12 << 30]}}).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open("%s/huge.safetensors" % d, "wb").write(struct.pack("<Q", len(h)) + h + bytes(24))
