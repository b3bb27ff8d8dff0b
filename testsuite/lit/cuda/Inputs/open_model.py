# open_model.py LIBTDSLRT MODEL: opens MODEL through the runtime's tdsl_open (ctypes)
# and prints the result.
import ctypes
import sys

rt = ctypes.CDLL(sys.argv[1])
rt.tdsl_open.restype = ctypes.c_void_p
rt.tdsl_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
err = ctypes.create_string_buffer(1024)
m = rt.tdsl_open(sys.argv[2].encode(), err, len(err))
if m:
    print("tdsl_open succeeded")
    rt.tdsl_close.argtypes = [ctypes.c_void_p]
    rt.tdsl_close(m)
else:
    print("tdsl_open failed: " + err.value.decode())
