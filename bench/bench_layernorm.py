#!/usr/bin/env python3
"""LayerNorm speed: fa-run's forward and backward kernels next to PyTorch's
F.layer_norm and its autograd backward, measured in the same run on the same
shapes.

bf16, M = 32768 rows, N in {1024, 2048, 4096, 8192}, eps 1e-5. GB/s count the
bytes a pass must move, the same for both: forward 2*M*N*2 (x read, y
written), backward 3*M*N*2 (x and dy read, dx written); weight, bias, the row
statistics and the parameter gradients are small and left out. Ours: `fa-run
layernorm --grad --bench` (the backward is its dx kernel and its params
kernel). PyTorch's backward is torch.autograd.grad of y with respect to x,
weight and bias for a given dy (graph retained), alone. Every number is the
median of CUDA-event timings after warm-up, with inputs rotated across buffer
sets spanning at least 2x the L2 cache; PyTorch's runs are queued behind a
GPU spin so that host overhead (autograd's) does not count.

    python3 bench/bench_layernorm.py --fa-run build/bin/fa-run --out bench/results
"""

import argparse
import json
import sys

import torch
import torch.nn.functional as F

import common

ROWS = 32768
EPS = 1e-5
DTYPE = torch.bfloat16
ELEMENT_BYTES = 2


def forward_bytes(rows, cols) -> float:
    return 2.0 * rows * cols * ELEMENT_BYTES


def backward_bytes(rows, cols) -> float:
    return 3.0 * rows * cols * ELEMENT_BYTES


def gbps(bytes_moved, ms) -> float:
    return bytes_moved / (ms * 1e-3) / 1e9


def torch_forward_gbps(rows, cols, warmup, runs) -> float:
    sets = [(torch.randn(rows, cols, device="cuda", dtype=DTYPE),
             torch.randn(cols, device="cuda", dtype=DTYPE),
             torch.randn(cols, device="cuda", dtype=DTYPE))
            for _ in range(common.buffer_set_count(forward_bytes(rows, cols)))]
    calls = [lambda s=s: F.layer_norm(s[0], (cols,), s[1], s[2], EPS) for s in sets]
    with torch.no_grad():
        ms = common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)
    return gbps(forward_bytes(rows, cols), ms)


def torch_backward_gbps(rows, cols, warmup, runs) -> float:
    graphs = []
    for _ in range(common.buffer_set_count(backward_bytes(rows, cols))):
        x = torch.randn(rows, cols, device="cuda", dtype=DTYPE, requires_grad=True)
        weight = torch.randn(cols, device="cuda", dtype=DTYPE, requires_grad=True)
        bias = torch.randn(cols, device="cuda", dtype=DTYPE, requires_grad=True)
        y = F.layer_norm(x, (cols,), weight, bias, EPS)
        graphs.append(((x, weight, bias), y, torch.randn_like(y)))
    calls = [lambda g=g: torch.autograd.grad(g[1], g[0], g[2], retain_graph=True)
             for g in graphs]
    ms = common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)
    return gbps(backward_bytes(rows, cols), ms)


def ours_gbps(args, rows, cols):
    """(forward GB/s, backward GB/s) from one `fa-run layernorm --grad` run."""
    result = common.run_fa_run(args, [
        "--rows", str(rows), "--cols", str(cols), "--dtype", "bf16",
        "--eps", str(EPS), "--grad", "--bench", "--json",
        "--warmup", str(args.warmup), "--runs", str(args.runs)], "layernorm")
    bench = json.loads(result.stdout)["bench"]
    return bench["forward"]["gbps"], bench["backward"]["gbps"]


def measure(args, cols) -> dict:
    row = {"rows": ROWS, "cols": cols, "forward_bytes": forward_bytes(ROWS, cols),
           "backward_bytes": backward_bytes(ROWS, cols)}
    try:
        row["ours_fwd"], row["ours_bwd"] = ours_gbps(args, ROWS, cols)
    except RuntimeError as error:
        row["ours_fwd"] = row["ours_bwd"] = None
        row["ours_error"] = str(error)
    row["torch_fwd"] = torch_forward_gbps(ROWS, cols, args.warmup, args.runs)
    row["torch_bwd"] = torch_backward_gbps(ROWS, cols, args.warmup, args.runs)
    torch.cuda.empty_cache()
    return row


def table(rows) -> str:
    def cell(value):
        return f"{value:.1f}" if value is not None else "n/a"

    def ratio(ours, theirs):
        return f"{ours / theirs:.2f}" if ours is not None and theirs else "n/a"

    lines = ["| N | ours fwd GB/s | torch fwd GB/s | fwd ours / torch | "
             "ours bwd GB/s | torch bwd GB/s | bwd ours / torch |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['cols']} | {cell(r['ours_fwd'])} | {cell(r['torch_fwd'])} | "
                     f"{ratio(r['ours_fwd'], r['torch_fwd'])} | {cell(r['ours_bwd'])} | "
                     f"{cell(r['torch_bwd'])} | {ratio(r['ours_bwd'], r['torch_bwd'])} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_common_arguments(parser, default_out="bench/results")
    parser.add_argument("--cols", type=int, nargs="+", default=[1024, 2048, 4096, 8192],
                        help="row lengths N (M is 32768 rows)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs")
    parser.add_argument("--runs", type=int, default=100, help="timed runs (median)")
    args = parser.parse_args()

    environment = common.environment()
    rows = []
    for cols in args.cols:
        rows.append(measure(args, cols))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = (common.environment_line(environment) + "\n\n"
            f"bf16, M = {ROWS} rows, eps {EPS}; GB/s of 2*M*N*2 bytes forward "
            f"(x read, y written) and 3*M*N*2 backward (x and dy read, dx written)\n\n"
            + table(rows))
    print("\n" + text)
    results = {**environment, "dtype": "bf16", "eps": EPS,
               "bytes": {"forward": "2 * rows * cols * 2 (x read, y written)",
                         "backward": "3 * rows * cols * 2 (x and dy read, dx written)"},
               "results": rows}
    common.write_results(args.out, "bench_layernorm", results, text)
    return common.report_fa_run_errors(rows)


if __name__ == "__main__":
    sys.exit(main())
