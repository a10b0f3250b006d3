#!/usr/bin/env python3
"""Where the host time of one fa.attention call goes, layer by layer.

Times 200 back-to-back calls on a tiny problem (B=1 H=1 N=16 D=64 bf16,
causal), before the synchronize that ends them: the host's issue time per
call, since 200 launches never fill the launch queue (the wall time with the
synchronize is printed beside it; it cannot drop below the GPU's time per
kernel). Layers of the call, innermost first:

  C launch            fa_attention_forward through ctypes, buffers (and the
                      forward's workspace, if it needs one) made once
  launch function     ops._attention_forward: outputs, plan lookup, launch
  torch.ops.fa        the registered custom op through the dispatcher
  fa.attention        the public wrapper: checks, then the eager fast path
  ... requires_grad   the same with q, k, v requiring grad (autograd node)
  SDPA                F.scaled_dot_product_attention for comparison

    PYTHONPATH=python python3 bench/torch_overhead_breakdown.py
"""

import ctypes

import torch
import torch.nn.functional as F

import fa
from bench_torch_ops import host_us_per_call  # the same measurement as the op bench
from fa import _library, ops


def report(name, fn, calls=200):
    issue, wall = host_us_per_call(fn, calls=calls, rounds=7)
    print("%-30s %8.2f %8.2f" % (name, issue, wall))


def main():
    device = torch.device("cuda")
    q, k, v = (torch.randn(1, 1, 16, 64, device=device, dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(1, 1, 16, device=device, dtype=torch.float32)
    fa.attention(q, k, v, causal=True)  # opens the library, makes the plan
    library = _library.library(0)
    key = ops._attention_key(q, k, None, None, None, 1, -1, -1, 0.0, 0.0)
    plan = library.attention_plan(key)
    tensors = ops._Tensors(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                           lse.data_ptr(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    stream = torch.cuda.current_stream().cuda_stream
    api = library.api
    byref = ctypes.byref(tensors)
    # The forward's workspace (a dynamically scheduled kernel's tile counter),
    # made once like the buffers; 0 bytes for most kernels.
    workspace_bytes = plan.forward_workspace
    workspace = torch.empty(max(workspace_bytes, 256), device=device, dtype=torch.uint8)
    workspace_ptr = workspace.data_ptr() if workspace_bytes else 0
    rows = [
        ("C launch (ctypes)", lambda: api.fa_attention_forward(
            plan.handle, byref, workspace_ptr, workspace_bytes, stream)),
        ("launch function", lambda: ops._attention_forward(q, k, v, None, None, None, 1, -1, -1,
                                                           0.0, 0.0)),
        ("torch.ops.fa.attention", lambda: torch.ops.fa.attention.default(
            q, k, v, None, None, None, 1, -1, -1, 0.0, 0.0)),
        ("fa.attention", lambda: fa.attention(q, k, v, causal=True)),
        ("SDPA", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ]
    print("host time per call, microseconds (B=1 H=1 N=16 D=64 bf16 causal)")
    print("%-30s %8s %8s" % ("", "issue", "wall"))
    with torch.no_grad():
        for name, fn in rows:
            report(name, fn)
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    report("fa.attention requires_grad", lambda: fa.attention(qg, kg, vg, causal=True))
    report("torch.ops.fa requires_grad", lambda: torch.ops.fa.attention.default(
        qg, kg, vg, None, None, None, 1, -1, -1, 0.0, 0.0))
    report("SDPA requires_grad", lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=True))
    dout = torch.randn_like(q)
    report("fa.attention fwd+bwd",
           lambda: fa.attention(qg, kg, vg, causal=True).backward(dout), calls=100)
    report("SDPA fwd+bwd",
           lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=True).backward(dout),
           calls=100)
    x = torch.randn(16, 768, device=device, dtype=torch.bfloat16)
    w = torch.ones(768, device=device, dtype=torch.bfloat16)
    b = torch.zeros(768, device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        report("fa.layer_norm", lambda: fa.layer_norm(x, (768,), w, b))
        report("F.layer_norm", lambda: F.layer_norm(x, (768,), w, b))


def profile():
    """cProfile of 2000 no_grad fa.attention calls: the Python frames that cost
    (profiling slows every frame; read the ranking, not the times)."""
    import cProfile
    import pstats

    q, k, v = (torch.randn(1, 1, 16, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    fa.attention(q, k, v, causal=True)
    with torch.no_grad():
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(2000):
            fa.attention(q, k, v, causal=True)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    import sys

    profile() if "--profile" in sys.argv else main()
