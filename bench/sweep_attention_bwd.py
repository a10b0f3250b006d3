#!/usr/bin/env python3
"""Attention backward tile sweep: which tiles make the dK/dV and dQ kernels
fastest, measured kernel by kernel.

Two steps, because the GPU machines have no MLIR:

  # here: the candidates as fa.attention_grad functions, compiled to a
  # library of their own (plus one forward per group, which --grad needs)
  python3 bench/sweep_attention_bwd.py emit sweep.mlir
  build/bin/fa-opt sweep.mlir --fa-to-ptx="export-dir=sweep-kernels" -o /dev/null

  # on the GPU: every backward kernel of that library on the benchmark
  # shapes (bf16, 16384 tokens, hidden 2048), one fa-run per kernel and shape
  python3 bench/sweep_attention_bwd.py run --fa-run build/bin/fa-run \\
      --kernels sweep-kernels --out bench/results

Each row gives the median time of the delta, dK/dV and dQ kernels alone (as
`fa-run attention --grad --bench` reports them) and the whole backward's
TFLOP/s (2.5 * 4*B*H*N^2*D, half if causal). The dK/dV and dQ kernels of one
function are independent choices: read the best of each column.
"""

import argparse
import json
import re
import sys
from pathlib import Path


# (head_dim, "block_m block_n num_warps num_stages [dq_block_m dq_block_n
# dq_num_warps] [wgmma]"), as kernels/CMakeLists.txt takes them. Each pairs
# one dK/dV candidate with one dQ candidate; a trailing `wgmma` runs every
# product of both kernels as Hopper warpgroup MMAs (name suffix g). The first
# of each head_dim is the mma.sync library default before wgmma
# (bench/results/2026-11-23-h100-attention-bwd-tuned), for comparison in the
# same run; kernels/CMakeLists.txt now takes the fastest dK/dV and dQ tiles
# of bench/results/2026-11-25-h100-attention-bwd-wgmma.
CANDIDATES = [
    (64, "128 64 8 2 128 32 4"),
    (64, "64 64 4 2 64 64 4 wgmma"),
    (64, "128 64 8 2 128 64 8 wgmma"),
    (64, "64 128 4 2 64 128 4 wgmma"),
    (64, "128 128 8 2 128 128 8 wgmma"),
    (64, "128 32 8 2 64 32 4 wgmma"),
    (128, "64 16 4 2 64 32 4"),
    (128, "64 64 4 2 64 64 4 wgmma"),
    (128, "128 64 8 2 128 64 8 wgmma"),
    (128, "64 32 4 2 64 128 4 wgmma"),
    (128, "128 32 8 2 128 128 8 wgmma"),
    (128, "64 64 4 1 128 64 8 wgmma"),
]
SEQS = (1024, 4096)
# --check: every kernel's gradients against fp64 (fa-run --grad --check, NaN-
# poisoned outputs) on grouped-query shapes whose lengths are not multiples
# of any tile, before it is timed.
CHECK_SEQS = (1, 17, 1000)


def check(args, kernel) -> str:
    """'pass', or why the kernel's gradients failed the fp64 comparison."""
    import common  # Needs torch, which `emit` does not (see run).
    for seq in CHECK_SEQS:
        fa_args = ["--batch", "2", "--heads", "4", "--kv-heads", "2", "--seq", str(seq),
                   "--dim", str(kernel["head_dim"]), "--dtype", "bf16", "--grad", "--check",
                   "--backward-kernel", kernel["name"]]
        if kernel["causal"]:
            fa_args.append("--causal")
        try:
            common.run_fa_run(args, fa_args)
        except RuntimeError as error:
            return f"seq {seq}: {str(error)[-200:]}"
    return "pass"


def tile_attribute(config: str) -> tuple[str, str]:
    """The #fa.tile<...> and the name suffix of one candidate."""
    words = config.split()
    wgmma = words[-1] == "wgmma"
    fields = [int(word) for word in (words[:-1] if wgmma else words)]
    m, n, w, s = fields[:4]
    attr = f"block_m = {m}, block_n = {n}, num_warps = {w}, num_stages = {s}"
    suffix = f"_m{m}n{n}w{w}s{s}"
    if len(fields) > 4:
        qm, qn, qw = fields[4:7]
        attr += f", dq_block_m = {qm}, dq_block_n = {qn}, dq_num_warps = {qw}"
        suffix += f"_q{qm}x{qn}w{qw}"
    if wgmma:
        attr += ", wgmma = true"
        suffix += "g"
    return f"#fa.tile<{attr}>", suffix


