"""Shared helpers of the fa package's tests: skipping, fp64 references, error
bars, and a Python port of the dropout mask (runtime/include/fa/runtime/Philox.h).

Importable without PyTorch: skip_reason() then says why the GPU tests skip.
"""

import math
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "python")
try:
    import fa  # noqa: F401
except ImportError:  # not installed, PYTHONPATH unset: the source tree's
    sys.path.insert(0, _PYTHON)
    import fa  # noqa: F401

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
    F = None


def torch_reason():
    """None when PyTorch imports, else why not."""
    return None if torch is not None else "PyTorch is not installed"


def skip_reason():
    """None when the GPU tests can run here, else why not."""
    return fa.unavailable_reason()


# ---- attention reference ---------------------------------------------------


def keep_mask(batch, heads, seq_q, seq_kv, device, causal=False, window=None, document_ids=None):
    """Bool [B or 1, 1, Nq, Nkv]: which keys each query keeps (AttentionVariant.h)."""
    i = torch.arange(seq_q, device=device).view(-1, 1)
    j = torch.arange(seq_kv, device=device).view(1, -1)
    off = seq_kv - seq_q
    keep = torch.ones(seq_q, seq_kv, dtype=torch.bool, device=device)
    if causal is True or causal == "top-left":
        keep &= j <= i
    elif causal == "bottom-right":
        keep &= j <= i + off
    if window is not None:
        left, right = window
        keep &= (j >= i + off - left) & (j <= i + off + right)
    keep = keep.view(1, 1, seq_q, seq_kv)
    if document_ids is not None:
        ids = document_ids.long()
        keep = keep & (ids[:, None, :, None] == ids[:, None, None, :])
    return keep


