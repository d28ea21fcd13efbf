"""The C library: where it is found, its structs mirrored in ctypes, its
function prototypes, and the status -> exception mapping.

Nothing here knows about NumPy; _ops builds on it.
"""

import ctypes
import ctypes.util
import glob
import os

from ._errors import TesseraError, error_for_status

# --------------------------------------------------------------- constants
# (values from include/tessera.h)

OK = 0
ERR_INVALID_ARGUMENT, ERR_NOT_SUPPORTED, ERR_NO_DEVICE = 1, 2, 3
ERR_OUT_OF_MEMORY, ERR_DEVICE, ERR_WRONG_CONTEXT, ERR_IO = 4, 5, 6, 7

F32, F16, BF16, I8, I32 = 0, 1, 2, 3, 4
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16", I8: "i8", I32: "i32"}

BACKEND_CPU, BACKEND_CUDA, BACKEND_HIP, BACKEND_OPENCL = 0, 1, 2, 3
BACKENDS = {"cpu": BACKEND_CPU, "cuda": BACKEND_CUDA, "hip": BACKEND_HIP, "opencl": BACKEND_OPENCL}
BACKEND_NAMES = {v: k for k, v in BACKENDS.items()}

CPU_FEATURES = [(1 << 0, "avx2"), (1 << 1, "fma"), (1 << 2, "f16c"), (1 << 3, "avx512f"),
                (1 << 4, "avx512bw"), (1 << 5, "avx512vl"), (1 << 6, "avx512bf16"),
                (1 << 7, "avx512vnni"), (1 << 8, "avx512dq")]

CONTEXT_NO_TUNING_TABLE, CONTEXT_REFERENCE_ONLY = 1 << 0, 1 << 1

ROW_MAJOR, COL_MAJOR = 0, 1
NO_TRANS, TRANS = 0, 1

ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3,
               "silu": 4, "sigmoid": 5, "tanh": 6}
EPI_BIAS, EPI_ACTIVATION, EPI_RESIDUAL = 1, 2, 3
MAX_EPILOGUE_STEPS = 4

NHWC, NCHW = 0, 1
FILTER_OHWI, FILTER_OIHW, FILTER_HWIO = 0, 1, 2

CAUSAL = {None: 0, False: 0, "none": 0, True: 1, "top_left": 1, "bottom_right": 2}

MAX_DIMS = 8
UNARY = {name: i for i, name in enumerate(
    ["identity", "neg", "abs", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "erf",
     "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu"])}
BINARY = {name: i for i, name in enumerate(["add", "sub", "mul", "div", "max", "min", "pow"])}
STEP_UNARY, STEP_SCALAR, STEP_SCALAR_LEFT, STEP_TENSOR, STEP_TENSOR_LEFT = range(5)
MAX_CHAIN_STEPS, MAX_CHAIN_OPERANDS = 16, 4

# ------------------------------------------------------------------ structs
# Field for field as in tessera.h; ctypes applies the same C ABI alignment.
# check_layout() compares them with what the library reports.

c_int64_3 = ctypes.c_int64 * 3


class ContextOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("backend", ctypes.c_int), ("device", ctypes.c_int),
                ("num_threads", ctypes.c_int), ("stream", ctypes.c_void_p), ("flags", ctypes.c_uint32)]


class ContextInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("backend", ctypes.c_int), ("device", ctypes.c_int),
                ("num_threads", ctypes.c_int), ("cpu_features", ctypes.c_uint32),
                ("arch", ctypes.c_char * 32), ("device_name", ctypes.c_char * 128),
                ("driver", ctypes.c_char * 64), ("compute_units", ctypes.c_int),
                ("table_path", ctypes.c_char * 512), ("table_status", ctypes.c_char * 512)]


