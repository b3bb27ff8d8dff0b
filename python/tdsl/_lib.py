"""ctypes bindings of libtdslrt (runtime/tdsl.h) and how the package finds it and tdslc."""
import ctypes
import ctypes.util
import os
import shutil

try:  # written by `make install`: where that install put tdslc and the runtime
    from . import _config
except ImportError:  # a source tree or `pip install ./python`
    _config = None


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("nkind", ctypes.c_int * 3),
        ("dims", ctypes.POINTER(ctypes.c_int)),
        ("labels", ctypes.POINTER(ctypes.c_char_p)),
        ("elem", ctypes.c_int),
        ("size", ctypes.c_long),
        ("data", ctypes.c_void_p),
        ("role", ctypes.c_int),
    ]


ROLES = ("intermediate", "param", "grad", "optimizer", "input", "const")
SAVE_WHICH = {
    "params": 1 << 1,
    "optimizer": 1 << 3,
    "training": (1 << 1) | (1 << 3),
    "all": 0x3F,
}


def find_tdslc():
    """TDSLC from the environment, else the installed one, else tdslc on PATH."""
    for cand in (os.environ.get("TDSLC"), _config and _config.TDSLC, shutil.which("tdslc")):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise FileNotFoundError("cannot find tdslc: set TDSLC or put tdslc on PATH")


def _library_candidates():
    yield os.environ.get("TDSL_LIBRARY")
    if _config:
        yield _config.LIBRARY
    try:
        bindir = os.path.dirname(os.path.realpath(find_tdslc()))
    except FileNotFoundError:
        bindir = None
    if bindir:
        yield os.path.join(bindir, "libtdslrt.so")  # the build tree: build/tdslc
        yield os.path.join(bindir, "..", "lib", "libtdslrt.so")  # PREFIX/bin/tdslc
    yield ctypes.util.find_library("tdslrt")


_lib = None


def lib():
    """The runtime library, loaded once, with its function signatures declared."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for cand in _library_candidates():
        if not cand:
            continue
        tried.append(cand)
        if os.path.sep in cand and not os.path.exists(cand):
            continue
        try:
            _lib = _declare(ctypes.CDLL(cand))
            return _lib
        except OSError:
            continue
    raise FileNotFoundError("cannot find libtdslrt.so (set TDSL_LIBRARY); tried: " + ", ".join(tried))


def _declare(L):
    P, I, S, V = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_long
    sigs = {
        "tdsl_version": (S, []),
        "tdsl_open": (P, [S, ctypes.c_char_p, ctypes.c_size_t]),
        "tdsl_close": (None, [P]),
        "tdsl_error": (S, [P]),
        "tdsl_num_tensors": (I, [P]),
        "tdsl_find_tensor": (I, [P, S]),
        "tdsl_tensor": (I, [P, I, ctypes.POINTER(TensorInfo)]),
        "tdsl_tensor_by_name": (I, [P, S, ctypes.POINTER(TensorInfo)]),
        "tdsl_write_f64": (I, [P, S, ctypes.POINTER(ctypes.c_double), V]),
        "tdsl_load_file": (I, [P, S, S]),
        "tdsl_num_routines": (I, [P]),
        "tdsl_routine_name": (S, [P, I]),
        "tdsl_find_routine": (I, [P, S]),
        "tdsl_call": (I, [P, S]),
        "tdsl_set_num_threads": (I, [P, I]),
        "tdsl_get_num_threads": (I, [P]),
        "tdsl_num_indices": (I, [P]),
        "tdsl_index_name": (S, [P, I]),
        "tdsl_set_index": (I, [P, S, V]),
        "tdsl_get_index": (I, [P, S, ctypes.POINTER(V)]),
        "tdsl_init": (I, [P, ctypes.c_uint64]),
        "tdsl_num_dims": (I, [P]),
        "tdsl_dim_name": (S, [P, I]),
        "tdsl_set_dim": (I, [P, S, V]),
        "tdsl_get_dim": (I, [P, S, ctypes.POINTER(V)]),
        "tdsl_write_shaped_f64": (I, [P, S, ctypes.POINTER(ctypes.c_double), I, ctypes.POINTER(V)]),
        "tdsl_save": (I, [P, S, ctypes.c_uint]),
        "tdsl_load": (I, [P, S]),
        "tdsl_hold": (I, [P, P]),
        "tdsl_release": (I, [P, P]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(L, name)
        f.restype = res
        f.argtypes = args
    return L
