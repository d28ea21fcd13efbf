"""Exceptions: one TesseraError subclass per tsr_status, carrying the
library's message (tsr_last_error()) for the failed call."""


class TesseraError(Exception):
    """A Tessera call failed. .status is the tsr_status value, .status_name
    its name ("TSR_ERR_INVALID_ARGUMENT"), .message the library's words."""

    status = None

    def __init__(self, message, status=None, status_name=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.status_name = status_name or _NAMES.get(self.status, "TSR_ERR_UNKNOWN_STATUS")

    def __str__(self):
        return f"{self.message} [{self.status_name}]"


class InvalidArgumentError(TesseraError, ValueError):
    """A NULL pointer, a bad size, stride or enum (TSR_ERR_INVALID_ARGUMENT)."""
    status = 1


class NotSupportedError(TesseraError):
    """Legal, but no kernel handles it (TSR_ERR_NOT_SUPPORTED)."""
    status = 2


class NoDeviceError(TesseraError):
    """The backend or device is absent on this machine (TSR_ERR_NO_DEVICE)."""
    status = 3


class OutOfMemoryError(TesseraError, MemoryError):
    """TSR_ERR_OUT_OF_MEMORY."""
    status = 4


class DeviceError(TesseraError):
    """The backend's runtime reported a failure (TSR_ERR_DEVICE)."""
    status = 5


class WrongContextError(TesseraError):
    """The object belongs to another backend or device (TSR_ERR_WRONG_CONTEXT)."""
    status = 6


class TesseraIOError(TesseraError):
    """A file could not be read or written (TSR_ERR_IO)."""
    status = 7


class InternalError(TesseraError):
    """A bug in Tessera (TSR_ERR_INTERNAL): please report it."""
    status = 8


_CLASSES = {c.status: c for c in (InvalidArgumentError, NotSupportedError, NoDeviceError, OutOfMemoryError,
                                  DeviceError, WrongContextError, TesseraIOError, InternalError)}
_NAMES = {1: "TSR_ERR_INVALID_ARGUMENT", 2: "TSR_ERR_NOT_SUPPORTED", 3: "TSR_ERR_NO_DEVICE",
          4: "TSR_ERR_OUT_OF_MEMORY", 5: "TSR_ERR_DEVICE", 6: "TSR_ERR_WRONG_CONTEXT", 7: "TSR_ERR_IO",
          8: "TSR_ERR_INTERNAL"}


def error_for_status(status, status_name, message):
    cls = _CLASSES.get(status, TesseraError)
    return cls(message, status, status_name)