class EpilogueStep(ctypes.Structure):
    _fields_ = [("op", ctypes.c_int), ("activation", ctypes.c_int), ("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int), ("ld", ctypes.c_int64), ("batch_stride", ctypes.c_int64),
                ("scale", ctypes.c_float)]


class Epilogue(ctypes.Structure):
    _fields_ = [("num_steps", ctypes.c_int), ("steps", EpilogueStep * MAX_EPILOGUE_STEPS)]


class GemmDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("layout", ctypes.c_int), ("trans_a", ctypes.c_int),
                ("trans_b", ctypes.c_int), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("k", ctypes.c_int64), ("a_dtype", ctypes.c_int), ("b_dtype", ctypes.c_int),
                ("c_dtype", ctypes.c_int), ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64),
                ("ldc", ctypes.c_int64), ("batch", ctypes.c_int64), ("stride_a", ctypes.c_int64),
                ("stride_b", ctypes.c_int64), ("stride_c", ctypes.c_int64), ("alpha", ctypes.c_float),
                ("beta", ctypes.c_float), ("epilogue", Epilogue)]


class Conv2dDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("format", ctypes.c_int), ("filter_format", ctypes.c_int),
                ("n", ctypes.c_int64), ("c", ctypes.c_int64), ("h", ctypes.c_int64),
                ("w", ctypes.c_int64), ("k", ctypes.c_int64), ("r", ctypes.c_int64),
                ("s", ctypes.c_int64), ("stride_h", ctypes.c_int64), ("stride_w", ctypes.c_int64),
                ("pad_top", ctypes.c_int64), ("pad_bottom", ctypes.c_int64),
                ("pad_left", ctypes.c_int64), ("pad_right", ctypes.c_int64),
                ("dilation_h", ctypes.c_int64), ("dilation_w", ctypes.c_int64),
                ("groups", ctypes.c_int64), ("x_dtype", ctypes.c_int), ("w_dtype", ctypes.c_int),
                ("y_dtype", ctypes.c_int), ("epilogue", Epilogue)]


class AttentionDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("batch", ctypes.c_int64), ("heads_q", ctypes.c_int64),
                ("heads_kv", ctypes.c_int64), ("seq_q", ctypes.c_int64), ("seq_kv", ctypes.c_int64),
                ("head_dim", ctypes.c_int64), ("dtype", ctypes.c_int), ("q_strides", c_int64_3),
                ("k_strides", c_int64_3), ("v_strides", c_int64_3), ("o_strides", c_int64_3),
                ("scale", ctypes.c_float), ("causal", ctypes.c_int), ("mask", ctypes.c_void_p),
                ("mask_dtype", ctypes.c_int), ("mask_strides", c_int64_3), ("lse", ctypes.c_void_p)]


class TensorDesc(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS)]


class ChainStep(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("unary", ctypes.c_int), ("binary", ctypes.c_int),
                ("scalar", ctypes.c_float), ("operand", ctypes.c_int)]


class ChainDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("num_steps", ctypes.c_int),
                ("steps", ChainStep * MAX_CHAIN_STEPS), ("num_operands", ctypes.c_int),
                ("operands", TensorDesc * MAX_CHAIN_OPERANDS)]


class RowwiseDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("x_row_stride", ctypes.c_int64), ("y_row_stride", ctypes.c_int64),
                ("x_dtype", ctypes.c_int), ("y_dtype", ctypes.c_int), ("epsilon", ctypes.c_float)]


# DLPack (include/tessera_dlpack.h; the v0.8 layout, unchanged in v1.x's DLTensor)
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]

class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):  # DLPack 1.0
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

DLPACK_MAJOR, DLPACK_MINOR = 1, 0  # the newest DLPack this package reads
DLPACK_FLAG_READ_ONLY, DLPACK_FLAG_IS_COPIED = 1 << 0, 1 << 1

kDLCPU, kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLROCM, kDLROCMHost = 1, 2, 3, 4, 10, 11

# ------------------------------------------------------------ the library

_HERE = os.path.dirname(os.path.abspath(__file__))


def _libs_in(p):
    """A file, or the libtessera.so* files of a directory (the unversioned
    name first)."""
    if os.path.isdir(p):
        return sorted(glob.glob(os.path.join(p, "libtessera.so*")), key=len)
    return [p]


