#!/usr/bin/env python3
"""Generated vs hand-written kernels vs PyTorch, in one run on one GPU.

For every benchmark shape, in the same process and on the same GPU:
  - attention forward and backward (bf16, 16384 tokens, hidden 2048, head_dim
    64 and 128, causal and not): our generated kernels (`fa-run`), the
    hand-written CUDA kernels (`fa-handwritten`, bench/handwritten/), PyTorch
    SDPA's FLASH_ATTENTION (FlashAttention-2) and CUDNN_ATTENTION backends;
    TFLOP/s of 4*B*H*N^2*D forward, 2.5 times that backward, half if causal;
  - LayerNorm forward and backward (bf16, M = 32768 rows): generated,
    hand-written and `F.layer_norm`; GB/s of 2*M*N*2 bytes forward and
    3*M*N*2 backward.
Every number is a median of CUDA-event timings after warm-up, with inputs
rotated over buffer sets spanning 2x L2 (fa-run and fa-handwritten do the
same), as the per-job scripts (bench_attention.py, bench_attention_bwd.py,
bench_layernorm.py) measure them: this script runs their measurements and
adds the hand-written column.

Writes to --out: compare_kernels.json (device, driver, versions, every row),
compare_kernels.md (the tables) and PNG plots: attention_forward.png and
attention_backward.png (TFLOP/s against sequence length, one panel per head
dim and causal mode) and layernorm.png (GB/s against row length).

    python3 bench/compare_kernels.py --fa-run build/bin/fa-run \\
        --fa-handwritten build/bin/fa-handwritten --out bench/results/compare
    python3 bench/compare_kernels.py --plot-only bench/results/compare/compare_kernels.json
"""

import argparse
import copy
import json
import sys
from pathlib import Path

# Series of each plot: (row key, legend label, colour); fixed colours keep
# an implementation's colour when another series is missing.
ATTENTION_SERIES = (("ours", "fa (generated)", "tab:blue"),
                    ("handwritten", "hand-written CUDA", "tab:purple"),
                    ("flash", "SDPA flash (FA2)", "tab:orange"),
                    ("cudnn", "SDPA cuDNN", "tab:green"))
LAYERNORM_SERIES = (("ours", "fa (generated)", "tab:blue"),
                    ("handwritten", "hand-written CUDA", "tab:purple"),
                    ("torch", "F.layer_norm", "tab:red"))


def handwritten_args(args):
    """args with fa-handwritten in fa-run's place: it takes fa-run's options
    and prints the same JSON keys, and needs no kernel library."""
    hw = copy.copy(args)
    hw.fa_run, hw.kernels = args.fa_handwritten, None
    return hw


def measured(function, *arguments):
    """(value, None), or (None, why) when the tool failed."""
    try:
        return function(*arguments), None
    except (RuntimeError, KeyError, ValueError) as error:
        return None, str(error)[-400:]


def attention_rows(args, backward: bool):
    import common
    import bench_attention
    import bench_attention_bwd

    hw = handwritten_args(args)
    rows = []
    for config in common.attention_configurations(args.seqs, args.dims):
        if backward:
            row = bench_attention_bwd.measure(args, *config)
            row["handwritten"], error = measured(
                lambda: bench_attention_bwd.ours_bench(hw, *config)["tflops"])
        else:
            row = bench_attention.measure(args, *config)
            row["handwritten"], error = measured(bench_attention.ours_tflops, hw, *config)
        if error:
            row["handwritten_error"] = error
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "ours_kernels"}), flush=True)
    return rows


def layernorm_rows(args):
    import bench_layernorm

    hw = handwritten_args(args)
    rows = []
    for cols in args.cols:
        row = bench_layernorm.measure(args, cols)
        gbps, error = measured(bench_layernorm.ours_gbps, hw, bench_layernorm.ROWS, cols)
        row["handwritten_fwd"], row["handwritten_bwd"] = gbps if gbps else (None, None)
        if error:
            row["handwritten_error"] = error
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def cell(value):
    return f"{value:.1f}" if value is not None else "n/a"


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}" if ours is not None and theirs else "n/a"


def attention_table(rows) -> str:
    lines = ["| D | N | causal | fa (generated) | hand-written | SDPA flash (FA2) | SDPA cuDNN "
             "| fa / hand-written | fa / FA2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['head_dim']} | {r['seq']} | {'yes' if r['causal'] else 'no'} | "
                     f"{cell(r['ours'])} | {cell(r['handwritten'])} | {cell(r['flash'])} | "
                     f"{cell(r['cudnn'])} | {ratio(r['ours'], r['handwritten'])} | "
                     f"{ratio(r['ours'], r['flash'])} |")
    return "\n".join(lines)


