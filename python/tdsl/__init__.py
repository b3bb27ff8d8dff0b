"""tdsl: drive models compiled by tdslc from Python (numpy arrays over the C runtime).

    import tdsl
    so = tdsl.compile("moons.tdsl", O=3)        # runs tdslc; CompileError on bad input
    m = tdsl.load(so)
    m.init(seed=0)
    m["moons_flat"] = xs                         # shape-checked copy into the tensor
    m.batch_n = 3                                # index symbols are attributes
    m.call("train_step")
    print(m["scalar_loss"], m["w1"].shape)       # zero-copy views of the model's memory
    m.save("ckpt.safetensors")                   # parameters and optimizer state

See tdsl(7) and README.md ("From PyTorch").
"""
import ctypes
import functools
import operator
import os
import subprocess
import threading

import numpy as np

from ._lib import ROLES, SAVE_WHICH, TensorInfo, find_tdslc, lib

__all__ = ["compile", "load", "Model", "Tensor", "TdslError", "CompileError", "version"]
__version__ = "0.1.0"


class TdslError(RuntimeError):
    """An error reported by the runtime (its message is tdsl_error's)."""


class CompileError(TdslError):
    """tdslc rejected the model: `diagnostics` holds its messages (file:line:col: ...)."""

    def __init__(self, diagnostics, returncode, cmd):
        super().__init__(diagnostics.strip() or "tdslc failed with status %d" % returncode)
        self.diagnostics = diagnostics
        self.returncode = returncode
        self.cmd = cmd


def version():
    return lib().tdsl_version().decode()


def _option_args(options):
    """Keyword options as tdslc flags: O=3 -> -O3, include=[d] -> -I d, precision="double"
    -> --precision=double, check_bounds=True -> --check-bounds, args=[...] verbatim."""
    out = []
    for key, val in options.items():
        if key == "O":
            out.append("-O%d" % int(val))
        elif key in ("include", "I"):
            for d in [val] if isinstance(val, (str, os.PathLike)) else val:
                out += ["-I", os.fspath(d)]
        elif key == "args":
            out += [str(a) for a in val]
        elif val is True:
            out.append("--" + key.replace("_", "-"))
        elif val is False or val is None:
            continue
        else:
            out.append("--%s=%s" % (key.replace("_", "-"), val))
    return out


def compile(path, out=None, **options):
    """Compiles a .tdsl file with tdslc to a shared library; returns its path (default:
    the source's name with .so, beside the source). Raises CompileError carrying the
    diagnostics when tdslc rejects the input or the options."""
    path = os.fspath(path)
    if out is None:
        out = os.path.splitext(path)[0] + ".so"
    src = os.path.join(".", path) if path.startswith("-") else path  # not an option to tdslc
    out = os.fspath(out)
    # "-" is tdslc's standard output (and "-x" an option): out is always a file here
    dst = os.path.join(".", out) if out.startswith("-") else out
    cmd = [find_tdslc()] + _option_args(options) + ["-o", dst, src]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise CompileError(r.stderr, r.returncode, cmd)
    return os.fspath(out)


def load(so):
    """Opens a compiled model (.so)."""
    return Model(so)


class Tensor:
    """A tensor's description: name, shape (dims in memory order: batch, output, input),
    dtype, role ("param", "grad", "optimizer", "input", "const", "intermediate"), the
    number of axes of each kind (batch, output, input) and the axis labels."""

    __slots__ = ("name", "shape", "dtype", "role", "kinds", "labels")

    def __init__(self, ti):
        self.name = ti.name.decode()
        self.shape = tuple(ti.dims[k] for k in range(ti.rank))
        self.dtype = np.dtype(np.float64 if ti.elem == 1 else np.float32)
        self.role = ROLES[ti.role] if 0 <= ti.role < len(ROLES) else "intermediate"
        self.kinds = tuple(ti.nkind)
        self.labels = tuple((ti.labels[k] or b"").decode() or None for k in range(ti.rank))

    def __repr__(self):
        return "Tensor(%r, shape=%r, dtype=%s, role=%r)" % (self.name, self.shape, self.dtype, self.role)