def _installed_paths():
    """For a copy installed by `meson install` (_install_paths.py exists):
    the library in the same tree as the package (the prefix found by
    stripping the package's install path from this directory, so a DESTDIR
    staging tree works), then at the configured prefix."""
    try:
        from . import _install_paths as ip
    except ImportError:  # the source tree: no install
        return []
    out = []
    here = _HERE.replace(os.sep, "/")
    pkg = ip.PACKAGE_DIR.rstrip("/")
    if not os.path.isabs(pkg) and here.endswith("/" + pkg):
        root = here[:-len(pkg) - 1]
        out.append(os.path.join(root, ip.LIBDIR, ip.SONAME) if not os.path.isabs(ip.LIBDIR)
                   else os.path.join(ip.LIBDIR, ip.SONAME))
    out.append(os.path.join(ip.PREFIX, ip.LIBDIR, ip.SONAME))
    return out


def candidate_paths():
    """Where the library is looked for, in order: next to the package (the
    package directory, then its parent), where `meson install` put it (for
    an installed package), the repository's build directory (../../build
    relative to the package, then other build*/ directories, newest first),
    the linker's search path (ctypes.util.find_library). TESSERA_LIBRARY,
    when set, replaces them all."""
    out = []
    for d in (_HERE, os.path.dirname(_HERE)):
        out.extend(sorted(glob.glob(os.path.join(d, "libtessera.so*")), key=len))
    out.extend(_installed_paths())
    repo = os.path.dirname(os.path.dirname(_HERE))  # python/tessera -> the repository
    build = os.path.join(repo, "build")
    out.append(os.path.join(build, "libtessera.so"))
    others = [p for p in glob.glob(os.path.join(repo, "build*", "libtessera.so")) if os.path.dirname(p) != build]
    out.extend(sorted(others, key=os.path.getmtime, reverse=True))
    found = ctypes.util.find_library("tessera")
    if found:
        out.append(found)
    return out


class LibraryNotFound(ImportError):
    pass


def _open():
    env = os.environ.get("TESSERA_LIBRARY")
    if env:  # an explicit choice: that library or an error, never another one
        paths = [p for p in _libs_in(env) if os.path.exists(p)]
        if not paths:
            raise LibraryNotFound(f"tessera: TESSERA_LIBRARY={env}: no such file (or no libtessera.so* in it)")
        try:
            return ctypes.CDLL(os.path.abspath(paths[0])), os.path.abspath(paths[0])
        except OSError as e:
            raise LibraryNotFound(f"tessera: TESSERA_LIBRARY={env} cannot be loaded: {e}") from None
    tried = []
    for p in candidate_paths():
        if os.sep in p and not os.path.exists(p):
            tried.append(f"{p} (absent)")
            continue
        try:
            return ctypes.CDLL(p), p
        except OSError as e:
            tried.append(f"{p} ({e})")
    raise LibraryNotFound("tessera: libtessera.so not found; set TESSERA_LIBRARY to the library or its "
                          "build directory. Tried:\n  " + "\n  ".join(tried))


_P = ctypes.c_void_p
_I = ctypes.c_int
_I64 = ctypes.c_int64


