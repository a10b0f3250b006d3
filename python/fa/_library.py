"""Opened kernel libraries and their plans.

One fa_library per CUDA device index, opened on first use; per library, the
attention and LayerNorm plans keyed by tuples of the problem's values, so
that a call with a shape seen before costs one dict lookup. Everything is
closed at interpreter exit (after a device synchronize: the kernels of the
last launches must not be unloaded under them).

Plans are never evicted: a run that sees many distinct shapes (every
sequence length of a dynamic-shape model) keeps one small plan per shape.
"""

import atexit
import ctypes
import threading

from . import _capi

_libraries = {}
_lock = threading.Lock()


def _workspace_size(api, query, handle, where):
    size = ctypes.c_size_t()
    api.check(query(handle, ctypes.byref(size)), where)
    return size.value


class AttentionPlan:
    """forward_workspace: bytes fa_attention_forward needs (0 for most
    kernels; a dynamically scheduled forward's tile counter), asked once
    here since every forward launch needs it."""

    __slots__ = ("handle", "forward_kernel", "backward_kernel", "scale", "forward_workspace",
                 "_workspace")

    def __init__(self, api, handle):
        self.handle = handle
        self.forward_kernel = api.fa_attention_plan_forward_kernel(handle).decode()
        self.backward_kernel = api.fa_attention_plan_backward_kernel(handle).decode()
        self.scale = api.fa_attention_plan_scale(handle)
        self.forward_workspace = _workspace_size(
            api, api.fa_attention_forward_workspace_size, handle, "fa.attention")
        self._workspace = None

    def workspace_bytes(self, api):
        """Bytes of the backward's workspace, asked on first use."""
        if self._workspace is None:
            self._workspace = _workspace_size(
                api, api.fa_attention_backward_workspace_size, self.handle,
                "fa.attention backward")
        return self._workspace


class LayerNormPlan:
    __slots__ = ("handle", "_workspace")

    def __init__(self, handle):
        self.handle = handle
        self._workspace = None

    def workspace_bytes(self, api):
        if self._workspace is None:
            self._workspace = _workspace_size(
                api, api.fa_layer_norm_backward_workspace_size, self.handle,
                "fa.layer_norm backward")
        return self._workspace


class Library:
    """An opened fa_library for one device and its plan caches."""

    def __init__(self, api, device_index):
        self.api = api
        self.device_index = device_index
        handle = ctypes.c_void_p()
        kernel_dir = _capi.kernel_dir_path()
        tuning = _capi.tuning_cache_path()
        status = api.fa_library_open(
            kernel_dir.encode(),
            device_index,
            tuning.encode() if tuning is not None else None,
            ctypes.byref(handle),
        )
        api.check(
            status,
            "fa",
            "set FA_KERNELS to the build's kernels directory" if status == _capi.FA_ERROR_LIBRARY else None,
        )
        self.handle = handle.value
        self.attention_plans = {}
        self.layer_norm_plans = {}

    def attention_plan(self, key):
        """The plan of the problem `key`: (dtype, batch, heads, kv_heads, seq_q,
        seq_kv, head_dim, causal, window_left, window_right, softcap, alibi,
        documents, sinks, dropout_p), window_left < 0 for no window."""
        plan = self.attention_plans.get(key)
        if plan is None:
            plan = self._create_attention_plan(key)
        return plan

    def _create_attention_plan(self, key):
        (dtype, batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal,
         window_left, window_right, softcap, alibi, documents, sinks, dropout_p) = key
        problem = _capi.fa_attention_problem()
        problem.dtype = dtype
        problem.batch = batch
        problem.heads = heads
        problem.kv_heads = kv_heads
        problem.seq_q = seq_q
        problem.seq_kv = seq_kv
        problem.head_dim = head_dim
        problem.causal = causal
        if window_left >= 0:
            problem.window = 1
            problem.window_left = window_left
            problem.window_right = window_right
        problem.softcap = softcap
        problem.alibi = int(alibi)
        problem.documents = int(documents)
        problem.sinks = int(sinks)
        problem.dropout_p = dropout_p
        handle = ctypes.c_void_p()
        api = self.api
        status = api.fa_attention_plan_create(self.handle, ctypes.byref(problem), ctypes.byref(handle))
        api.check(status, "fa.attention")
        try:
            created = AttentionPlan(api, handle.value)
        except BaseException:
            api.fa_attention_plan_destroy(handle)
            raise
        with _lock:
            plan = self.attention_plans.get(key)
            if plan is None:
                plan = self.attention_plans[key] = created
                created = None
        if created is not None:  # another thread won the race
            api.fa_attention_plan_destroy(created.handle)
        return plan

    def layer_norm_plan(self, dtype, rows, cols):
        key = (dtype, rows, cols)
        plan = self.layer_norm_plans.get(key)
        if plan is not None:
            return plan
        handle = ctypes.c_void_p()
        api = self.api
        status = api.fa_layer_norm_plan_create(self.handle, dtype, rows, cols, ctypes.byref(handle))
        api.check(status, "fa.layer_norm")
        with _lock:
            plan = self.layer_norm_plans.get(key)
            if plan is None:
                plan = self.layer_norm_plans[key] = LayerNormPlan(handle.value)
                handle = None
        if handle is not None:
            api.fa_layer_norm_plan_destroy(handle)
        return plan

    def close(self):
        api = self.api
        for plan in self.attention_plans.values():
            api.fa_attention_plan_destroy(plan.handle)
        for plan in self.layer_norm_plans.values():
            api.fa_layer_norm_plan_destroy(plan.handle)
        self.attention_plans = {}
        self.layer_norm_plans = {}
        api.fa_library_close(self.handle)
        self.handle = None


DTYPE_NAMES = {_capi.FA_DTYPE_F32: "f32", _capi.FA_DTYPE_F16: "f16", _capi.FA_DTYPE_BF16: "bf16"}
CAUSAL_NAMES = {0: "", 1: " causal", 2: " causal bottom-right"}


def describe_attention(key):
    (dtype, batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal,
     window_left, window_right, softcap, alibi, documents, sinks, dropout_p) = key
    text = "%s [B %d, H %d, Hkv %d, Nq %d, Nkv %d, D %d]%s" % (
        DTYPE_NAMES.get(dtype, dtype), batch, heads, kv_heads, seq_q, seq_kv, head_dim,
        CAUSAL_NAMES.get(causal, ""))
    if window_left >= 0:
        text += " window (%d, %d)" % (window_left, window_right)
    if softcap > 0:
        text += " softcap %g" % softcap
    if alibi:
        text += " alibi"
    if documents:
        text += " documents"
    if sinks:
        text += " sinks"
    if dropout_p > 0:
        text += " dropout %g" % dropout_p
    return text


def library(device_index):
    """The opened library of CUDA device `device_index` (opened on first use)."""
    lib = _libraries.get(device_index)
    if lib is None:
        with _lock:
            lib = _libraries.get(device_index)
            if lib is None:
                lib = _libraries[device_index] = Library(_capi.api(), device_index)
    return lib


def close_all():
    """Closes every library; called at exit. Waits for each device first."""
    if not _libraries:
        return
    try:
        import torch

        for index in _libraries:
            torch.cuda.synchronize(index)
    except Exception:  # a broken CUDA context at exit: close anyway
        pass
    for lib in list(_libraries.values()):
        lib.close()
    _libraries.clear()


atexit.register(close_all)
