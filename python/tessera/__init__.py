"""Tessera from Python: ctypes over libtessera.so (no compiled extension).

    import numpy as np, tessera
    c = tessera.gemm(a, b.T, bias=bias, activation="gelu")   # a transposed view: no copy
    y = tessera.conv2d(x, w, stride=2, padding=1, layout="NHWC")
    o = tessera.attention(q, k, v, causal="top_left")          # GQA by head counts
    y = tessera.chain(x).add(bias).gelu().mul(0.5).run()       # one pass over memory

Inputs are NumPy arrays or any host object with __dlpack__ (PyTorch CPU
tensors, JAX/CuPy host arrays...); results are NumPy arrays. bfloat16 data is
passed as uint16 with dtype='bf16' (tessera.to_bf16 / from_bf16 convert).
__dlpack__ objects are asked for a DLPack 1.x capsule first (read-only ones
are refused as outputs), else the legacy one. Failures raise a TesseraError
subclass per status, with the library's message. The library is found
through TESSERA_LIBRARY (a file or a build directory), next to the package,
where `meson install` put it (an installed package), in ../../build, or on
the linker's path. Repeated gemm calls reuse the descriptor the first built.
`python -m tessera info` prints the devices, CPU features and tuning table.
PyTorch custom operators: import tessera.torch.
"""

from ._errors import (DeviceError, InternalError, InvalidArgumentError, NoDeviceError, NotSupportedError,
                      OutOfMemoryError, TesseraError, TesseraIOError, WrongContextError)
from . import _lib
from ._arrays import from_bf16, to_bf16
from ._context import Context, default_context, set_default_context
from ._ops import Chain, attention, chain, conv2d, gemm, layer_norm, rms_norm, softmax

__version__ = _lib.version_string()
library_path = _lib.path


def version():
    """The loaded library's version string ("0.1.0")."""
    return _lib.version_string()


def last_kernel():
    """The kernel the last op call on this thread ran ("gemm.x86_avx2.f32", ...)."""
    return _lib.lib.tsr_last_kernel().decode()


__all__ = ["Context", "default_context", "set_default_context", "gemm", "conv2d", "attention", "softmax",
           "layer_norm", "rms_norm", "chain", "Chain", "to_bf16", "from_bf16", "version", "last_kernel",
           "library_path", "TesseraError", "InvalidArgumentError", "NotSupportedError", "NoDeviceError",
           "OutOfMemoryError", "DeviceError", "WrongContextError", "TesseraIOError", "InternalError"]
