"""Writes the hostile inputs of runtime-adversary.test into DIR: C sources of shared
objects that are not models (or only look like one), and checkpoints whose entry names
hide a NUL or control characters."""
import json
import struct
import sys

d = sys.argv[1]
src = {
    # a variable where the runtime expects its function: calling it jumps into data
    "datameta": 'const char tdsl_model_meta[] = "tdsl 3\\nmodel x 1024\\n";\n',
    "oldabi": 'const char *tdsl_model_meta(void) { return "tdsl 2\\nmodel x 1024\\n"; }\n',
    "plain": "int not_a_model(void) { return 1; }\n",
    # NAME_fn_0 a variable
    "datafn": 'const char *tdsl_model_meta(void) { return "tdsl 3\\nmodel x 1024\\nfn 0 f\\n"; }\n'
              "int x_fn_0[4];\n",
}
for name, text in src.items():
    open("%s/%s.c" % (d, name), "w").write(text)


def st(name, header, data=b""):
    open("%s/%s.safetensors" % (d, name), "wb").write(struct.pack("<Q", len(header)) + header + data)


w = json.dumps({"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]}).encode()
st("nul_escape", b'{"w\\u0000junk":' + w + b"}", bytes(24))
st("nul_raw", b'{"w\x00junk":' + w + b"}", bytes(24))
st("backslash", b'{"w\\\\u0000":' + w + b"}", bytes(24))  # a backslash, then "u0000": no NUL
st("nul_padding", b'{"w":' + w + b"}\x00\x00\x00", bytes(24))
st("escape", b'{"w\\u001b[31m":' + w + b"}", bytes(24))