def expand_kv(t, heads):
    return t if t.shape[1] == heads else t.repeat_interleave(heads // t.shape[1], dim=1)


def reference_attention(q, k, v, causal=False, scale=None, window=None, softcap=None,
                        alibi_slopes=None, sinks=None, document_ids=None, dropout_keep=None,
                        dropout_p=0.0, keep=None):
    """(out, lse) of attention in the dtype of q (call it with float64 tensors),
    differentiable w.r.t. q, k, v and sinks. Rows that keep no key give out 0
    and lse -inf (sinks[h] with sinks). dropout_keep: bool [B, H, Nq, Nkv].
    keep: a bool mask [B or 1, H or 1, Nq, Nkv] to use instead of the variant's."""
    batch, heads, seq_q, head_dim = q.shape
    seq_kv = k.shape[2]
    k = expand_kv(k, heads)
    v = expand_kv(v, heads)
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    s = scale * torch.matmul(q, k.transpose(-1, -2))
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if alibi_slopes is not None:
        i = torch.arange(seq_q, device=q.device).view(-1, 1)
        j = torch.arange(seq_kv, device=q.device).view(1, -1)
        distance = (i + (seq_kv - seq_q) - j).abs().to(q.dtype)
        s = s - alibi_slopes.to(q.dtype).view(1, heads, 1, 1) * distance
    if keep is None:
        keep = keep_mask(batch, heads, seq_q, seq_kv, q.device, causal, window, document_ids)
    keep = keep.expand(batch, heads, seq_q, seq_kv)
    s = s.masked_fill(~keep, -math.inf)
    has_key = keep.any(-1)
    if sinks is not None:
        sink = sinks.to(q.dtype).view(1, heads, 1, 1).expand(batch, heads, seq_q, 1)
        lse = torch.logsumexp(torch.cat([s, sink], dim=-1), dim=-1)
    else:
        lse = torch.logsumexp(torch.where(has_key.unsqueeze(-1), s, torch.zeros_like(s)), dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    if dropout_keep is not None:
        p = p * dropout_keep.to(q.dtype) * dropout_scale(dropout_p)
    out = torch.matmul(p, v)
    if sinks is None:
        lse = torch.where(has_key, lse, torch.full_like(lse, -math.inf))
    return out, lse


def dropout_scale(p):
    """1 / (1 - p) in f32, as the kernels multiply kept weights (Philox.h)."""
    p32 = torch.tensor(p, dtype=torch.float32)
    return float(torch.tensor(1.0, dtype=torch.float32) / (1 - p32))


def sdpa_keep(batch, heads, seq_q, seq_kv, device, causal=False, window=None, document_ids=None):
    """The variant's keep mask with key 0 kept in rows that keep none: SDPA
    gives such rows NaN (and its gradients with them), so its yardstick
    problem differs from ours there."""
    keep = keep_mask(batch, heads, seq_q, seq_kv, device, causal, window, document_ids)
    empty = ~keep.any(-1, keepdim=True)
    if bool(empty.any()):
        first = torch.zeros_like(keep)
        first[..., 0] = True
        keep = keep | (first & empty)
    return keep


def sdpa_mask(keep, heads, dtype, alibi_slopes=None):
    """The attn_mask that gives torch's SDPA the problem of `keep`: bool, or
    an additive float mask with ALiBi."""
    seq_q, seq_kv = keep.shape[-2:]
    device = keep.device
    if alibi_slopes is None:
        return keep
    i = torch.arange(seq_q, device=device).view(-1, 1)
    j = torch.arange(seq_kv, device=device).view(1, -1)
    distance = (i + (seq_kv - seq_q) - j).abs().float()
    bias = -alibi_slopes.float().view(1, heads, 1, 1) * distance
    bias = bias.masked_fill(~keep, -math.inf)
    return bias.to(dtype)


def max_error(a, b, rows=None):
    """max |a - b| over the rows (bool [..., rows]) given, in fp64; inf
    matches inf."""
    a = a.double()
    b = b.double()
    diff = (a - b).abs()
    diff = torch.where(a == b, torch.zeros_like(diff), diff)  # -inf == -inf
    if rows is not None:
        diff = diff[rows]
    return float(diff.max()) if diff.numel() else 0.0


def error_bar(torch_error, reference, factor=2.0):
    """Our allowed max error: factor x PyTorch's own error in the same dtype,
    plus a tiny floor relative to the reference's magnitude."""
    magnitude = float(reference.double().abs().max()) if reference.numel() else 0.0
    return factor * torch_error + 1e-4 * max(1.0, magnitude)


# ---- dropout mask (Philox.h) -------------------------------------------------

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_ in range(10):
        if round_:
            k0 = (k0 + _W0) & _MASK32
            k1 = (k1 + _W1) & _MASK32
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK32)
    return c0, c1, c2, c3


def dropout_bits(seed, offset, batch, head, heads, query, key):
    """The 16 random bits of P[batch, head, query, key] (Philox.h)."""
    counter = (8 * (key // 32) + key % 8, 8 * (query // 16) + query % 8,
               (batch * heads + head) & _MASK32, offset & _MASK32)
    block = philox4x32_10(counter, (seed & _MASK32, (seed >> 32) & _MASK32))
    slot = 4 * ((query // 8) % 2) + (key // 8) % 4
    return (block[slot // 2] >> (16 * (slot % 2))) & 0xFFFF


def dropout_threshold(p):
    """floor(p * 2^16) with p as the f32 the kernels receive."""
    p32 = float(torch.tensor(p, dtype=torch.float32)) if torch is not None else p
    return int(math.floor(p32 * 65536.0))


def dropout_keep(seed, offset, p, batch, heads, seq_q, seq_kv):
    """Bool [B, H, Nq, Nkv], True where the kernels keep the weight. Each
    Philox block serves 8 positions; blocks are computed once."""
    threshold = dropout_threshold(p)
    key_pair = (seed & _MASK32, (seed >> 32) & _MASK32)
    planes = []
    for b in range(batch):
        for h in range(heads):
            blocks = {}
            plane = []
            for i in range(seq_q):
                c1 = 8 * (i // 16) + i % 8
                row_slot = 4 * ((i // 8) % 2)
                row = []
                for j in range(seq_kv):
                    c0 = 8 * (j // 32) + j % 8
                    block = blocks.get((c0, c1))
                    if block is None:
                        block = blocks[(c0, c1)] = philox4x32_10(
                            (c0, c1, (b * heads + h) & _MASK32, offset & _MASK32), key_pair)
                    slot = row_slot + (j // 8) % 4
                    row.append(((block[slot // 2] >> (16 * (slot % 2))) & 0xFFFF) >= threshold)
                plane.append(row)
            planes.append(plane)
    return torch.tensor(planes, dtype=torch.bool).view(batch, heads, seq_q, seq_kv)
