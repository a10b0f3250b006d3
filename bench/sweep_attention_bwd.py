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
# dq_num_warps]"), as kernels/CMakeLists.txt takes them. Each pairs one dK/dV
# candidate with one dQ candidate; all assemble without spills except where
# noted.
CANDIDATES = [
    (64, "64 64 4 2"),
    (64, "64 64 4 1"),  # synchronous copies: what pipelining gains
    (64, "128 64 8 2 128 64 8"),
    (64, "64 32 4 2 128 128 8"),
    (64, "128 32 8 2 128 32 4"),
    (64, "64 64 4 2 128 64 4"),
    (128, "64 16 4 2 64 32 4"),
    (128, "64 32 4 1 64 32 4"),  # synchronous copies
    (128, "128 16 8 2 128 32 8"),
    (128, "64 16 4 2 128 64 8"),
    (128, "64 32 4 2 64 64 4"),  # dK/dV spills 20 bytes
    (128, "64 16 4 2 64 16 4"),
    # Not yet measured: synchronous copies at the D=64 winner's tiles (64x64
    # with 4 warps was faster without double buffering), and D=128's
    # fastest dQ tiles.
    (64, "128 64 8 1 128 32 4"),
    (128, "64 32 4 1 64 64 4"),
]
SEQS = (1024, 4096)


def tile_attribute(fields: list[int]) -> tuple[str, str]:
    """The fa.tile entries and the name suffix of one candidate."""
    m, n, w, s = fields[:4]
    attr = f"block_m = {m}, block_n = {n}, num_warps = {w}, num_stages = {s}"
    suffix = f"_m{m}n{n}w{w}s{s}"
    if len(fields) > 4:
        qm, qn, qw = fields[4:7]
        attr += f", dq_block_m = {qm}, dq_block_n = {qn}, dq_num_warps = {qw}"
        suffix += f"_q{qm}x{qn}w{qw}"
    return attr, suffix


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
        attr, suffix = tile_attribute([int(f) for f in config.split()])
        for causal in ("", "causal"):
            name = f"attention_bwd_bf16_d{dim}" + ("_causal" if causal else "") + suffix
            functions.append(
                f"func.func @{name}(%q: {t}, %k: {t}, %v: {t}, %out: {t}, %dout: {t}, "
                f"%lse: {stats}, %dq: {t}, %dk: {t}, %dv: {t}) attributes "
                f"{{fa.tile = {{{attr}}}}} {{\n"
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
        for seq in args.seqs:
            batch, heads = common.TOKENS // seq, common.HIDDEN // dim
            fa_args = ["--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
                       "--dim", str(dim), "--dtype", "bf16", "--grad", "--bench",
                       "--backward-kernel", kernel["name"], "--json"]
            if causal:
                fa_args.append("--causal")
            row = {"kernel": kernel["name"], "head_dim": dim, "causal": causal,
                   "seq": seq, "batch": batch, "heads": heads}
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
    lines = ["| kernel | N | backward TFLOP/s | delta ms | dK/dV ms | dQ ms |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['seq']} | failed: {r['error'][-120:]} | | | |")
            continue
        ms = r["kernels_ms"]
        lines.append(f"| {r['kernel']} | {r['seq']} | {r['tflops']:.1f} | {ms['delta']:.3f} | "
                     f"{ms['dkdv']:.3f} | {ms['dq']:.3f} |")
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
    args = parser.parse_args()
    if args.command == "emit":
        emit(args.path)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