def _cstr(text, what="name"):
    """text (a str) as the C string the runtime reads: a NUL byte would cut it short and
    name another tensor, routine or file, so it is refused."""
    if not isinstance(text, str):
        raise TypeError("%s must be a str, not %s" % (what, type(text).__name__))
    b = text.encode()
    if b"\0" in b:
        raise ValueError("%s %r contains a NUL byte" % (what, text))
    return b


def _cpath(path):
    """A file path (str, bytes or os.PathLike) as a C string; NUL bytes refused."""
    b = os.fsencode(path)
    if b"\0" in b:
        raise ValueError("path %r contains a NUL byte" % (path,))
    return b


_LONG_MIN, _LONG_MAX = -(1 << (8 * ctypes.sizeof(ctypes.c_long) - 1)), (1 << (8 * ctypes.sizeof(ctypes.c_long) - 1)) - 1


def _cint(value, what):
    """An integer argument (an int or numpy integer; a float or str is refused rather than
    truncated) that fits a C long: ctypes would wrap a larger one silently."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (what, type(value).__name__)) from None
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise ValueError("%s = %d is out of range" % (what, v))
    return v


def _squeezed(shape):
    return tuple(d for d in shape if d != 1)


class _Handle:
    """The open model (tdsl_model *) and the numpy views of its storage. tdsl_close waits
    until the model is closed (Model.close, or garbage collection) and no view is left:
    a view never reads freed memory. Each view holds its block (tdsl_hold), so that a
    tensor reallocated by a new dynamic dimension leaves the old views valid (they keep
    the old values)."""

    __slots__ = ("L", "h", "views", "closing", "lock")

    def __init__(self, L, h):
        self.L, self.h, self.views, self.closing = L, h, 0, False
        self.lock = threading.RLock()

    def hold(self, ptr):
        if self.L.tdsl_hold(self.h, ptr) != 0:
            raise TdslError(self.L.tdsl_error(self.h).decode(errors="replace"))
        self.views += 1

    def release(self, ptr):
        with self.lock:
            self._release(ptr)

    def _release(self, ptr):
        if self.h:
            self.L.tdsl_release(self.h, ptr)
            self.views -= 1
            if self.closing and self.views == 0:
                self._close()

    def close(self):
        with self.lock:
            self.closing = True
            if self.views == 0:
                self._close()

    def _close(self):
        if self.h:
            h, self.h = self.h, None
            self.L.tdsl_close(h)


class _ViewToken:
    """Lives as long as a view's buffer: releases its hold then."""

    __slots__ = ("handle", "ptr")

    def __init__(self, handle, ptr):
        self.handle, self.ptr = handle, ptr

    def __del__(self):
        try:
            self.handle.release(self.ptr)
        except Exception:
            pass


