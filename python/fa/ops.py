"""The torch ops and the public functions fa.attention and fa.layer_norm.

Four custom ops (torch.library.custom_op), each with a fake (meta) kernel so
that torch.compile traces them without running them:

  fa::attention(q, k, v, alibi_slopes?, sinks?, document_ids?, causal,
                window_left, window_right, softcap, dropout_p)
      -> (out, lse, rng_state)
  fa::attention_backward(dout, q, k, v, out, lse, alibi_slopes?, sinks?,
                         document_ids?, rng_state, causal, window_left,
                         window_right, softcap, dropout_p)
      -> (dq, dk, dv, dsinks)
  fa::layer_norm(x, weight?, bias?, eps) -> (y, mean, rstd)
  fa::layer_norm_backward(dy, x, weight?, mean, rstd) -> (dx, dweight, dbias)

fa::attention and fa::layer_norm carry their autograd formulas
(register_autograd), which call the backward ops. The kernels run on
torch.cuda.current_stream() of the tensors' device; every output and
workspace comes from PyTorch's caching allocator (torch.empty), and nothing
on the way synchronizes with the device (but see document_ids).

causal: 0 none, 1 top-left, 2 bottom-right (fa.h's fa_causal).
window_left < 0: no window. softcap 0: none. rng_state: int64 CPU [2],
(seed, offset) of the dropout mask; zeros when dropout_p == 0.
"""

import ctypes
import math
import threading
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _capi, _library
from ._capi import FaError, UnsupportedError

_FA_DTYPES = {
    torch.bfloat16: _capi.FA_DTYPE_BF16,
    torch.float16: _capi.FA_DTYPE_F16,
    torch.float32: _capi.FA_DTYPE_F32,
}
_CAUSAL = {
    False: _capi.FA_CAUSAL_NONE,
    None: _capi.FA_CAUSAL_NONE,
    "none": _capi.FA_CAUSAL_NONE,
    True: _capi.FA_CAUSAL_TOP_LEFT,
    "top-left": _capi.FA_CAUSAL_TOP_LEFT,
    "bottom-right": _capi.FA_CAUSAL_BOTTOM_RIGHT,
}

try:  # the raw cudaStream_t of the current stream, as an int: what Inductor calls
    _current_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - older builds

    def _current_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


_byref = ctypes.byref
_Tensors = _capi.fa_attention_tensors
_SEED_HIGH = 2**63 - 1
_BACKWARD_HINT = (
    "the library has backward kernels for bf16 and f16 at every head dim and "
    "variant except dropout at head_dim 256, and for f32 for plain or causal "
    "attention at head_dim 32, 64 and 128: run the forward in bf16 or f16, or "
    "without dropout, to train"
)


def _dtype_code(tensor, what):
    code = _FA_DTYPES.get(tensor.dtype)
    if code is None:
        raise UnsupportedError(
            "%s is %s: the kernels run bf16, f16 or f32: cast with .to(torch.bfloat16)"
            % (what, tensor.dtype)
        )
    return code


def _attention_key(q, k, alibi_slopes, sinks, document_ids, causal, window_left,
                   window_right, softcap, dropout_p):
    batch, heads, seq_q, head_dim = q.shape
    return (
        _dtype_code(q, "q"), batch, heads, k.shape[1], seq_q, k.shape[2], head_dim,
        causal, window_left, window_right, softcap, alibi_slopes is not None,
        document_ids is not None, sinks is not None, dropout_p,
    )


def _contiguous(*tensors):
    return [None if t is None else t.contiguous() for t in tensors]


def _address(tensor):
    return 0 if tensor is None else tensor.data_ptr()


def _raise_status(api, status, doing, hint=None):
    raise api.error(status, doing, hint)


def _check_document_ids(ids):
    # The kernels skip key tiles by the ids, so rows that are not sorted give
    # wrong results silently: check them, at the cost of one device sync.
    if ids.shape[1] > 1 and not bool((ids[:, 1:] >= ids[:, :-1]).all()):
        raise ValueError(
            "fa.attention: document_ids rows must be non-decreasing (documents "
            "packed one after another): sort each row or renumber the documents"
        )


