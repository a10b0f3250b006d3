"""fa: the kernel library's attention and LayerNorm for PyTorch.

Pure Python over the runtime's C API (libfa_runtime.so, through ctypes): no
C++ extension, so it never has to match torch's C++ ABI. Run-time files, in
order:
  libfa_runtime.so: $FA_RUNTIME_LIBRARY, else <repo>/build/lib/libfa_runtime.so
  kernel library:   $FA_KERNELS, else <repo>/build/kernels
  tuning cache:     $FA_TUNING_CACHE, else <kernels>/tuning.json if present

  fa.attention(q, k, v, *, causal=False, scale=None, window=None, softcap=None,
               alibi_slopes=None, sinks=None, document_ids=None, dropout_p=0.0,
               return_lse=False)
  fa.layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5)

Importing fa registers the torch ops torch.ops.fa.attention,
fa.attention_backward, fa.layer_norm and fa.layer_norm_backward, which
torch.compile(fullgraph=True) traces without graph breaks.
"""

import os

from . import _capi
from ._capi import FaError, UnsupportedError

__version__ = "0.1.0"

try:
    import torch as _torch
except ImportError:  # the package imports without PyTorch; the ops need it
    _torch = None

if _torch is not None:
    from .ops import attention, attention_kernels, layer_norm
else:

    def _needs_torch(*args, **kwargs):
        raise ImportError("fa.attention and fa.layer_norm need PyTorch (>= 2.4): pip install torch")

    attention = attention_kernels = layer_norm = _needs_torch


def runtime_library():
    """The path of libfa_runtime.so that fa loads."""
    return _capi.runtime_library_path()


def kernel_dir():
    """The kernel library directory that fa opens."""
    return _capi.kernel_dir_path()


def is_available():
    """Whether fa can run here: PyTorch with CUDA, libfa_runtime.so and the
    kernel library (its manifest.json) found."""
    return unavailable_reason() is None


def unavailable_reason():
    """None when fa can run here, else why not (for skip messages)."""
    if _torch is None:
        return "PyTorch is not installed"
    if not _torch.cuda.is_available():
        return "CUDA is not available to PyTorch"
    manifest = os.path.join(kernel_dir(), "manifest.json")
    if not os.path.exists(manifest):
        return "no kernel library at %s (set FA_KERNELS)" % kernel_dir()
    try:
        _capi.api()
    except FaError as error:
        return str(error)
    return None


__all__ = [
    "FaError",
    "UnsupportedError",
    "attention",
    "attention_kernels",
    "is_available",
    "kernel_dir",
    "layer_norm",
    "runtime_library",
    "unavailable_reason",
]