def layernorm_table(rows) -> str:
    lines = ["| N | pass | fa (generated) | hand-written | F.layer_norm | fa / hand-written "
             "| fa / torch |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for direction, suffix in (("forward", "fwd"), ("backward", "bwd")):
            ours, hw, torch_ = (r[f"ours_{suffix}"], r[f"handwritten_{suffix}"],
                                r[f"torch_{suffix}"])
            lines.append(f"| {r['cols']} | {direction} | {cell(ours)} | {cell(hw)} | "
                         f"{cell(torch_)} | {ratio(ours, hw)} | {ratio(ours, torch_)} |")
    return "\n".join(lines)


def report(results) -> str:
    # Formatted here, not by common.environment_line: --plot-only runs where
    # there is no torch, which common imports.
    env = results["environment"]
    parts = [f"Device: {env['device']}, driver {env['driver']}, torch {env['torch']} "
             f"(CUDA {env['cuda']})"]
    if "attention_forward" in results:
        parts += ["Attention forward, bf16, 16384 tokens, hidden 2048; TFLOP/s of "
                  "4*B*H*N^2*D, half if causal",
                  attention_table(results["attention_forward"])]
    if "attention_backward" in results:
        parts += ["Attention backward; TFLOP/s of 2.5 * 4*B*H*N^2*D, half if causal",
                  attention_table(results["attention_backward"])]
    if "layernorm" in results:
        parts += ["LayerNorm, bf16, M = 32768 rows; GB/s of 2*M*N*2 bytes forward, "
                  "3*M*N*2 backward",
                  layernorm_table(results["layernorm"])]
    return "\n\n".join(parts)


def plot_series(axis, series, points_of, xlabel, ylabel, title):
    """One panel: a line per series that has points, log2 x axis."""
    for key, label, colour in series:
        points = points_of(key)
        if points:
            axis.plot(*zip(*points), marker="o", label=label, color=colour)
    axis.set_xscale("log", base=2)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_ylim(bottom=0)
    axis.set_title(title)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)


def plot_attention(rows, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = sorted({r["head_dim"] for r in rows})
    figure, axes = plt.subplots(len(dims), 2, figsize=(11, 4 * len(dims)), squeeze=False)
    for i, dim in enumerate(dims):
        for j, causal in enumerate((False, True)):
            panel = sorted((r for r in rows if r["head_dim"] == dim and r["causal"] == causal),
                           key=lambda r: r["seq"])
            plot_series(axes[i][j], ATTENTION_SERIES,
                        lambda key, panel=panel: [(r["seq"], r[key]) for r in panel
                                                  if r.get(key) is not None],
                        "sequence length", "TFLOP/s",
                        f"head_dim {dim}, {'causal' if causal else 'not causal'}")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_layernorm(rows, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    ordered = sorted(rows, key=lambda r: r["cols"])
    for axis, (direction, suffix) in zip(axes, (("forward", "fwd"), ("backward", "bwd"))):
        plot_series(axis, LAYERNORM_SERIES,
                    lambda key, suffix=suffix: [(r["cols"], r[f"{key}_{suffix}"])
                                                for r in ordered
                                                if r.get(f"{key}_{suffix}") is not None],
                    "row length N", "GB/s", f"LayerNorm {direction}")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_plots(results, out: Path) -> list[Path]:
    device = results["environment"]["device"]
    written = []
    for key, name in (("attention_forward", "forward"), ("attention_backward", "backward")):
        if key in results:
            path = out / f"attention_{name}.png"
            plot_attention(results[key], f"Attention {name}, bf16, 16k tokens ({device})", path)
            written.append(path)
    if "layernorm" in results:
        path = out / "layernorm.png"
        plot_layernorm(results["layernorm"], f"LayerNorm, bf16, 32768 rows ({device})", path)
        written.append(path)
    return written


def failures(results) -> list[str]:
    found = []
    for part in ("attention_forward", "attention_backward", "layernorm"):
        for row in results.get(part, []):
            for key in ("ours_error", "handwritten_error"):
                if key in row:
                    found.append(f"{part}: {row[key]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fa-run", default="build/bin/fa-run")
    parser.add_argument("--fa-handwritten", default="build/bin/fa-handwritten")
    parser.add_argument("--kernels", default=None,
                        help="kernel library for fa-run (default: fa-run's own)")
    parser.add_argument("--out", default="bench/results/compare")
    parser.add_argument("--what", nargs="+",
                        choices=["attention_forward", "attention_backward", "layernorm"],
                        default=["attention_forward", "attention_backward", "layernorm"])
    parser.add_argument("--seqs", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384],
                        help="attention sequence lengths (each must divide 16384)")
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 128],
                        help="head dims (heads = 2048 / head_dim)")
    parser.add_argument("--cols", type=int, nargs="+", default=[1024, 2048, 4096, 8192],
                        help="LayerNorm row lengths")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs")
    parser.add_argument("--runs", type=int, default=30, help="timed runs (median)")
    parser.add_argument("--plot-only", metavar="JSON",
                        help="redraw the tables and plots of an earlier run's JSON")
    args = parser.parse_args()

    if args.plot_only:
        results = json.loads(Path(args.plot_only).read_text())
        out = Path(args.plot_only).parent
    else:
        import common

        results = {"environment": common.environment()}
        if "attention_forward" in args.what:
            results["attention_forward"] = attention_rows(args, backward=False)
        if "attention_backward" in args.what:
            results["attention_backward"] = attention_rows(args, backward=True)
        if "layernorm" in args.what:
            results["layernorm"] = layernorm_rows(args)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare_kernels.json").write_text(json.dumps(results, indent=2) + "\n")
    text = report(results)
    (out / "compare_kernels.md").write_text(text + "\n")
    print(text)
    for path in write_plots(results, out):
        print(f"wrote {path}")
    problems = failures(results)
    for problem in problems:
        print(f"failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