# ---- attention -------------------------------------------------------------
#
# The launches live in two plain functions, _attention_forward and
# _attention_backward_impl. The custom ops fa::attention and
# fa::attention_backward call them, and so does the eager fast path below:
# torch.compile and PyTorch's modes (fake tensors, vmap, dispatch modes) see
# the custom ops, while plain eager calls skip the custom-op machinery, whose
# Python layers cost about 40 us of host time per call on an H100 host
# (bench/torch_overhead_breakdown.py) against a few for the launch itself.

_thread_state = threading.local()


def _tensors_struct():
    """This thread's fa_attention_tensors: ctypes releases the GIL during the
    C call, so a struct shared between threads could change under it."""
    tensors = getattr(_thread_state, "tensors", None)
    if tensors is None:
        tensors = _thread_state.tensors = _Tensors()
        _thread_state.tensors_ref = _byref(tensors)
    return tensors


def _attention_forward(q, k, v, alibi_slopes, sinks, document_ids, causal, window_left,
                       window_right, softcap, dropout_p):
    """(out, lse, seed): the forward launched on the current stream; seed is
    the dropout mask's (0 without dropout). q, k, v contiguous."""
    if not q.is_cuda:
        raise UnsupportedError("fa.attention: q is on %s: move q, k, v to a CUDA device" % q.device)
    batch, heads, seq_q, _ = q.shape
    out = torch.empty_like(q)
    lse = q.new_empty((batch, heads, seq_q), dtype=torch.float32)
    seed = 0
    if dropout_p > 0:
        # Drawn here, inside the op, from the default CPU generator: opaque to
        # torch.compile (a compiled graph draws a new seed every call) and
        # reproducible under torch.manual_seed.
        seed = int(torch.randint(0, _SEED_HIGH, (), dtype=torch.int64))
    if document_ids is not None:
        _check_document_ids(document_ids)
    if out.numel() == 0:
        return out, lse, seed
    if k.shape[2] == 0:  # no keys: every row keeps none
        out.zero_()
        if sinks is not None:
            lse.copy_(sinks.view(1, heads, 1).expand(batch, heads, seq_q))
        else:
            lse.fill_(-math.inf)
        return out, lse, seed
    index = q.get_device()
    library = _library.library(index)
    plan = library.attention_plan(_attention_key(
        q, k, alibi_slopes, sinks, document_ids, causal, window_left, window_right, softcap,
        dropout_p))
    tensors = _tensors_struct()
    tensors.q = q.data_ptr()
    tensors.k = k.data_ptr()
    tensors.v = v.data_ptr()
    tensors.out = out.data_ptr()
    tensors.lse = lse.data_ptr()
    tensors.alibi_slopes = _address(alibi_slopes)
    tensors.doc_ids = _address(document_ids)
    tensors.sinks = _address(sinks)
    tensors.dropout_seed = seed
    tensors.dropout_offset = 0
    api = library.api
    workspace_bytes = plan.forward_workspace
    workspace = None
    if workspace_bytes:  # a dynamically scheduled kernel's tile counter
        workspace = torch.empty((max(workspace_bytes, 256),), dtype=torch.uint8, device=q.device)
    status = api.fa_attention_forward(plan.handle, _thread_state.tensors_ref, _address(workspace),
                                      workspace_bytes, _current_stream(index))
    if status:
        _raise_status(api, status, "fa.attention")
    return out, lse, seed


