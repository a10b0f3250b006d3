#!/usr/bin/env python3
"""Forward attention speed: fa-run's kernels next to PyTorch SDPA's
FLASH_ATTENTION (FlashAttention-2) and CUDNN_ATTENTION backends, measured in
the same run on the same shapes.

bf16, batch * seq = 16384 tokens, heads = 2048 / head_dim, head_dim in
--dims (default {64, 128}), seq in {1024, ..., 16384}, causal and not. TFLOP/s count
4*B*H*N^2*D FLOPs, half when causal. Every number is the median of CUDA-event
timings after warm-up, with inputs rotated across buffer sets spanning at
least 2x the L2 cache.

    python3 bench/bench_attention.py --fa-run build/bin/fa-run --out bench/results

--kernels-also NAME... times named library kernels besides the default on
every row they fit, each in a column of its own: a name may hold {dim}
(attention_fwd_bf16_d{dim}_m128n128w8qs2gop), and a kernel fits a row when
its name has the row's _d<dim>_ and, for causal rows only, _causal.
"""

import argparse
import json
import sys

import torch

import common


def buffer_sets(batch, heads, seq, dim):
    """Enough (q, k, v) sets to span 2x L2."""
    count = common.buffer_set_count(3 * batch * heads * seq * dim * 2)
    return [[torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16)
             for _ in range(3)] for _ in range(count)]


def torch_tflops(backend, sets, causal, flops, warmup, runs):
    calls = [lambda s=s: common.sdpa_with_backend(backend, *s, causal) for s in sets]
    try:
        ms = common.median_ms(calls, warmup, runs)
    except RuntimeError as error:
        return None, str(error).splitlines()[0]
    return flops / (ms * 1e-3) / 1e12, None


def ours_tflops(args, batch, heads, seq, dim, causal, kernel=None):
    result = common.run_fa_run(args, [
        "--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
        "--dim", str(dim), "--dtype", "bf16", *(["--causal"] if causal else []),
        *(["--kernel", kernel] if kernel else []),
        "--bench", "--json", "--warmup", str(args.warmup), "--runs", str(args.runs)])
    return json.loads(result.stdout)["bench"]["tflops"]


def kernels_for(args, dim, causal):
    """(template, name) of the --kernels-also kernels that fit a row."""
    for template in args.kernels_also:
        name = template.format(dim=dim)
        if f"_d{dim}_" in name and ("_causal" in name) == causal:
            yield template, name


def measure(args, batch, heads, seq, dim, causal) -> dict:
    flops = common.attention_flops(batch, heads, seq, seq, dim, causal)
    row = {"batch": batch, "heads": heads, "seq": seq, "head_dim": dim,
           "causal": causal, "flops": flops}
    try:
        row["ours"] = ours_tflops(args, batch, heads, seq, dim, causal)
    except RuntimeError as error:
        row["ours"], row["ours_error"] = None, str(error)
    for template, kernel in kernels_for(args, dim, causal):
        try:
            row[template] = ours_tflops(args, batch, heads, seq, dim, causal, kernel)
        except RuntimeError as error:
            row[template], row[f"{template}_error"] = None, str(error)
    sets = buffer_sets(batch, heads, seq, dim)
    for name, backend in common.SDPA_BACKENDS.items():
        row[name], error = torch_tflops(backend, sets, causal, flops, args.warmup, args.runs)
        if error:
            row[f"{name}_error"] = error
    del sets
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
    parser.add_argument("--kernels-also", nargs="*", default=[], metavar="NAME",
                        help="library kernels to time besides the default ({dim} "
                             "stands for the head dim); see the docstring")
    args = parser.parse_args()

    def cell(template):
        def value(row):
            tflops = row.get(template)
            return f"{tflops:.1f}" if tflops is not None else "-"
        return value

    def versus_cudnn(template):
        def value(row):
            tflops, cudnn = row.get(template), row.get("cudnn")
            return f"{tflops / cudnn:.2f}" if tflops and cudnn else "-"
        return value

    extra_columns = [column for template in args.kernels_also
                     for column in ((template, cell(template)),
                                    ("/ cuDNN", versus_cudnn(template)))]
    rows = []
    for config in common.attention_configurations(args.seqs, args.dims):
        rows.append(measure(args, *config))
        print(common.attention_table(rows[-1:], extra_columns).splitlines()[-1], flush=True)
    text = (f"{common.environment_line(common.environment())}\n\n"
            + common.attention_table(rows, extra_columns))
    print("\n" + text)
    common.write_results(args.out, "bench_attention", rows, text)
    failed = common.report_fa_run_errors(rows)
    for row in rows:
        for template in args.kernels_also:
            if f"{template}_error" in row:
                print(f"fa-run failed: {row[f'{template}_error']}", file=sys.stderr)
                failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