def _serialized(method):
    """Runs a method under the model's lock. ctypes releases the GIL during a C call; the
    runtime serializes each of its calls on a model (tdsl.h, "Threads"), but a method
    makes several (a tensor's info, then a view of its data that a tdsl_set_dim in
    another thread would reallocate). Methods from several threads wait for each other."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._handle_obj.lock:
            return method(self, *args, **kwargs)
    return run


class Model:
    """A compiled model: tensors by name (m["w"]), routines (m.call), index symbols
    (attributes or set_index), dynamic dimensions (attributes, set_dim, or writing a
    tensor of another shape), init, checkpoints (save/load)."""

    def __init__(self, so):
        L = lib()
        err = ctypes.create_string_buffer(512)
        path = os.path.abspath(os.fspath(so))
        h = L.tdsl_open(_cpath(path), err, len(err))
        if not h:
            raise TdslError(err.value.decode(errors="replace"))
        object.__setattr__(self, "_L", L)
        object.__setattr__(self, "_h", h)
        object.__setattr__(self, "_handle_obj", _Handle(L, h))
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "_seed", None)
        object.__setattr__(self, "indices", tuple(
            L.tdsl_index_name(h, i).decode() for i in range(L.tdsl_num_indices(h))))
        object.__setattr__(self, "dims", tuple(
            L.tdsl_dim_name(h, i).decode() for i in range(L.tdsl_num_dims(h))))

    # ---- life cycle ----
    def close(self):
        """Closes the model: its methods raise TdslError afterwards. Arrays obtained from
        it stay valid; the memory goes when the last of them does."""
        handle = self.__dict__.get("_handle_obj")
        if handle is None:
            return
        with handle.lock:  # after a call running in another thread
            if self.__dict__.get("_h"):
                object.__setattr__(self, "_h", None)
                handle.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- copies ----
    def __copy__(self):
        return self._clone()

    def __deepcopy__(self, memo):
        return self._clone()

    @_serialized
    def _clone(self):
        """A second, independent instance of the model (tdsl_open again) holding this
        one's state: every tensor, dynamic dimension and index symbol. A copy sharing
        this one's handle would close it when either is closed or collected."""
        h = self._handle()
        new = Model(self.path)
        try:
            if self._seed is not None:
                new.init(self._seed)  # the seed that "init" and reallocations reuse
            for d in self.dims:
                v = self.get_dim(d)
                if v is not None:  # 0 is a value (an empty batch), None unset
                    new.set_dim(d, v)
            for name in self.indices:
                new.set_index(name, self.get_index(name))
            for i in range(self._L.tdsl_num_tensors(h)):
                src, dst = self._info(i), new._info(i)
                if src.size and src.data and dst.data:
                    ctypes.memmove(dst.data, src.data, src.size * (8 if src.elem == 1 else 4))
        except BaseException:
            new.close()
            raise
        return new

    def __reduce_ex__(self, protocol):
        raise TypeError("a tdsl.Model cannot be pickled (it is a loaded library and its memory): "
                        "save a checkpoint with m.save(path, \"all\") and m.load(path) it into tdsl.load(so)")

    def _check(self, rc):
        if rc != 0:
            raise TdslError(self._L.tdsl_error(self._handle()).decode(errors="replace"))

    def _handle(self):
        if not self._h:
            raise TdslError("the model is closed")
        return self._h

    # ---- description ----
    @_serialized
    def _info(self, name_or_index):
        ti = TensorInfo()
        if isinstance(name_or_index, int):
            self._check(self._L.tdsl_tensor(self._handle(), name_or_index, ctypes.byref(ti)))
        else:
            self._check(self._L.tdsl_tensor_by_name(self._handle(), _cstr(name_or_index, "tensor name"), ctypes.byref(ti)))
        return ti

    @property
    @_serialized
    def tensors(self):
        """Every tensor, by name (a dict of Tensor descriptions, in model order)."""
        infos = (Tensor(self._info(i)) for i in range(self._L.tdsl_num_tensors(self._handle())))
        return {t.name: t for t in infos}

    @property
    def params(self):
        """The names of the parameters, in model order."""
        return [n for n, t in self.tensors.items() if t.role == "param"]

    @property
    @_serialized
    def routines(self):
        """The exported routines (`T.forward` / `T.backprop` are callable too)."""
        h = self._handle()
        return [self._L.tdsl_routine_name(h, i).decode() for i in range(self._L.tdsl_num_routines(h))]

    # ---- data ----
    @_serialized
    def __contains__(self, name):
        if not isinstance(name, str) or "\0" in name:
            return False
        return self._L.tdsl_find_tensor(self._handle(), name.encode()) >= 0

    @_serialized
    def __getitem__(self, name):
        """A numpy view of the tensor's memory (no copy). It stays valid (its memory is
        never freed under it) after the model is closed or the tensor is reallocated by
        a new dynamic dimension, but then no longer shows the model's values (for a
        cuda model: not after the next call either)."""
        if not isinstance(name, str):
            raise TypeError("tensor names are strings, not %s" % type(name).__name__)
        return self._view(self._info(name))

    def _view(self, ti):
        shape = tuple(ti.dims[k] for k in range(ti.rank))
        dtype = np.float64 if ti.elem == 1 else np.float32
        if ti.size == 0 or not ti.data:
            return np.zeros(shape, dtype)
        ctype = ctypes.c_double if ti.elem == 1 else ctypes.c_float
        buf = (ctype * ti.size).from_address(ti.data)
        self._handle_obj.hold(ti.data)
        buf._token = _ViewToken(self._handle_obj, ti.data)  # released with the last view
        return np.frombuffer(buf, dtype=dtype, count=ti.size).reshape(shape)

    @_serialized
    def __setitem__(self, name, value):
        """Copies value into the tensor: its shape must be the tensor's (axes of size 1
        aside); converted to the tensor's element type. A tensor with dynamic
        dimensions takes the array's shape: the dimensions are set from it (static
        ones must match), which reallocates the tensors that use them."""
        view = self[name]
        if np.iscomplexobj(value):
            raise TypeError("tensor %s is real: cannot store complex values" % name)
        dt = np.asarray(value).dtype
        if dt.kind not in "biuf":  # numpy would turn None into NaN and "1.5" into 1.5
            what = "an array of dtype %s" % dt if isinstance(value, np.ndarray) else type(value).__name__
            raise TypeError("tensor %s takes numbers, not %s" % (name, what))
        arr = np.asarray(value, dtype=view.dtype)
        if view.size == 0 and self.dims:
            # the view of a tensor whose dimension is unset is empty too: an empty array
            # of its shape must still set the dimension (to 0, an empty batch)
            self._write_shaped(name, arr)
            return
        if arr.shape != view.shape and _squeezed(arr.shape) != _squeezed(view.shape):
            if not self.dims:
                raise ValueError("tensor %s has shape %s, not %s" % (name, view.shape, arr.shape))
            self._write_shaped(name, arr)
            return
        view[...] = arr.reshape(view.shape)

    def _write_shaped(self, name, arr):
        data = np.require(arr, np.float64, "C")  # keeps a 0-d array 0-d, unlike ascontiguousarray
        dims = (ctypes.c_long * max(1, data.ndim))(*data.shape)
        ptr = data.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        self._check(self._L.tdsl_write_shaped_f64(self._handle(), _cstr(name, "tensor name"), ptr, data.ndim, dims))

    @_serialized
    def load_file(self, name, path):
        """Fills a tensor from a .npy or raw float32 file (tdsl_load_file)."""
        self._check(self._L.tdsl_load_file(self._handle(), _cstr(name, "tensor name"), _cpath(path)))

    # ---- running ----
    @_serialized
    def init(self, seed=0):
        """Initializes every tensor (parameters from their initializers, the rest zero)
        and resets the index symbols to 0."""
        seed = operator.index(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise ValueError("seed %d does not fit 64 bits" % seed)
        self._check(self._L.tdsl_init(self._handle(), seed & ((1 << 64) - 1)))
        object.__setattr__(self, "_seed", seed & ((1 << 64) - 1))

    @_serialized
    def call(self, routine):
        """Runs an exported routine, or `T.forward` / `T.backprop`."""
        self._check(self._L.tdsl_call(self._handle(), _cstr(routine, "routine name")))

    @_serialized
    def set_num_threads(self, n):
        """Threads for the model's parallel loops (as torch.set_num_threads; default: the
        environment variable TDSL_NUM_THREADS, else the online cores; 1 to 1024).
        Results do not depend on the count."""
        n = _cint(n, "thread count")
        if not 1 <= n <= 1024:  # before ctypes, which would wrap a count past a C int
            raise ValueError("thread count %d: want 1 to 1024" % n)
        self._check(self._L.tdsl_set_num_threads(self._handle(), n))

    @_serialized
    def get_num_threads(self):
        return self._L.tdsl_get_num_threads(self._handle())

    @_serialized
    def set_index(self, name, value):
        self._check(self._L.tdsl_set_index(self._handle(), _cstr(name, "index name"), _cint(value, "index " + str(name))))

    @_serialized
    def get_index(self, name):
        v = ctypes.c_long()
        self._check(self._L.tdsl_get_index(self._handle(), _cstr(name, "index name"), ctypes.byref(v)))
        return v.value

    @_serialized
    def set_dim(self, name, value):
        """Sets a dynamic dimension (`let n = dim ()`); the tensors that use it are
        reallocated (and initialized again) when its value changes."""
        self._check(self._L.tdsl_set_dim(self._handle(), _cstr(name, "dimension name"), _cint(value, "dimension " + str(name))))

    @_serialized
    def get_dim(self, name):
        """A dynamic dimension's current value, or None while it is not set (0 is a
        value: an empty batch)."""
        v = ctypes.c_long()
        self._check(self._L.tdsl_get_dim(self._handle(), _cstr(name, "dimension name"), ctypes.byref(v)))
        return None if v.value < 0 else v.value

    def __getattr__(self, name):
        if name in self.__dict__.get("indices", ()):
            return self.get_index(name)
        if name in self.__dict__.get("dims", ()):
            return self.get_dim(name)
        raise AttributeError(name)

    def _shadowed(self, name):
        # An index symbol or dimension named like a Model attribute (`call`, `path`,
        # `dims`): the read `m.call` finds the attribute, never __getattr__, so a write
        # through the attribute would not read back. Such names go by the methods.
        return hasattr(type(self), name) or name in self.__dict__

    def __setattr__(self, name, value):
        d = self.__dict__
        if name in d.get("indices", ()) or name in d.get("dims", ()):
            if self._shadowed(name):
                kind, fn = ("an index symbol", "index") if name in d["indices"] else ("a dimension", "dim")
                raise AttributeError(
                    "%r is both %s of the model and a Model attribute: write it with "
                    "m.set_%s(%r, value), read it with m.get_%s(%r)" % (name, kind, fn, name, fn, name))
        if name in self.__dict__.get("indices", ()):
            self.set_index(name, value)
        elif name in self.__dict__.get("dims", ()):
            self.set_dim(name, value)
        elif not name.startswith("_") and self.__dict__.get("_h") and name in self:
            # `m.w = arr` would only make a Python attribute: the tensor kept its values
            # and nothing said so (index symbols are attributes, tensors are items)
            raise AttributeError("%r is a tensor of the model: write it with m[%r] = value" % (name, name))
        else:
            object.__setattr__(self, name, value)

    # ---- checkpoints ----
    @_serialized
    def save(self, path, which="training"):
        """Writes a safetensors checkpoint: which = "params", "optimizer", "training"
        (both, the default) or "all"."""
        if which not in SAVE_WHICH:
            raise ValueError("which must be one of %s" % ", ".join(SAVE_WHICH))
        self._check(self._L.tdsl_save(self._handle(), _cpath(path), SAVE_WHICH[which]))

    @_serialized
    def load(self, path):
        """Loads a safetensors checkpoint (names, dtypes and shapes checked first)."""
        self._check(self._L.tdsl_load(self._handle(), _cpath(path)))

    @_serialized
    def state_dict(self, which="params"):
        """Copies of the selected tensors, by name (like torch's state_dict): which as
        for save ("params" by default)."""
        roles = {"params": {"param"}, "optimizer": {"optimizer"}, "training": {"param", "optimizer"}}
        if which not in SAVE_WHICH:
            raise ValueError("which must be one of %s" % ", ".join(SAVE_WHICH))
        keep = roles.get(which)
        out = {}
        for i in range(self._L.tdsl_num_tensors(self._handle())):
            # By number: a name may also be a let-binding's alias of another tensor.
            ti = self._info(i)
            t = Tensor(ti)
            if keep is None or t.role in keep:
                out[t.name] = self._view(ti).copy()
        return out

    def __repr__(self):
        return "<tdsl.Model %s>" % self.path