def _attention_backward_impl(dout, q, k, v, out, lse, alibi_slopes, sinks, document_ids, seed,
                             causal, window_left, window_right, softcap, dropout_p):
    """(dq, dk, dv, dsinks) launched on the current stream; every tensor
    contiguous; dsinks is empty without sinks."""
    heads = q.shape[1]
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    dsinks = torch.empty((heads if sinks is not None else 0,), dtype=torch.float32, device=q.device)
    if q.numel() == 0 or k.numel() == 0:
        dq.zero_()
        dk.zero_()
        dv.zero_()
        dsinks.zero_()
        return dq, dk, dv, dsinks
    index = q.get_device()
    library = _library.library(index)
    api = library.api
    key = _attention_key(q, k, alibi_slopes, sinks, document_ids, causal, window_left,
                         window_right, softcap, dropout_p)
    plan = library.attention_plan(key)
    if not plan.backward_kernel:
        raise UnsupportedError(
            "fa.attention backward: the library has no backward kernel for %s (%s)"
            % (_library.describe_attention(key), _BACKWARD_HINT)
        )
    workspace_bytes = plan.workspace_bytes(api)
    workspace = torch.empty((max(workspace_bytes, 256),), dtype=torch.uint8, device=q.device)
    tensors = _Tensors(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
        dout.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
        dsinks.data_ptr() if sinks is not None else 0,
        _address(alibi_slopes), _address(document_ids), _address(sinks), seed, 0,
    )
    status = api.fa_attention_backward(plan.handle, _byref(tensors), workspace.data_ptr(),
                                       workspace_bytes, _current_stream(index))
    if status:
        hint = _BACKWARD_HINT if status == _capi.FA_ERROR_UNSUPPORTED else None
        _raise_status(api, status, "fa.attention backward", hint)
    return dq, dk, dv, dsinks


@torch.library.custom_op("fa::attention", mutates_args=())
def _attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    alibi_slopes: Optional[Tensor],
    sinks: Optional[Tensor],
    document_ids: Optional[Tensor],
    causal: int,
    window_left: int,
    window_right: int,
    softcap: float,
    dropout_p: float,
) -> Tuple[Tensor, Tensor, Tensor]:
    q, k, v, alibi_slopes, sinks, document_ids = _contiguous(
        q, k, v, alibi_slopes, sinks, document_ids)
    out, lse, seed = _attention_forward(q, k, v, alibi_slopes, sinks, document_ids, causal,
                                        window_left, window_right, softcap, dropout_p)
    return out, lse, torch.tensor([seed, 0], dtype=torch.int64)


@_attention.register_fake
def _attention_fake(q, k, v, alibi_slopes, sinks, document_ids, causal, window_left,
                    window_right, softcap, dropout_p):
    batch, heads, seq_q, head_dim = q.shape
    out = q.new_empty((batch, heads, seq_q, head_dim))
    lse = q.new_empty((batch, heads, seq_q), dtype=torch.float32)
    rng_state = torch.empty(2, dtype=torch.int64, device="cpu")
    return out, lse, rng_state


@torch.library.custom_op("fa::attention_backward", mutates_args=())
def _attention_backward(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    alibi_slopes: Optional[Tensor],
    sinks: Optional[Tensor],
    document_ids: Optional[Tensor],
    rng_state: Tensor,
    causal: int,
    window_left: int,
    window_right: int,
    softcap: float,
    dropout_p: float,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    dout, q, k, v, out, lse, alibi_slopes, sinks, document_ids = _contiguous(
        dout, q, k, v, out, lse, alibi_slopes, sinks, document_ids)
    seed = int(rng_state[0]) if dropout_p > 0 else 0  # a CPU tensor: no sync
    return _attention_backward_impl(dout, q, k, v, out, lse, alibi_slopes, sinks, document_ids,
                                    seed, causal, window_left, window_right, softcap, dropout_p)


@_attention_backward.register_fake
def _attention_backward_fake(dout, q, k, v, out, lse, alibi_slopes, sinks, document_ids,
                             rng_state, causal, window_left, window_right, softcap, dropout_p):
    heads = q.shape[1]
    dsinks = q.new_empty((heads if sinks is not None else 0,), dtype=torch.float32)
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape), dsinks)


def _attention_input_grads(dq, dk, dv, dsinks, sinks):
    """The gradients of fa::attention's 11 inputs (q, k, v, alibi_slopes,
    sinks, document_ids, then the scalars): q, k, v and, with sinks, sinks."""
    return (dq, dk, dv, None, dsinks if sinks is not None else None, None,
            None, None, None, None, None)


def _attention_setup_context(ctx, inputs, output):
    (q, k, v, alibi_slopes, sinks, document_ids, causal, window_left, window_right,
     softcap, dropout_p) = inputs
    out, lse, rng_state = output
    ctx.save_for_backward(q, k, v, out, lse, alibi_slopes, sinks, document_ids, rng_state)
    ctx.params = (causal, window_left, window_right, softcap, dropout_p)
    # The backward kernels take no gradient of lse: lse is an output to read.
    ctx.mark_non_differentiable(lse, rng_state)