def _protos(lib):
    """argtypes/restype for every function used; the status-returning ones
    keep c_int (tsr_status)."""
    sig = {
        "tsr_status_string": (ctypes.c_char_p, [_I]),
        "tsr_last_error": (ctypes.c_char_p, []),
        "tsr_last_kernel": (ctypes.c_char_p, []),
        "tsr_version": (ctypes.c_uint, []),
        "tsr_version_string": (ctypes.c_char_p, []),
        "tsr_dtype_size": (ctypes.c_size_t, [_I]),
        "tsr_dtype_name": (ctypes.c_char_p, [_I]),
        "tsr_backend_name": (ctypes.c_char_p, [_I]),
        "tsr_f32_to_bf16": (ctypes.c_uint16, [ctypes.c_float]),
        "tsr_bf16_to_f32": (ctypes.c_float, [ctypes.c_uint16]),
        "tsr_context_options_init": (None, [_P]),
        "tsr_context_create": (_I, [_P, _P]),
        "tsr_context_destroy": (_I, [_P]),
        "tsr_context_set_num_threads": (_I, [_P, _I]),
        "tsr_context_get_info": (_I, [_P, _P]),
        "tsr_synchronize": (_I, [_P]),
        "tsr_gemm_desc_init": (None, [_P]),
        "tsr_gemm": (_I, [_P, _P, _P, _P, _P]),
        "tsr_conv2d_desc_init": (None, [_P]),
        "tsr_conv2d_output_shape": (_I, [_P, _P, _P]),
        "tsr_conv2d": (_I, [_P, _P, _P, _P, _P]),
        "tsr_attention_desc_init": (None, [_P]),
        "tsr_attention": (_I, [_P, _P, _P, _P, _P, _P]),
        "tsr_tensor_contiguous": (TensorDesc, [_I, ctypes.c_int32, _P]),
        "tsr_chain_desc_init": (None, [_P]),
        "tsr_chain_push_unary": (_I, [_P, _I]),
        "tsr_chain_push_scalar": (_I, [_P, _I, ctypes.c_float, _I]),
        "tsr_chain_push_tensor": (_I, [_P, _I, _P, _I]),
        "tsr_elementwise_chain": (_I, [_P, _P, _P, _P, _P, _P, _P]),
        "tsr_rowwise_desc_init": (None, [_P]),
        "tsr_softmax": (_I, [_P, _P, _P, _P]),
        "tsr_layernorm": (_I, [_P, _P, _P, _P, _P, _P]),
        "tsr_rmsnorm": (_I, [_P, _P, _P, _P, _P]),
        "tsr_epilogue_residual": (EpilogueStep, [_P, _I, _I64, ctypes.c_float]),
        "tsr_tensor_desc_from_dlpack": (_I, [_P, _P, _P]),
        "tsr_gemm_desc_from_dlpack": (_I, [_P, _P, _P, _P, _P, _P, _P]),
        "tsr_dlpack_device_matches": (_I, [_P, DLDevice]),
        "tsr_dlpack_device_name": (ctypes.c_char_p, [ctypes.c_int32]),
        "tsr_dlpack_versioned_tensor": (_I, [_P, _I, ctypes.c_char_p, _P]),
    }
    missing = []
    for name, (res, args) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = res
        f.argtypes = args
    return missing


lib, path = _open()
_missing = _protos(lib)
HAVE_DLPACK = "tsr_tensor_desc_from_dlpack" not in _missing
_missing_core = [m for m in _missing if "dlpack" not in m]
if _missing_core:
    raise ImportError(f"tessera: {path} lacks {', '.join(_missing_core)}: an older or foreign libtessera?")


def last_error():
    return lib.tsr_last_error().decode("utf-8", "replace")


def status_name(st):
    return lib.tsr_status_string(st).decode()


def check(st):
    """Raises the TesseraError subclass for a non-zero status, carrying the
    library's message for this thread."""
    if st:
        raise error_for_status(st, status_name(st), last_error())


def fail(st, message):
    """Raises a Python-side check's error in the library's style."""
    raise error_for_status(st, status_name(st), message)


def version_string():
    return lib.tsr_version_string().decode()


# ----------------------------------------------------------- layout check

def _init_size(init, cls, buf):
    ctypes.memset(buf, 0, ctypes.sizeof(buf))
    init(buf)
    return ctypes.c_size_t.from_buffer(buf).value, cls.from_buffer(buf)


