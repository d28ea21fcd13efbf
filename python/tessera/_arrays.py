"""Arrays in, arrays out: NumPy arrays and __dlpack__ objects as (ndarray,
tsr_dtype) pairs, strides in elements, data pointers, tensor descriptors,
bfloat16 helpers."""

import ctypes

import numpy as np

from . import _lib as L

NP_TO_TSR = {np.dtype(np.float32): L.F32, np.dtype(np.float16): L.F16, np.dtype(np.int8): L.I8,
             np.dtype(np.int32): L.I32}
TSR_TO_NP = {L.F32: np.dtype(np.float32), L.F16: np.dtype(np.float16), L.BF16: np.dtype(np.uint16),
             L.I8: np.dtype(np.int8), L.I32: np.dtype(np.int32)}
U16 = np.dtype(np.uint16)
_ndarray = np.ndarray

OUT_DTYPES = {None: None, "f32": L.F32, "float32": L.F32, "f16": L.F16, "float16": L.F16, "bf16": L.BF16,
              "bfloat16": L.BF16, "i32": L.I32, "int32": L.I32, "i8": L.I8, "int8": L.I8}


def bf16_flag(dtype, who):
    """The dtype= argument of the ops: None, or 'bf16' to read uint16 arrays as bfloat16."""
    if dtype is None:
        return False
    if dtype in ("bf16", "bfloat16"):
        return True
    L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: dtype={dtype!r}: the only input dtype to name is 'bf16' (uint16 "
           "arrays holding bfloat16); other dtypes come from the arrays")


def out_code(out_dtype, who):
    if isinstance(out_dtype, str) or out_dtype is None:
        code = OUT_DTYPES.get(out_dtype, -1)
    else:
        code = NP_TO_TSR.get(np.dtype(out_dtype), -1)
    if code == -1:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: out_dtype={out_dtype!r} is not one of f32, f16, bf16, i32, i8")
    return code


# ------------------------------------------------------------ data pointers
# numpy's PyArrayObject starts with PyObject_HEAD and then `char *data`; a
# ctypes view of the address space reads that pointer ~7x faster than
# arr.ctypes.data. It is checked here against arr.ctypes.data and replaced by
# the slow, documented path if the layout is ever different.

_WORD = ctypes.sizeof(ctypes.c_void_p)
_DATA_OFF = 2 * _WORD  # ob_refcnt, ob_type
_MEM = (ctypes.c_size_t * ((1 << 47) // _WORD)).from_address(0)


def _data_ptr_fast(a):
    return _MEM[(id(a) + _DATA_OFF) // _WORD]


def _data_ptr_slow(a):
    return a.__array_interface__["data"][0]


def _pick_data_ptr():
    probes = [np.arange(6, dtype=np.float32), np.zeros((3, 4), np.float16)[:, 1], np.empty(0, np.int8)]
    try:
        if all(_data_ptr_fast(p) == p.ctypes.data for p in probes):
            return _data_ptr_fast
    except Exception:  # noqa: BLE001 - any surprise means: use the documented path
        pass
    return _data_ptr_slow


data_ptr = _pick_data_ptr()


# ---------------------------------------------------------------- DLPack

_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

_HOST_DEVICES = (L.kDLCPU, L.kDLCUDAHost, L.kDLROCMHost)
_MAX_VERSION = (L.DLPACK_MAJOR, L.DLPACK_MINOR)


class _DLPackOwner:
    """Keeps a consumed DLManagedTensor(Versioned) alive and calls its deleter once."""

    __slots__ = ("ptr", "deleter", "struct")

    def __init__(self, ptr, deleter, struct):
        self.ptr, self.deleter, self.struct = ptr, deleter, struct

    def __del__(self):
        if self.deleter:
            self.deleter(ctypes.cast(self.ptr, ctypes.POINTER(self.struct)))
            self.deleter = None


def _device_name(device_type):
    return L.lib.tsr_dlpack_device_name(int(device_type)).decode()


def from_dlpack(x, name, who, writable=False):
    """A host-memory __dlpack__ object as (ndarray, is_bf16), without a copy.

    The DLPack 1.x protocol first: __dlpack__(max_version=(1, 0)) gives a
    "dltensor_versioned" capsule whose version and flags are checked (a
    read-only tensor cannot be an output: writable=True refuses it, and as an
    input it comes back as a read-only array). A producer from before DLPack
    1.0 rejects the keyword (TypeError): then the legacy capsule, through
    np.from_dlpack where NumPy can read it."""
    dev = (L.kDLCPU, 0)
    if hasattr(x, "__dlpack_device__"):
        dev = tuple(int(v) for v in x.__dlpack_device__())
    if dev[0] not in _HOST_DEVICES:
        L.fail(L.ERR_NOT_SUPPORTED,
               f"{who}: {name} is a {type(x).__name__} on {_device_name(dev[0])}:{dev[1]}; the NumPy-level "
               "functions take host memory (use tessera.torch for CUDA tensors, or copy it to the host)")
    try:
        cap = x.__dlpack__(max_version=_MAX_VERSION)
    except TypeError:  # pre-1.0 producer (NumPy < 2.1, PyTorch < 2.4 ...)
        cap = None
    if cap is None:
        if dev[0] == L.kDLCPU and hasattr(np, "from_dlpack"):
            try:
                return np.from_dlpack(x), False
            except (BufferError, TypeError, ValueError, RuntimeError):
                pass  # e.g. bfloat16, which NumPy has no dtype for: read the capsule ourselves
        cap = x.__dlpack__()
    return _from_capsule(cap, name, who, writable)


def _from_capsule(cap, name, who, writable):
    kind = _capsule_name(cap)
    readonly = False
    if kind == b"dltensor_versioned":
        ptr = _capsule_get(cap, kind)
        managed = L.DLManagedTensorVersioned.from_address(ptr)
        tensor = ctypes.c_void_p()
        st = L.lib.tsr_dlpack_versioned_tensor(ptr, int(writable), name.encode(), ctypes.byref(tensor))
        if st:  # the capsule keeps ownership; its destructor calls the deleter
            L.fail(st, f"{who}: {L.last_error()}")
        readonly = bool(managed.flags & L.DLPACK_FLAG_READ_ONLY)
        used, struct = b"used_dltensor_versioned", L.DLManagedTensorVersioned
    elif kind == b"dltensor":
        ptr = _capsule_get(cap, kind)
        managed = L.DLManagedTensor.from_address(ptr)
        tensor = ctypes.c_void_p(ctypes.addressof(managed.dl_tensor))
        used, struct = b"used_dltensor", L.DLManagedTensor
    else:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name}.__dlpack__() returned a capsule named {kind!r}; a DLPack "
               "producer returns 'dltensor' or 'dltensor_versioned' (an already consumed capsule cannot be "
               "used again)")
    desc = L.TensorDesc()
    data = ctypes.c_void_p()
    st = L.lib.tsr_tensor_desc_from_dlpack(tensor, ctypes.byref(desc), ctypes.byref(data))
    if st:
        L.fail(st, f"{who}: {name}: {L.last_error()}")
    _capsule_set_name(cap, used)  # consumed: from now on we call the deleter
    # the deleter as a value read now: a ctypes field would re-read the
    # producer's struct when called, which the protocol lets us do, but a
    # copy costs nothing and survives a producer that frees it early
    fn = ctypes.cast(managed.deleter, ctypes.c_void_p).value
    owner = _DLPackOwner(ptr, type(managed.deleter)(fn) if fn else None, struct)
    dt = TSR_TO_NP[desc.dtype]
    shape = tuple(desc.shape[i] for i in range(desc.ndim))
    strides = tuple(desc.strides[i] * dt.itemsize for i in range(desc.ndim))
    if 0 in shape:
        return np.empty(shape, dt), desc.dtype == L.BF16
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) // dt.itemsize
    buf = (ctypes.c_char * (extent * dt.itemsize)).from_address(data.value)
    buf._tessera_owner = owner  # the buffer (the array's base) owns the DLPack tensor
    flat = np.frombuffer(buf, dtype=dt, count=extent)
    arr = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides, writeable=not readonly)
    return arr, desc.dtype == L.BF16