def _attention_autograd(ctx, dout, dlse, drng_state):
    q, k, v, out, lse, alibi_slopes, sinks, document_ids, rng_state = ctx.saved_tensors
    dq, dk, dv, dsinks = _attention_backward_op(
        dout.contiguous(), q, k, v, out, lse, alibi_slopes, sinks, document_ids,
        rng_state, *ctx.params)
    return _attention_input_grads(dq, dk, dv, dsinks, sinks)


_attention.register_autograd(_attention_autograd, setup_context=_attention_setup_context)

_attention_op = torch.ops.fa.attention.default
_attention_backward_op = torch.ops.fa.attention_backward.default


class _EagerAttention(torch.autograd.Function):
    """fa::attention's autograd formula for the eager fast path: the same
    launches as the ops, without the custom-op layers."""

    @staticmethod
    def forward(ctx, q, k, v, alibi_slopes, sinks, document_ids, causal, window_left,
                window_right, softcap, dropout_p):
        out, lse, seed = _attention_forward(q, k, v, alibi_slopes, sinks, document_ids, causal,
                                            window_left, window_right, softcap, dropout_p)
        ctx.save_for_backward(q, k, v, out, lse, alibi_slopes, sinks, document_ids)
        ctx.params = (seed, causal, window_left, window_right, softcap, dropout_p)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse, alibi_slopes, sinks, document_ids = ctx.saved_tensors
        dq, dk, dv, dsinks = _attention_backward_impl(
            dout.contiguous(), q, k, v, out, lse, alibi_slopes, sinks, document_ids, *ctx.params)
        return _attention_input_grads(dq, dk, dv, dsinks, sinks)


def _plain_eager(*tensors):
    """Whether the eager fast path may run: not tracing or compiling, no
    dispatch or function mode, no functorch transform, and only plain tensors
    (or Parameters); anything else goes through the custom ops, which those
    modes understand."""
    if _is_compiling() or _dispatch_modes() or _function_modes() or _functorch_active():
        return False
    for tensor in tensors:
        if tensor is not None and type(tensor) not in _PLAIN_TENSOR_TYPES:
            return False
    return True


_PLAIN_TENSOR_TYPES = (Tensor, torch.nn.Parameter)
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled


def _functorch_active():
    return torch._C._functorch.peek_interpreter_stack() is not None


def _run_attention(q, k, v, alibi_slopes, sinks, document_ids, causal, window_left,
                   window_right, softcap, dropout_p):
    """(out, lse) through the eager fast path when it may run, else the op."""
    args = (q, k, v, alibi_slopes, sinks, document_ids, causal, window_left, window_right,
            softcap, dropout_p)
    if not _plain_eager(q, k, v, alibi_slopes, sinks, document_ids):
        out, lse, _ = _attention_op(*args)
        return out, lse
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad
                                    or (sinks is not None and sinks.requires_grad)):
        return _EagerAttention.apply(*args)
    out, lse, _ = _attention_forward(*args)
    return out, lse