def check_layout():
    """Compares every mirrored struct with the library: the size each
    tsr_*_desc_init writes into `size` (that is the C sizeof), fields the
    initialisers and builders set at their offsets, and the operand table of
    a chain. Returns a list of mismatches ([] when all agree)."""
    bad = []
    buf = (ctypes.c_char * 16384)()
    for init, cls, probe in [
        (lib.tsr_context_options_init, ContextOptions, lambda d: d.backend == BACKEND_CPU),
        (lib.tsr_gemm_desc_init, GemmDesc, lambda d: d.batch == 1 and d.alpha == 1.0 and d.beta == 0.0),
        (lib.tsr_conv2d_desc_init, Conv2dDesc,
         lambda d: d.groups == 1 and d.dilation_w == 1 and d.s == 1 and d.pad_right == 0),
        (lib.tsr_attention_desc_init, AttentionDesc,
         lambda d: d.head_dim == 1 and d.seq_kv == 1 and d.batch == 1 and d.lse is None),
        (lib.tsr_chain_desc_init, ChainDesc, lambda d: d.num_steps == 0 and d.num_operands == 0),
        (lib.tsr_rowwise_desc_init, RowwiseDesc, lambda d: abs(d.epsilon - 1e-5) < 1e-9),
    ]:
        size, d = _init_size(init, cls, buf)
        if size != ctypes.sizeof(cls):
            bad.append(f"{cls.__name__}: the library's sizeof is {size}, the ctypes mirror's "
                       f"{ctypes.sizeof(cls)}")
        elif not probe(d):
            bad.append(f"{cls.__name__}: the fields set by its init function are not where the mirror "
                       "expects them")
    step = lib.tsr_epilogue_residual(ctypes.c_void_p(0x1000), F16, 77, 0.25)
    if not (step.op == EPI_RESIDUAL and step.data == 0x1000 and step.dtype == F16 and step.ld == 77
            and step.scale == 0.25):
        bad.append("EpilogueStep: tsr_epilogue_residual's fields are not where the mirror expects them")
    shape = (ctypes.c_int64 * 3)(2, 3, 5)
    t = lib.tsr_tensor_contiguous(BF16, 3, shape)
    if not (t.dtype == BF16 and t.ndim == 3 and list(t.shape[:3]) == [2, 3, 5]
            and list(t.strides[:3]) == [15, 5, 1]):
        bad.append("TensorDesc: tsr_tensor_contiguous's fields are not where the mirror expects them")
    ch = ChainDesc()
    lib.tsr_chain_desc_init(ctypes.byref(ch))
    if ch.size == ctypes.sizeof(ChainDesc):
        lib.tsr_chain_push_unary(ctypes.byref(ch), UNARY["exp"])
        lib.tsr_chain_push_tensor(ctypes.byref(ch), BINARY["mul"], ctypes.byref(t), 1)
        if not (ch.num_steps == 2 and ch.steps[0].kind == STEP_UNARY and ch.steps[0].unary == UNARY["exp"]
                and ch.steps[1].kind == STEP_TENSOR_LEFT and ch.steps[1].operand == 0
                and ch.num_operands == 1 and list(ch.operands[0].shape[:3]) == [2, 3, 5]):
            bad.append("ChainDesc: tsr_chain_push_* wrote steps/operands where the mirror does not expect them")
    return bad


def check_info_layout(ctx_handle):
    """tsr_context_get_info accepts info->size >= its sizeof: the mirror's
    size must pass and one byte less must not."""
    info = ContextInfo()
    info.size = ctypes.sizeof(info)
    if lib.tsr_context_get_info(ctx_handle, ctypes.byref(info)) != OK:
        return [f"ContextInfo: the library rejects the mirror's size: {last_error()}"]
    small = ContextInfo()
    small.size = ctypes.sizeof(small) - 1
    if lib.tsr_context_get_info(ctx_handle, ctypes.byref(small)) == OK:
        return ["ContextInfo: the library's sizeof is smaller than the mirror's"]
    return []


_layout_problems = check_layout()
if _layout_problems:
    raise ImportError("tessera: the ctypes structs do not match " + path + ":\n  "
                      + "\n  ".join(_layout_problems))

__all__ = ["lib", "path", "check", "fail", "last_error", "TesseraError"]
