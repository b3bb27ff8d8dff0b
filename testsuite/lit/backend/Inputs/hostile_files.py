"""Writes malformed safetensors and .npy files into DIR for checkpoint-hostile.tdsl:
each must be rejected with a clear error (exit 1), never a crash or a partial load."""
import json
import struct
import sys

d = sys.argv[1]


def st(name, header, data=b"", raw_len=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(h) if raw_len is None else raw_len
    open("%s/%s.safetensors" % (d, name), "wb").write(struct.pack("<Q", n) + h + data)


w = {"dtype": "F32", "shape": [4, 2], "data_offsets": [0, 32]}
st("empty", b"", raw_len=0)
st("huge_len", b"{}", raw_len=1 << 62)
st("past_end", b"{}", raw_len=1000)
st("not_object", b"[1, 2]")
st("deep", b"[" * 5000 + b"]" * 5000)
st("entry_not_object", {"w": 3})
st("no_dtype", {"w": {"shape": [4, 2], "data_offsets": [0, 32]}}, bytes(32))
st("bf16", {"w": dict(w, dtype="BF16")}, bytes(32))
st("bad_shape", {"w": dict(w, shape=[4, "x"])}, bytes(32))
st("rank", {"w": dict(w, shape=[8])}, bytes(32))
st("neg_offset", {"w": dict(w, data_offsets=[-8, 24])}, bytes(32))
st("short_data", {"w": w}, bytes(31))
st("wrong_len", {"w": dict(w, data_offsets=[0, 16])}, bytes(32))
st("offsets_float", {"w": dict(w, data_offsets=[0.5, 32.5])}, bytes(40))
# b's bytes are the second half of w's: loading copied w's values into b
st("overlap", {"w": w, "b": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}, bytes(32))
st("twice", b'{"w":' + json.dumps(w).encode() + b',"w":' + json.dumps(w).encode() + b'}', bytes(32))


def npy(name, header, data=b"", version=1):
    h = header.encode() if isinstance(header, str) else header
    pre = b"\x93NUMPY" + bytes([version, 0])
    pre += struct.pack("<H" if version == 1 else "<I", len(h))
    open("%s/%s.npy" % (d, name), "wb").write(pre + h + data)


npy("npy_truncated", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", bytes(20))
npy("npy_nodescr", "{'fortran_order': False, 'shape': (3, 2), }", bytes(24))
npy("npy_bigshape", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 2), }")
npy("npy_version", "{}", version=7)
npy("npy_object", "{'descr': '|O', 'fortran_order': False, 'shape': (3, 2), }", bytes(48))
open("%s/npy_short.npy" % d, "wb").write(b"\x93NUMPY\x01")
