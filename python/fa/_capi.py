"""ctypes bindings of the runtime's C API (runtime/include/fa/runtime/fa.h).

Everything here mirrors the header one to one: the status, dtype and causal
enums, the two structs (field for field, so ctypes lays them out as the C
compiler does: fa_attention_problem is 104 bytes, fa_attention_tensors 120),
and every fa_* function with its argtypes and restype. No torch here: the
module loads on a machine without a GPU or PyTorch.
"""

import ctypes
import os

# fa_status
FA_SUCCESS = 0
FA_ERROR_INVALID_ARGUMENT = 1
FA_ERROR_UNSUPPORTED = 2
FA_ERROR_LIBRARY = 3
FA_ERROR_NO_DEVICE = 4
FA_ERROR_CUDA = 5
FA_ERROR_WORKSPACE = 6
FA_ERROR_INTERNAL = 7

# fa_dtype
FA_DTYPE_F32 = 0
FA_DTYPE_F16 = 1
FA_DTYPE_BF16 = 2

# fa_causal
FA_CAUSAL_NONE = 0
FA_CAUSAL_TOP_LEFT = 1
FA_CAUSAL_BOTTOM_RIGHT = 2

# The FA_API_VERSION these bindings were written against.
API_VERSION = 2

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FaError(RuntimeError):
    """A failure of the runtime (the C API's status and fa_last_error() text)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class UnsupportedError(FaError, ValueError):
    """What the library cannot run: a dtype, head dim, device or variant.

    The message names the fix."""


class fa_attention_problem(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("heads", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("causal", ctypes.c_int),
        ("window", ctypes.c_int),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_float),
        ("alibi", ctypes.c_int),
        ("documents", ctypes.c_int),
        ("sinks", ctypes.c_int),
        ("dropout_p", ctypes.c_float),
    ]


_CUdeviceptr = ctypes.c_uint64  # unsigned long long on every 64-bit platform


class fa_attention_tensors(ctypes.Structure):
    _fields_ = [
        ("q", _CUdeviceptr),
        ("k", _CUdeviceptr),
        ("v", _CUdeviceptr),
        ("out", _CUdeviceptr),
        ("lse", _CUdeviceptr),
        ("dout", _CUdeviceptr),
        ("dq", _CUdeviceptr),
        ("dk", _CUdeviceptr),
        ("dv", _CUdeviceptr),
        ("dsinks", _CUdeviceptr),
        ("alibi_slopes", _CUdeviceptr),
        ("doc_ids", _CUdeviceptr),
        ("sinks", _CUdeviceptr),
        ("dropout_seed", ctypes.c_uint64),
        ("dropout_offset", ctypes.c_uint32),
    ]


assert ctypes.sizeof(fa_attention_problem) == 104, "fa_attention_problem layout"
assert ctypes.sizeof(fa_attention_tensors) == 120, "fa_attention_tensors layout"

_status = ctypes.c_int
_handle = ctypes.c_void_p
_ptr = _CUdeviceptr
_stream = ctypes.c_void_p
_size = ctypes.c_size_t

# name: (restype, argtypes)
_SIGNATURES = {
    "fa_api_version": (ctypes.c_int, []),
    "fa_last_error": (ctypes.c_char_p, []),
    "fa_status_name": (ctypes.c_char_p, [_status]),
    "fa_library_open": (
        _status,
        [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_handle)],
    ),
    "fa_library_close": (None, [_handle]),
    "fa_attention_plan_create": (
        _status,
        [_handle, ctypes.POINTER(fa_attention_problem), ctypes.POINTER(_handle)],
    ),
    "fa_attention_plan_destroy": (None, [_handle]),
    "fa_attention_plan_forward_kernel": (ctypes.c_char_p, [_handle]),
    "fa_attention_plan_backward_kernel": (ctypes.c_char_p, [_handle]),
    "fa_attention_plan_scale": (ctypes.c_double, [_handle]),
    "fa_attention_forward_workspace_size": (
        _status,
        [_handle, ctypes.POINTER(_size)],
    ),
    "fa_attention_backward_workspace_size": (
        _status,
        [_handle, ctypes.POINTER(_size)],
    ),
    "fa_attention_forward": (
        _status,
        [_handle, ctypes.POINTER(fa_attention_tensors), _ptr, _size, _stream],
    ),
    "fa_attention_backward": (
        _status,
        [_handle, ctypes.POINTER(fa_attention_tensors), _ptr, _size, _stream],
    ),
    "fa_layer_norm_plan_create": (
        _status,
        [_handle, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(_handle)],
    ),
    "fa_layer_norm_plan_destroy": (None, [_handle]),
    "fa_layer_norm_forward": (
        _status,
        [_handle, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, ctypes.c_double, _stream],
    ),
    "fa_layer_norm_backward_workspace_size": (
        _status,
        [_handle, ctypes.POINTER(_size)],
    ),
    "fa_layer_norm_backward": (
        _status,
        [_handle, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _size, _stream],
    ),
}


def runtime_library_path():
    """$FA_RUNTIME_LIBRARY, else <repo>/build/lib/libfa_runtime.so."""
    path = os.environ.get("FA_RUNTIME_LIBRARY")
    if path:
        return path
    return os.path.join(_REPO, "build", "lib", "libfa_runtime.so")


def kernel_dir_path():
    """$FA_KERNELS, else <repo>/build/kernels."""
    path = os.environ.get("FA_KERNELS")
    if path:
        return path
    return os.path.join(_REPO, "build", "kernels")


def tuning_cache_path():
    """$FA_TUNING_CACHE, else None (the library then reads
    <kernels>/tuning.json if present)."""
    return os.environ.get("FA_TUNING_CACHE") or None


class CApi:
    """The loaded libfa_runtime.so with every function declared.

    Attributes are the ctypes function objects themselves (api.fa_attention_forward
    etc.), looked up once, so that a call costs one attribute load."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise UnsupportedError(
                "libfa_runtime.so not found at %s: build it (ninja -C build "
                "fa_runtime) or point FA_RUNTIME_LIBRARY at it" % path
            )
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as error:
            raise FaError("cannot load %s: %s" % (path, error)) from None
        self.path = path
        missing = []
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                function = getattr(self.dll, name)
            except AttributeError:
                missing.append(name)
                continue
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)
        if missing:
            raise FaError("%s lacks %s: rebuild it" % (path, ", ".join(missing)))
        version = self.fa_api_version()
        if version != API_VERSION:
            raise FaError(
                "%s has C API version %d; this package speaks version %d: "
                "rebuild the library or reinstall the package from the same "
                "checkout" % (path, version, API_VERSION)
            )

    def last_error(self):
        text = self.fa_last_error()
        return text.decode("utf-8", "replace") if text else ""

    def status_name(self, status):
        name = self.fa_status_name(status)
        return name.decode() if name else "status %d" % status

    def error(self, status, where, hint=None):
        """The exception for a failed call: UnsupportedError for
        FA_ERROR_UNSUPPORTED, FaError otherwise. The message is `where` (the
        Python call), fa_last_error()'s text (what the library was doing and
        what went wrong), the status name, and `hint` (how to fix it)."""
        message = "%s: %s [%s]" % (where, self.last_error() or "failed", self.status_name(status))
        if hint:
            message += " (" + hint + ")"
        if status == FA_ERROR_UNSUPPORTED:
            return UnsupportedError(message, status)
        return FaError(message, status)

    def check(self, status, where, hint=None):
        if status != FA_SUCCESS:
            raise self.error(status, where, hint)


_api = None


def api():
    """The process's CApi, loaded on first use from runtime_library_path()."""
    global _api
    if _api is None:
        _api = CApi(runtime_library_path())
    return _api
