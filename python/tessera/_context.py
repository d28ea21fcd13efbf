"""tessera.Context: one backend + device (+ stream), and the module-level
default context the functions use when none is given."""

import ctypes
import threading

from . import _lib as L


class Context:
    """A Tessera context (tsr_context).

    backend: 'cpu', 'cuda', 'hip' or 'opencl'; device: its index; threads:
    CPU worker threads (0 = all cores); stream: a CUDA/HIP stream or OpenCL
    queue handle as an int (None = the library's own); reference_only: run
    the reference kernels only; no_tuning_table: ignore tuning tables.
    An absent backend raises NoDeviceError with the library's reason.
    """

    def __init__(self, backend="cpu", device=0, threads=0, *, stream=None, reference_only=False,
                 no_tuning_table=False):
        self._h = None
        if backend not in L.BACKENDS:
            L.fail(L.ERR_INVALID_ARGUMENT,
                   f"context_create: backend {backend!r} is not one of {', '.join(L.BACKENDS)}")
        opts = L.ContextOptions()
        L.lib.tsr_context_options_init(ctypes.byref(opts))
        opts.backend = L.BACKENDS[backend]
        opts.device = int(device)
        opts.num_threads = int(threads)
        opts.stream = stream
        opts.flags = ((L.CONTEXT_REFERENCE_ONLY if reference_only else 0)
                      | (L.CONTEXT_NO_TUNING_TABLE if no_tuning_table else 0))
        h = ctypes.c_void_p()
        L.check(L.lib.tsr_context_create(ctypes.byref(h), ctypes.byref(opts)))
        self._h = h.value
        self.backend = backend
        self.device = int(device)
        self.stream = stream
        self._destroy = L.lib.tsr_context_destroy  # still callable while the interpreter shuts down

    @property
    def handle(self):
        """The tsr_context pointer as an int (for ctypes calls of your own)."""
        if self._h is None:
            L.fail(L.ERR_INVALID_ARGUMENT, "context: this Context was closed")
        return self._h

    def info(self):
        """tsr_context_get_info as a dict: backend, device, num_threads,
        cpu_features (names), arch, device_name, driver, compute_units,
        table_path, table_status."""
        i = L.ContextInfo()
        i.size = ctypes.sizeof(i)
        L.check(L.lib.tsr_context_get_info(self.handle, ctypes.byref(i)))
        return {
            "backend": L.BACKEND_NAMES.get(i.backend, str(i.backend)),
            "device": i.device,
            "num_threads": i.num_threads,
            "cpu_features": [name for bit, name in L.CPU_FEATURES if i.cpu_features & bit],
            "arch": i.arch.decode(errors="replace"),
            "device_name": i.device_name.decode(errors="replace"),
            "driver": i.driver.decode(errors="replace"),
            "compute_units": i.compute_units,
            "table_path": i.table_path.decode(errors="replace"),
            "table_status": i.table_status.decode(errors="replace"),
        }

    def set_threads(self, threads):
        L.check(L.lib.tsr_context_set_num_threads(self.handle, int(threads)))

    def synchronize(self):
        L.check(L.lib.tsr_synchronize(self.handle))

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            self._destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._h is None else f"0x{self._h:x}"
        return f"tessera.Context(backend={self.backend!r}, device={self.device}, {state})"


_default = None
_default_lock = threading.Lock()


def default_context():
    """The process-wide CPU context (all cores) the functions use when no
    ctx= is given; created on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Context("cpu")
    return _default


def set_default_context(ctx):
    """Makes ctx (a Context, or None for a fresh CPU one on next use) the default."""
    global _default
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError("set_default_context takes a tessera.Context or None")
    with _default_lock:
        _default = ctx


def host_handle(ctx, who):
    """The handle of ctx (or the default) for host (NumPy) memory."""
    c = ctx if ctx is not None else (_default if _default is not None else default_context())
    if c.backend != "cpu":
        L.fail(L.ERR_WRONG_CONTEXT,
               f"{who}: ctx is a {c.backend} context but NumPy arrays live in host memory; use a cpu "
               "context (device memory goes through tessera.torch or your own ctypes calls)")
    return c.handle