def emit(path: str) -> None:
    tensor = "memref<?x?x?x{dim}xbf16>"
    stats = "memref<?x?x?xf32>"
    functions = []
    for dim in sorted({dim for dim, _ in CANDIDATES}):
        t = tensor.format(dim=dim)
        for causal in ("", "causal"):
            name = f"attention_fwd_bf16_d{dim}" + ("_causal" if causal else "")
            functions.append(
                f"func.func @{name}(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %lse: {stats}) {{\n"
                f"  fa.attention ins(%q, %k, %v : {t}, {t}, {t}) outs(%o : {t}) "
                f"lse(%lse : {stats}) {causal}\n  return\n}}\n")
    for dim, config in CANDIDATES:
        t = tensor.format(dim=dim)
        attr, suffix = tile_attribute(config)
        for causal in ("", "causal"):
            name = f"attention_bwd_bf16_d{dim}" + ("_causal" if causal else "") + suffix
            functions.append(
                f"func.func @{name}(%q: {t}, %k: {t}, %v: {t}, %out: {t}, %dout: {t}, "
                f"%lse: {stats}, %dq: {t}, %dk: {t}, %dv: {t}) attributes "
                f"{{fa.tile = {attr}}} {{\n"
                f"  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : {t}, {t}, {t}, "
                f"{t}, {t}, {stats}) outs(%dq, %dk, %dv : {t}, {t}, {t}) {causal}\n"
                f"  return\n}}\n")
    Path(path).write_text("".join(functions))
    print(f"wrote {len(functions)} functions to {path}")


def backward_kernels(kernel_dir: str):
    manifest = json.loads((Path(kernel_dir) / "manifest.json").read_text())
    return [k for k in manifest["kernels"] if k["op"] == "attention_bwd"]


def run(args) -> int:
    # The benchmark helpers import torch, which `emit` (run where the
    # compiler is) neither needs nor finds.
    import common

    rows, failures = [], 0
    for kernel in backward_kernels(args.kernels):
        if not re.search(args.match, kernel["name"]):
            continue
        dim, causal = kernel["head_dim"], kernel["causal"]
        checked = check(args, kernel) if args.check else "not run"
        if checked not in ("pass", "not run"):
            failures += 1
        for seq in args.seqs:
            batch, heads = common.TOKENS // seq, common.HIDDEN // dim
            fa_args = ["--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
                       "--dim", str(dim), "--dtype", "bf16", "--grad", "--bench",
                       "--backward-kernel", kernel["name"], "--json"]
            if causal:
                fa_args.append("--causal")
            row = {"kernel": kernel["name"], "head_dim": dim, "causal": causal,
                   "seq": seq, "batch": batch, "heads": heads, "check": checked}
            try:
                report = json.loads(common.run_fa_run(args, fa_args).stdout)
                bench = report["bench_backward"]
                row["tflops"] = bench["tflops"]
                row["kernels_ms"] = {part: bench["kernels"][part]["median_ms"]
                                     for part in ("delta", "dkdv", "dq")}
            except (RuntimeError, KeyError, ValueError) as error:
                row["error"] = str(error)[-300:]
                failures += 1
            rows.append(row)
            print(json.dumps(row), flush=True)
    lines = ["| kernel | N | backward TFLOP/s | delta ms | dK/dV ms | dQ ms | fp64 check |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['seq']} | failed: {r['error'][-120:]} "
                         f"| | | | {r['check'][:120]} |")
            continue
        ms = r["kernels_ms"]
        lines.append(f"| {r['kernel']} | {r['seq']} | {r['tflops']:.1f} | {ms['delta']:.3f} | "
                     f"{ms['dkdv']:.3f} | {ms['dq']:.3f} | {r['check'][:120]} |")
    table = "\n".join(lines)
    print(table)
    common.write_results(args.out, "sweep_attention_bwd", rows, table)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    emit_parser = commands.add_parser("emit", help="write the candidates' MLIR")
    emit_parser.add_argument("path")
    run_parser = commands.add_parser("run", help="time every backward kernel of a library")
    run_parser.add_argument("--fa-run", default="build/bin/fa-run")
    run_parser.add_argument("--kernels", required=True,
                            help="the compiled sweep library")
    run_parser.add_argument("--out", default="bench/results")
    run_parser.add_argument("--match", default="",
                            help="only the kernels whose name matches this regex")
    run_parser.add_argument("--seqs", type=int, nargs="+", default=list(SEQS))
    run_parser.add_argument("--check", action="store_true",
                            help="check each kernel's gradients against fp64 first")
    args = parser.parse_args()
    if args.command == "emit":
        emit(args.path)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
