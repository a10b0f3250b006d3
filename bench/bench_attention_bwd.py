#!/usr/bin/env python3
"""Attention backward speed: fa-run's backward kernels next to the backward of
PyTorch SDPA's FLASH_ATTENTION (FlashAttention-2) and CUDNN_ATTENTION
backends, measured in the same run on the same shapes.

bf16, batch * seq = 16384 tokens, heads = 2048 / head_dim, head_dim in
--dims (default {64, 128}), seq in {1024, ..., 16384}, causal and not. TFLOP/s count
2.5 * 4*B*H*N^2*D FLOPs (the backward's five matrix products to the
forward's two), half when causal. Ours: `fa-run attention --grad --bench`,
whose backward is its delta, dK/dV and dQ kernels; the table and the JSON
(`ours_kernels`) also give each kernel's median time alone, in ms, as fa-run
reports it. PyTorch's backward is
torch.autograd.grad of SDPA's output with respect to q, k and v for a given
dout (the forward run once under the backend, its graph retained), alone.
Every number is the median of CUDA-event timings after warm-up, with inputs
rotated across buffer sets spanning at least 2x the L2 cache; PyTorch's runs
are queued behind a GPU spin so that host overhead (autograd's) does not
count.

    python3 bench/bench_attention_bwd.py --fa-run build/bin/fa-run --out bench/results
"""

import argparse
import json
import sys
import warnings

import torch

import common

DTYPE = torch.bfloat16
# q, k, v, out, dout, dq, dk and dv, 2 bytes each.
TENSORS_PER_SET = 8
ELEMENT_BYTES = 2


def torch_backward_ms(backend, batch, heads, seq, dim, causal, warmup, runs) -> float:
    set_bytes = TENSORS_PER_SET * batch * heads * seq * dim * ELEMENT_BYTES
    graphs = []
    for _ in range(common.buffer_set_count(set_bytes)):
        inputs = [torch.randn(batch, heads, seq, dim, device="cuda", dtype=DTYPE,
                              requires_grad=True) for _ in range(3)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = common.sdpa_with_backend(backend, *inputs, causal)
        graphs.append((inputs, out, torch.randn_like(out)))
    calls = [lambda g=g: torch.autograd.grad(g[1], g[0], g[2], retain_graph=True)
             for g in graphs]
    return common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)


def torch_backward_tflops(backend, batch, heads, seq, dim, causal, flops, warmup, runs):
    """(TFLOP/s, None), or (None, why) when the backend cannot run the shape."""
    try:
        ms = torch_backward_ms(backend, batch, heads, seq, dim, causal, warmup, runs)
    except RuntimeError as error:
        return None, str(error).splitlines()[0]
    return flops / (ms * 1e-3) / 1e12, None


# The kernels of our backward, as fa-run's bench_backward.kernels names them.
KERNELS = ("delta", "dkdv", "dq")


def ours_bench(args, batch, heads, seq, dim, causal) -> dict:
    """fa-run's bench_backward: the whole backward (tflops, median_ms) and
    each kernel alone (kernels: {stage: {name, median_ms}}), with the
    backward fa-run chose (backward: kernel, kernel_source: default or
    tuning_cache)."""
    result = common.run_fa_run(args, [
        "--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
        "--dim", str(dim), "--dtype", "bf16", *(["--causal"] if causal else []),
        "--grad", "--bench", "--json", "--warmup", str(args.warmup), "--runs", str(args.runs)])
    report = json.loads(result.stdout)
    return {**report["bench_backward"], "backward": report["backward"]["kernel"],
            "backward_source": report["backward"]["kernel_source"]}


def kernel_ms_column(stage):
    """A table column: the median ms of our `stage` kernel alone."""
    def cell(row):
        kernel = row.get("ours_kernels", {}).get(stage)
        return f"{kernel['median_ms']:.3f}" if kernel else "n/a"
    return f"{stage} ms", cell


def backward_column(row) -> str:
    """A table cell: the backward fa-run ran, and why."""
    name = row.get("ours_backward")
    return f"{name} ({row['ours_backward_source']})" if name else "n/a"


def table(rows) -> str:
    return common.attention_table(rows, [kernel_ms_column(stage) for stage in KERNELS]
                                  + [("backward", backward_column)])


def measure(args, batch, heads, seq, dim, causal) -> dict:
    flops = common.attention_backward_flops(batch, heads, seq, seq, dim, causal)
    row = {"batch": batch, "heads": heads, "seq": seq, "head_dim": dim,
           "causal": causal, "flops": flops}
    try:
        bench = ours_bench(args, batch, heads, seq, dim, causal)
        row["ours"], row["ours_ms"] = bench["tflops"], bench["median_ms"]
        row["ours_kernels"] = bench["kernels"]
        row["ours_backward"] = bench["backward"]
        row["ours_backward_source"] = bench["backward_source"]
    except RuntimeError as error:
        row["ours"], row["ours_error"] = None, str(error)
    for name, backend in common.SDPA_BACKENDS.items():
        row[name], error = torch_backward_tflops(backend, batch, heads, seq, dim, causal,
                                                 flops, args.warmup, args.runs)
        if error:
            row[f"{name}_error"] = error
        torch.cuda.empty_cache()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_common_arguments(parser, default_out="bench/results")
    parser.add_argument("--seqs", type=int, nargs="+",
                        default=[1024, 2048, 4096, 8192, 16384],
                        help="sequence lengths (each must divide 16384)")
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 128],
                        help="head dims (heads = 2048 / head_dim)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs")
    parser.add_argument("--runs", type=int, default=30, help="timed runs (median)")
    args = parser.parse_args()

    environment = common.environment()
    rows = []
    for config in common.attention_configurations(args.seqs, args.dims):
        rows.append(measure(args, *config))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = (common.environment_line(environment) + "\n\n"
            f"Attention backward, bf16, {common.TOKENS} tokens, hidden {common.HIDDEN}; "
            f"TFLOP/s of 2.5 * 4*B*H*N^2*D, half if causal; our kernels' "
            f"median ms, each timed alone\n\n"
            + table(rows))
    print("\n" + text)
    results = {**environment, "dtype": "bf16",
               "flops": "2.5 * 4 * batch * heads * seq^2 * head_dim, half if causal",
               "results": rows}
    common.write_results(args.out, "bench_attention_bwd", results, text)
    return common.report_fa_run_errors(rows)


if __name__ == "__main__":
    sys.exit(main())
