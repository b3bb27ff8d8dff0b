"""Writes the safetensors files of safetensors.tdsl into DIR (8-byte little-endian header
length, JSON header, little-endian payloads), as OCANNL's test_safetensors.ml does: a
roundtrip file with metadata, one whose data_offsets overlap, one with bytes no tensor
covers, and one whose I8 payload has no tdsl element type."""
import struct
import sys

d = sys.argv[1]


def write(name, header, payload):
    h = header.encode()
    open("%s/%s.safetensors" % (d, name), "wb").write(struct.pack("<Q", len(h)) + h + payload)


def f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


write("roundtrip", '{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
      '"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}}', f32([0, 1, 2, 3, 4, 5]) + f32([10, 20, 30, 40]))
write("overlap", '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
      '"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}', f32([1, 2, 3, 4, 5, 6]))
write("trailing", '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
      '"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}}', f32(range(11)))
write("hole", '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
      '"b":{"dtype":"F32","shape":[4],"data_offsets":[28,44]}}', f32(range(11)))
write("i8", '{"a":{"dtype":"I8","shape":[2,3],"data_offsets":[0,6]}}', bytes([0, 1, 2, 3, 4, 5]))