# ------------------------------------------------------------ conversions

def as_array(x, name, who, bf16=False, output=False):
    """(ndarray, tsr dtype) for a NumPy array, a __dlpack__ object or
    anything np.asarray takes. output: x will be written (a read-only
    DLPack 1.x tensor is refused)."""
    tagged = False
    if type(x) is not _ndarray and not isinstance(x, _ndarray):
        if hasattr(x, "__dlpack__"):
            x, tagged = from_dlpack(x, name, who, output)
        else:
            x = np.asarray(x)
    code = NP_TO_TSR.get(x.dtype)
    if code is None:
        if x.dtype == U16 and (bf16 or tagged):
            return x, L.BF16
        hint = " (pass dtype='bf16' if it holds bfloat16)" if x.dtype == U16 else ""
        L.fail(L.ERR_NOT_SUPPORTED,
               f"{who}: {name} has dtype {x.dtype}{hint}; Tessera takes float32, float16, bfloat16 (uint16 "
               "with dtype='bf16'), int8 or int32")
    return x, code


def elem_strides(a):
    """Strides in elements, or None when one is not a whole number of
    elements or is negative (the caller copies)."""
    isz = a.itemsize
    out = []
    for s in a.strides:
        if s < 0 or s % isz:
            return None
        out.append(s // isz)
    return out


def tensor_desc(a, code, who, name, is_input=True):
    """A tsr_tensor_desc for a (already free of negative strides). Inputs
    may broadcast (stride 0); an all-zero stride set, which the library reads
    as contiguous, is written as extent-1 dims."""
    if a.ndim > L.MAX_DIMS:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: {name} has {a.ndim} dims (at most {L.MAX_DIMS})")
    st = elem_strides(a)
    d = L.TensorDesc()
    d.dtype = code
    d.ndim = a.ndim
    shape = list(a.shape)
    if is_input and a.size > 1 and not any(st):
        shape = [1] * a.ndim  # one element broadcast everywhere
    for i in range(a.ndim):
        d.shape[i] = shape[i]
        d.strides[i] = st[i]
    return d


# ---------------------------------------------------------------- bfloat16

def to_bf16(x):
    """float32 values -> bfloat16 bits (uint16), round to nearest even; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def from_bf16(u):
    """bfloat16 bits (uint16) -> float32."""
    u = np.asarray(u, dtype=np.uint16)
    return (u.astype(np.uint32) << 16).view(np.float32)