def _check_attention_args(q, k, v, causal, window, softcap, alibi_slopes, sinks,
                          document_ids, dropout_p):
    """The op's arguments after validation, as (causal, window_left,
    window_right, softcap, dropout_p). Raises before anything runs."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, Tensor):
            raise TypeError("fa.attention: %s must be a torch.Tensor, not %s" % (name, type(tensor).__name__))
        if tensor.dim() != 4:
            raise ValueError(
                "fa.attention: %s has shape %s: q must be [batch, heads, seq_q, head_dim] "
                "and k, v [batch, kv_heads, seq_kv, head_dim] (4 dims; a "
                "[batch, seq, heads, head_dim] tensor needs .transpose(1, 2))"
                % (name, tuple(tensor.shape))
            )
    if q.dtype not in _FA_DTYPES:
        raise UnsupportedError(
            "fa.attention: q is %s: the kernels run bf16, f16 or f32: cast with .to(torch.bfloat16)"
            % q.dtype
        )
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(
            "fa.attention: q, k, v must have one dtype, got %s, %s, %s: cast k and v with .to(q.dtype)"
            % (q.dtype, k.dtype, v.dtype)
        )
    if not q.is_cuda:
        raise UnsupportedError(
            "fa.attention: q is on %s: move q, k, v to a CUDA device (.cuda())" % q.device
        )
    if k.device != q.device or v.device != q.device:
        raise ValueError(
            "fa.attention: q, k, v must be on one device, got %s, %s, %s: move them with .to(q.device)"
            % (q.device, k.device, v.device)
        )
    batch, heads, seq_q, head_dim = q.shape
    if k.shape != v.shape or k.shape[0] != batch or k.shape[3] != head_dim:
        raise ValueError(
            "fa.attention: k %s and v %s must both be [batch, kv_heads, seq_kv, head_dim] "
            "with q's batch %d and head_dim %d"
            % (tuple(k.shape), tuple(v.shape), batch, head_dim)
        )
    kv_heads = k.shape[1]
    if kv_heads == 0 or heads % kv_heads != 0:
        raise ValueError(
            "fa.attention: kv_heads %d must divide heads %d (grouped-query attention): "
            "repeat k and v along dim 1 or change the head counts" % (kv_heads, heads)
        )

    causal_code = _CAUSAL.get(causal) if isinstance(causal, (bool, str, type(None))) else None
    if causal_code is None:
        raise ValueError(
            "fa.attention: causal must be False, True, 'top-left' or 'bottom-right', not %r" % (causal,)
        )

    if window is None:
        window_left = window_right = -1
    else:
        try:
            window_left, window_right = window
        except (TypeError, ValueError):
            raise ValueError("fa.attention: window must be a (left, right) pair of ints >= 0, not %r" % (window,)) from None
        if not isinstance(window_left, int) or not isinstance(window_right, int):
            raise ValueError("fa.attention: window must be a (left, right) pair of ints >= 0, not %r" % (window,))
        if window_left < 0 or window_right < 0:
            raise ValueError(
                "fa.attention: window %r has a negative bound: both must be >= 0 "
                "(query i keeps keys i + off - left ... i + off + right)" % (window,)
            )

    if softcap is None:
        softcap = 0.0
    else:
        softcap = float(softcap)
        if not (softcap > 0 and math.isfinite(softcap)):
            raise ValueError("fa.attention: softcap must be a finite float > 0 (or None), not %r" % softcap)

    for name, tensor in (("alibi_slopes", alibi_slopes), ("sinks", sinks)):
        if tensor is None:
            continue
        if not isinstance(tensor, Tensor) or tensor.dtype != torch.float32 or tuple(tensor.shape) != (heads,):
            raise ValueError(
                "fa.attention: %s must be a float32 tensor of shape [heads] = [%d], got %s: "
                "use .float() and one value per query head"
                % (name, heads, _describe(tensor))
            )
        if tensor.device != q.device:
            raise ValueError("fa.attention: %s is on %s, q on %s: move it with .to(q.device)" % (name, tensor.device, q.device))

    if document_ids is not None:
        if not isinstance(document_ids, Tensor) or document_ids.dtype != torch.int32:
            raise ValueError(
                "fa.attention: document_ids must be an int32 tensor [batch, seq], got %s: use .to(torch.int32)"
                % _describe(document_ids)
            )
        if tuple(document_ids.shape) != (batch, seq_q) or k.shape[2] != seq_q:
            raise ValueError(
                "fa.attention: document_ids %s must be [batch, seq] = [%d, %d] with seq_q == seq_kv "
                "(q has %d queries, k %d keys)"
                % (tuple(document_ids.shape), batch, seq_q, seq_q, k.shape[2])
            )
        if document_ids.device != q.device:
            raise ValueError("fa.attention: document_ids is on %s, q on %s: move it with .to(q.device)" % (document_ids.device, q.device))

    dropout_p = float(dropout_p)
    if not (0.0 <= dropout_p < 1.0):
        raise ValueError("fa.attention: dropout_p must be in [0, 1), not %r (pass 0 in eval)" % dropout_p)
    return causal_code, window_left, window_right, softcap, dropout_p


def _describe(value):
    if isinstance(value, Tensor):
        return "%s %s" % (value.dtype, list(value.shape))
    return type(value).__name__


def _scaled_query(q, scale):
    if scale is None:
        return q
    factor = float(scale) * math.sqrt(q.shape[-1])
    if abs(factor - 1.0) < 1e-12:
        return q
    return q * factor


def attention(q, k, v, *, causal=False, scale=None, window=None, softcap=None,
              alibi_slopes=None, sinks=None, document_ids=None, dropout_p=0.0,
              return_lse=False):
    """Attention of q [B, H, Nq, D] over k, v [B, Hk, Nkv, D] with the kernel library.

    Hk divides H (grouped-query attention); q, k, v share one dtype (bf16, f16
    or f32) and one CUDA device. Returns out [B, H, Nq, D] (contiguous, q's
    dtype), and with return_lse=True also lse [B, H, Nq] (f32, natural log of
    each row's softmax denominator; not differentiable).

    causal: False, True (== "top-left": query i keeps keys j <= i) or
        "bottom-right" (j <= i + Nkv - Nq, FlashAttention's alignment).
    scale: None for 1/sqrt(D), the scale compiled into the kernels. Another
        value scales q by scale * sqrt(D) before the kernel: one extra
        elementwise pass over q, rounded to q's dtype (exact when the factor is
        a power of two), and the same factor on dq in the backward.
    window: (left, right), ints >= 0: query i keeps keys
        i + off - left <= j <= i + off + right, off = Nkv - Nq.
    softcap: float > 0: scores become softcap * tanh(s / softcap).
    alibi_slopes: float32 [H]: scores minus slope * |i + off - j| (no gradient).
    sinks: float32 [H]: one logit per head in every row's softmax
        denominator (GPT-OSS); differentiable.
    document_ids: int32 [B, N] (Nq == Nkv), each row non-decreasing: queries
        keep keys of their own document. The rows are checked on the device,
        which costs one host-device synchronization per call (a .item()).
    dropout_p: in [0, 1): dropout on the attention weights. The op draws the
        mask's seed from torch's default CPU generator (torch.manual_seed
        makes runs reproducible; a compiled graph draws a new seed per call);
        the backward regenerates the same mask. Pass 0 in eval: then no seed
        is drawn.

    Tensors that are not contiguous are copied (.contiguous(), here, in traced
    code, so torch.compile can fuse the copy into their producer): the usual
    [B, N, H, D].transpose(1, 2) view costs one copy each.

    Differentiable w.r.t. q, k, v and sinks. Backward kernels exist for bf16
    and f16 at every head dim and variant except dropout at head_dim 256, and
    for f32 for plain or causal attention at head_dim 32, 64, 128; a problem
    without them raises UnsupportedError when its backward runs.

    Raises UnsupportedError (what the library cannot run: dtype, device, head
    dim, variant; the message says what exists) or ValueError (malformed
    arguments) before any kernel is launched.
    """
    causal_code, window_left, window_right, softcap, dropout_p = _check_attention_args(
        q, k, v, causal, window, softcap, alibi_slopes, sinks, document_ids, dropout_p)
    q = _scaled_query(q, scale).contiguous()
    alibi_slopes, sinks, document_ids = _contiguous(alibi_slopes, sinks, document_ids)
    out, lse = _run_attention(
        q, k.contiguous(), v.contiguous(), alibi_slopes, sinks, document_ids,
        causal_code, window_left, window_right, softcap, dropout_p)
    if return_lse:
        return out, lse
    return out


def attention_kernels(q, k, v, *, causal=False, window=None, softcap=None,
                      alibi_slopes=None, sinks=None, document_ids=None, dropout_p=0.0,
                      **unused):
    """(forward kernel name, backward kernel name) that fa.attention runs for
    these arguments; the backward's is "" when the library has none."""
    causal_code, window_left, window_right, softcap, dropout_p = _check_attention_args(
        q, k, v, causal, window, softcap, alibi_slopes, sinks, document_ids, dropout_p)
    library = _library.library(q.get_device())
    plan = library.attention_plan(_attention_key(
        q, k, alibi_slopes, sinks, document_ids, causal_code, window_left, window_right,
        softcap, dropout_p))
    return plan.forward_kernel, plan.backward_kernel


# ---- LayerNorm -------------------------------------------------------------

# Weights of ones and biases of zeros for weight=None / bias=None, per
# (device index, dtype, width): read-only, so one per kind serves every call.
_constant_params = {}


def _param_or_constant(param, x, value):
    if param is not None:
        return param.to(x.dtype).contiguous()
    key = (x.get_device(), x.dtype, x.shape[1], value)
    constant = _constant_params.get(key)
    if constant is None:
        constant = torch.full((x.shape[1],), value, dtype=x.dtype, device=x.device)
        # Once per kind: later calls may run on other streams, which must see
        # it filled.
        torch.cuda.current_stream(x.device).synchronize()
        _constant_params[key] = constant
    return constant


def _layer_norm_forward(x, weight, bias, eps):
    """(y, mean, rstd) launched on the current stream; x contiguous [rows, C]."""
    if not x.is_cuda:
        raise UnsupportedError("fa.layer_norm: x is on %s: move x to a CUDA device" % x.device)
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty((rows,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((rows,), dtype=torch.float32, device=x.device)
    if rows == 0:
        return y, mean, rstd
    weight = _param_or_constant(weight, x, 1.0)
    bias = _param_or_constant(bias, x, 0.0)
    index = x.get_device()
    library = _library.library(index)
    plan = library.layer_norm_plan(_dtype_code(x, "x"), rows, cols)
    api = library.api
    status = api.fa_layer_norm_forward(
        plan.handle, x.data_ptr(), weight.data_ptr(), bias.data_ptr(), y.data_ptr(),
        mean.data_ptr(), rstd.data_ptr(), eps, _current_stream(index))
    if status:
        _raise_status(api, status, "fa.layer_norm")
    return y, mean, rstd


def _layer_norm_backward_impl(dy, x, weight, mean, rstd):
    """(dx, dweight, dbias), the parameter gradients in f32; every tensor
    contiguous."""
    rows, cols = x.shape
    dx = torch.empty_like(x)
    dweight = torch.empty((cols,), dtype=torch.float32, device=x.device)
    dbias = torch.empty((cols,), dtype=torch.float32, device=x.device)
    if rows == 0:
        dweight.zero_()
        dbias.zero_()
        return dx, dweight, dbias
    weight = _param_or_constant(weight, x, 1.0)
    index = x.get_device()
    library = _library.library(index)
    plan = library.layer_norm_plan(_dtype_code(x, "x"), rows, cols)
    api = library.api
    workspace_bytes = plan.workspace_bytes(api)
    workspace = torch.empty((max(workspace_bytes, 256),), dtype=torch.uint8, device=x.device)
    status = api.fa_layer_norm_backward(
        plan.handle, x.data_ptr(), weight.data_ptr(), mean.data_ptr(), rstd.data_ptr(),
        dy.data_ptr(), dx.data_ptr(), dweight.data_ptr(), dbias.data_ptr(),
        workspace.data_ptr(), workspace_bytes, _current_stream(index))
    if status:
        _raise_status(api, status, "fa.layer_norm backward")
    return dx, dweight, dbias


@torch.library.custom_op("fa::layer_norm", mutates_args=())
def _layer_norm(
    x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float
) -> Tuple[Tensor, Tensor, Tensor]:
    return _layer_norm_forward(x.contiguous(), weight, bias, eps)


@_layer_norm.register_fake
def _layer_norm_fake(x, weight, bias, eps):
    rows = x.shape[0]
    return (x.new_empty(x.shape), x.new_empty((rows,), dtype=torch.float32),
            x.new_empty((rows,), dtype=torch.float32))


@torch.library.custom_op("fa::layer_norm_backward", mutates_args=())
def _layer_norm_backward(
    dy: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor, rstd: Tensor
) -> Tuple[Tensor, Tensor, Tensor]:
    return _layer_norm_backward_impl(dy.contiguous(), x.contiguous(), weight, mean, rstd)


@_layer_norm_backward.register_fake
def _layer_norm_backward_fake(dy, x, weight, mean, rstd):
    cols = x.shape[1]
    return (x.new_empty(x.shape), x.new_empty((cols,), dtype=torch.float32),
            x.new_empty((cols,), dtype=torch.float32))


def _layer_norm_setup_context(ctx, inputs, output):
    x, weight, bias, eps = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_grads(ctx, dx, dweight, dbias, weight):
    return (dx,
            None if weight is None else dweight.to(weight.dtype),
            None if ctx.bias_dtype is None else dbias.to(ctx.bias_dtype),
            None)


def _layer_norm_autograd(ctx, dy, dmean, drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dweight, dbias = _layer_norm_backward_op(dy.contiguous(), x, weight, mean, rstd)
    return _layer_norm_grads(ctx, dx, dweight, dbias, weight)


_layer_norm.register_autograd(_layer_norm_autograd, setup_context=_layer_norm_setup_context)

_layer_norm_op = torch.ops.fa.layer_norm.default
_layer_norm_backward_op = torch.ops.fa.layer_norm_backward.default


class _EagerLayerNorm(torch.autograd.Function):
    """fa::layer_norm's autograd formula for the eager fast path (see the
    attention section)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = _layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dweight, dbias = _layer_norm_backward_impl(dy.contiguous(), x, weight, mean, rstd)
        return _layer_norm_grads(ctx, dx, dweight, dbias, weight)


def _run_layer_norm(x, weight, bias, eps):
    """y through the eager fast path when it may run, else the op; x
    contiguous [rows, C]."""
    if not _plain_eager(x, weight, bias):
        return _layer_norm_op(x, weight, bias, eps)[0]
    if torch.is_grad_enabled() and (x.requires_grad or (weight is not None and weight.requires_grad)
                                    or (bias is not None and bias.requires_grad)):
        return _EagerLayerNorm.apply(x, weight, bias, eps)
    return _layer_norm_forward(x, weight, bias, eps)[0]


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the last dim with the kernel library.

    x: [..., C], bf16, f16 or f32, on a CUDA device; normalized_shape: C or
    (C,) (the last dim only). weight, bias: [C] or None (ones, zeros); they are
    cast to x's dtype for the kernels, and their gradients (computed in f32)
    are returned in their own dtype. x is viewed as [rows, C] (copied first
    when not contiguous). eps > 0. Differentiable w.r.t. x, weight, bias.
    """
    if not isinstance(x, Tensor):
        raise TypeError("fa.layer_norm: x must be a torch.Tensor, not %s" % type(x).__name__)
    if isinstance(normalized_shape, int):
        shape = (normalized_shape,)
    else:
        shape = tuple(normalized_shape)
    if len(shape) != 1 or x.dim() == 0 or shape[0] != x.shape[-1]:
        raise ValueError(
            "fa.layer_norm normalizes over the last dim only: normalized_shape must be "
            "(%s,), x's last dim, not %r: reshape x so that the normalized elements are "
            "its last dim" % (x.shape[-1] if x.dim() else "C", normalized_shape)
        )
    if x.dtype not in _FA_DTYPES:
        raise UnsupportedError(
            "fa.layer_norm: x is %s: the kernels run bf16, f16 or f32: cast with .to(torch.bfloat16)"
            % x.dtype
        )
    if not x.is_cuda:
        raise UnsupportedError("fa.layer_norm: x is on %s: move x to a CUDA device (.cuda())" % x.device)
    cols = shape[0]
    for name, tensor in (("weight", weight), ("bias", bias)):
        if tensor is None:
            continue
        if not isinstance(tensor, Tensor) or tuple(tensor.shape) != (cols,):
            raise ValueError("fa.layer_norm: %s must be a tensor [%d], got %s" % (name, cols, _describe(tensor)))
        if not tensor.is_floating_point():
            raise ValueError("fa.layer_norm: %s is %s: it must be a floating-point tensor" % (name, tensor.dtype))
        if tensor.device != x.device:
            raise ValueError("fa.layer_norm: %s is on %s, x on %s: move it with .to(x.device)" % (name, tensor.device, x.device))
    eps = float(eps)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError("fa.layer_norm: eps must be a finite float > 0, not %r" % eps)
    y = _run_layer_norm(x.reshape(-1, cols).contiguous(), weight, bias, eps)
    return y.view(x.shape)
