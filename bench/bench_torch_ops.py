#!/usr/bin/env python3
"""What the fa PyTorch ops cost next to the library itself and to PyTorch's
own kernels, measured in the same run.

(a) Attention speed: fa.attention's forward, backward and forward+backward
    TFLOP/s against the same problem through `fa-run attention --grad --bench`
    (the kernels without PyTorch) and against SDPA's FLASH_ATTENTION
    (FlashAttention-2) and CUDNN_ATTENTION backends. bf16, head_dim 128,
    heads 16 (hidden 2048), batch * seq = 16384 tokens, seq in --seqs, causal
    and not. FLOPs: forward 4*B*H*N^2*D, backward 2.5 times that, half when
    causal (fa-run's convention); fa-run's forward+backward time is the sum of
    its two passes' medians. The issue's bar: fa.attention's forward+backward
    TFLOP/s within 3% of fa-run's. Every time is the median of CUDA-event
    timings after warm-up, inputs rotated over buffer sets spanning 2x L2;
    PyTorch calls are queued behind a GPU spin so that host time (autograd's)
    is hidden while the GPU is the bottleneck (bench/common.py's median_ms).
(b) Call overhead: host time per call on a tiny problem (B=1, H=1, N=16,
    D=64, bf16, causal) over 200 back-to-back calls, timed before the one
    synchronize at the end (the host's issue time; the wall time with the
    synchronize is reported too), median of 5 rounds, forward alone (no_grad
    and requiring grad) and forward+backward, for fa.attention and
    F.scaled_dot_product_attention; and
    the cost of the [B, N, H, D]-transposed inputs a GPT passes (q, k, v views
    of one [B, N, 3C] tensor, which fa.attention copies to [B, H, N, D]) next
    to contiguous inputs, at B=4 H=16 N=4096 D=128, for fa.attention and SDPA
    flash (which reads strided inputs without a copy).
(c) LayerNorm: fa.layer_norm against F.layer_norm, forward and backward GB/s
    at [16384, 768] and [16384, 4096] bf16, counting bench_layernorm.py's
    bytes (forward 2*M*N*2, backward 3*M*N*2).

Writes bench_torch_ops.json and .md into --out.

    PYTHONPATH=python python3 bench/bench_torch_ops.py --fa-run build/bin/fa-run \\
        --kernels build/kernels --out bench/results
"""

import argparse
import json
import os
import statistics
import sys
import time
import traceback
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

import common

DEVICE = "cuda"
DTYPE = torch.bfloat16
HEAD_DIM = 128
OVERHEAD_CALLS = 200
OVERHEAD_ROUNDS = 5
LAYER_NORM_SHAPES = ((16384, 768), (16384, 4096))
# (B, H, N, D) of the transposed-vs-contiguous comparison.
LAYOUT_SHAPE = (4, 16, 4096, HEAD_DIM)


def import_fa():
    """The fa package: from PYTHONPATH, else from <repo>/python."""
    try:
        import fa
    except ImportError:
        sys.path.insert(0, str(common.REPO_ROOT / "python"))
        import fa
    return fa


def first_line(error) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if ms else None


# ---------------------------------------------------------------- (a) speed

def attention_sets(batch, heads, seq, dim, requires_grad):
    """Enough (q, k, v, dout) sets to span 2x L2 (counting the gradients)."""
    tensors = 8 if requires_grad else 4
    count = common.buffer_set_count(tensors * batch * heads * seq * dim * 2)
    return [[torch.randn(batch, heads, seq, dim, device=DEVICE, dtype=DTYPE,
                         requires_grad=requires_grad and i < 3) for i in range(4)]
            for _ in range(count)]


def pass_ms(attention, sets, causal, mode, warmup, runs):
    """Median ms of one pass of `attention(q, k, v, causal)`: "fwd" (no_grad),
    "fwd+bwd" (the forward, then torch.autograd.grad for dout), or "bwd"
    (torch.autograd.grad of a forward run once, graph retained)."""
    if mode == "fwd":
        calls = [lambda s=s: attention(s[0], s[1], s[2], causal) for s in sets]
        with torch.no_grad():
            return common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)
    if mode == "fwd+bwd":
        calls = [lambda s=s: torch.autograd.grad(attention(s[0], s[1], s[2], causal),
                                                 s[:3], s[3]) for s in sets]
        return common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)
    graphs = [(s[:3], attention(s[0], s[1], s[2], causal), s[3]) for s in sets]
    calls = [lambda g=g: torch.autograd.grad(g[1], g[0], g[2], retain_graph=True)
             for g in graphs]
    return common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)


def fa_run_bench(args, batch, heads, seq, dim, causal) -> dict:
    """`fa-run attention ... --grad --bench --json`, as bench_attention_bwd.py
    runs it: its forward and backward medians and kernel names."""
    extra = []
    if os.environ.get("FA_TUNING_CACHE"):  # the cache fa.attention reads
        extra = ["--tuning", os.environ["FA_TUNING_CACHE"]]
    result = common.run_fa_run(args, [
        "--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
        "--dim", str(dim), "--dtype", "bf16", *(["--causal"] if causal else []),
        "--grad", "--bench", "--json", "--warmup", str(args.warmup),
        "--runs", str(args.runs), *extra])
    report = json.loads(result.stdout)
    return {"fwd_ms": report["bench"]["median_ms"],
            "bwd_ms": report["bench_backward"]["median_ms"],
            "kernels": [report.get("kernel"), report.get("backward", {}).get("kernel")]}


def measure_attention(args, fa, batch, heads, seq, dim, causal) -> dict:
    fwd_flops = common.attention_flops(batch, heads, seq, seq, dim, causal)
    flops = {"fwd": fwd_flops, "bwd": 2.5 * fwd_flops, "fwd+bwd": 3.5 * fwd_flops}
    row = {"batch": batch, "heads": heads, "seq": seq, "head_dim": dim, "causal": causal,
           "flops_fwd": fwd_flops}
    try:
        bench = fa_run_bench(args, batch, heads, seq, dim, causal)
        total = bench["fwd_ms"] + bench["bwd_ms"]
        row["fa_run"] = {"fwd": tflops(flops["fwd"], bench["fwd_ms"]),
                         "bwd": tflops(flops["bwd"], bench["bwd_ms"]),
                         "fwd+bwd": tflops(flops["fwd+bwd"], total),
                         "ms": {"fwd": bench["fwd_ms"], "bwd": bench["bwd_ms"],
                                "fwd+bwd": total}}
        row["fa_run_kernels"] = bench["kernels"]
    except (RuntimeError, OSError, KeyError, ValueError) as error:
        row["fa_run"], row["fa_run_error"] = None, first_line(error)

    def fa_attention(q, k, v, c):
        return fa.attention(q, k, v, causal=c)

    candidates = {"fa": fa_attention}
    for name, backend in common.SDPA_BACKENDS.items():
        candidates[f"sdpa_{name}"] = (
            lambda q, k, v, c, b=backend: common.sdpa_with_backend(b, q, k, v, c))
    sets = attention_sets(batch, heads, seq, dim, requires_grad=True)
    if fa is not None:
        try:
            row["fa_kernels"] = list(fa.attention_kernels(*sets[0][:3], causal=causal))
        except Exception as error:  # only a report: never fatal
            row["fa_kernels_error"] = first_line(error)
    for name, attention in candidates.items():
        if name == "fa" and fa is None:
            row[name], row[f"{name}_error"] = None, "fa package not importable"
            continue
        row[name] = {"ms": {}}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for mode in ("fwd", "bwd", "fwd+bwd"):
                    ms = pass_ms(attention, sets, causal, mode, args.warmup, args.runs)
                    row[name]["ms"][mode] = ms
                    row[name][mode] = tflops(flops[mode], ms)
        except Exception as error:
            row[name], row[f"{name}_error"] = None, first_line(error)
            if name == "fa":
                traceback.print_exc()
        torch.cuda.empty_cache()
    del sets
    torch.cuda.empty_cache()
    if row.get("fa") and row.get("fa_run"):
        row["fa_over_fa_run"] = {mode: row["fa"][mode] / row["fa_run"][mode]
                                 for mode in ("fwd", "bwd", "fwd+bwd")}
    if row.get("fa_kernels") and row.get("fa_run_kernels"):
        # The names as fa.attention_kernels and fa-run's JSON ("kernel",
        # "backward.kernel") give them: the forward and the dq kernel.
        row["same_kernels"] = [a == b for a, b in zip(row["fa_kernels"],
                                                      row["fa_run_kernels"])]
    return row


def progress_line(row) -> str:
    def value(name):
        number = (row.get(name) or {}).get("fwd+bwd")
        return f"{number:.1f}" if number is not None else "n/a"

    ratio = (row.get("fa_over_fa_run") or {}).get("fwd+bwd")
    return (f"N={row['seq']} B={row['batch']} causal={row['causal']}: fwd+bwd TFLOP/s "
            f"fa.attention {value('fa')}, fa-run {value('fa_run')}, SDPA flash "
            f"{value('sdpa_flash')}, cuDNN {value('sdpa_cudnn')}; fa/fa-run "
            f"{'n/a' if ratio is None else f'{ratio:.3f}'}")


def attention_table(rows) -> str:
    def cell(row, name, mode):
        value = (row.get(name) or {}).get(mode)
        return f"{value:.1f}" if value is not None else "n/a"

    def ratio(row):
        value = (row.get("fa_over_fa_run") or {}).get("fwd+bwd")
        if value is None:
            return "n/a"
        return f"{value:.3f}" + ("" if value >= 0.97 else " (below 0.97)")

    lines = ["| N | B | causal | pass | fa.attention | fa-run | SDPA flash | SDPA cuDNN |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for mode in ("fwd", "bwd", "fwd+bwd"):
            lines.append(f"| {row['seq']} | {row['batch']} | "
                         f"{'yes' if row['causal'] else 'no'} | {mode} | "
                         f"{cell(row, 'fa', mode)} | {cell(row, 'fa_run', mode)} | "
                         f"{cell(row, 'sdpa_flash', mode)} | {cell(row, 'sdpa_cudnn', mode)} |")
    lines += ["", "fa.attention fwd+bwd TFLOP/s / fa-run's (bar: >= 0.97):", "",
              "| N | causal | ratio | same fwd kernel | same bwd kernel |",
              "|---|---|---|---|---|"]

    def same(row, index):
        flags = row.get("same_kernels")
        return "n/a" if flags is None else ("yes" if flags[index] else "NO")

    for row in rows:
        lines.append(f"| {row['seq']} | {'yes' if row['causal'] else 'no'} | {ratio(row)} | "
                     f"{same(row, 0)} | {same(row, 1)} |")
    return "\n".join(lines)


# ------------------------------------------------------------- (b) overhead

def host_us_per_call(call, calls=OVERHEAD_CALLS, rounds=OVERHEAD_ROUNDS) -> tuple:
    """(issue, wall) microseconds per call, medians over `rounds` after 100
    untimed calls: issue = host time of `calls` back-to-back calls before the
    synchronize (the call overhead: `calls` is small enough that the launch
    queue never fills, so the host never waits for the GPU), wall = the same
    with the synchronize (bounded below by the GPU's time per kernel)."""
    for _ in range(100):
        call()
    torch.cuda.synchronize()
    issue, wall = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        issued = time.perf_counter()
        torch.cuda.synchronize()
        end = time.perf_counter()
        issue.append((issued - start) / calls * 1e6)
        wall.append((end - start) / calls * 1e6)
    return statistics.median(issue), statistics.median(wall)


def measure_overhead(fa) -> dict:
    """Host time per call of fa.attention and SDPA (PyTorch's default backend
    choice) on a tiny causal problem, forward (no_grad) and forward+backward."""
    shape = (1, 1, 16, 64)
    q, k, v, dout = (torch.randn(shape, device=DEVICE, dtype=DTYPE, requires_grad=i < 3)
                     for i in range(4))
    functions = {"sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                        is_causal=True)}
    if fa is not None:
        functions["fa"] = lambda q, k, v: fa.attention(q, k, v, causal=True)
    results = {"shape": list(shape), "calls": OVERHEAD_CALLS, "rounds": OVERHEAD_ROUNDS}
    for name, function in functions.items():
        try:
            with torch.no_grad():
                fwd, fwd_wall = host_us_per_call(lambda f=function: f(q, k, v))
            fwd_grad, _ = host_us_per_call(lambda f=function: f(q, k, v))
            fwd_bwd, fwd_bwd_wall = host_us_per_call(
                lambda f=function: torch.autograd.grad(f(q, k, v), (q, k, v), dout))
            results[name] = {"fwd_us": fwd, "fwd_wall_us": fwd_wall,
                             "fwd_requires_grad_us": fwd_grad,
                             "fwd+bwd_us": fwd_bwd, "fwd+bwd_wall_us": fwd_bwd_wall}
        except Exception as error:
            results[name] = None
            results[f"{name}_error"] = first_line(error)
    return results


def measure_layout(fa, warmup, runs) -> dict:
    """fa.attention and SDPA flash on [B, N, H, D]-transposed q, k, v (views
    of one [B, N, 3C] tensor, as a GPT's fused QKV gives them) next to
    contiguous [B, H, N, D] ones, causal, forward and forward+backward ms."""
    batch, heads, seq, dim = LAYOUT_SHAPE
    channels = heads * dim
    qkv = torch.randn(batch, seq, 3 * channels, device=DEVICE, dtype=DTYPE,
                      requires_grad=True)
    dqkv = torch.randn(batch, heads, seq, dim, device=DEVICE, dtype=DTYPE)

    def transposed():
        return [t.view(batch, seq, heads, dim).transpose(1, 2)
                for t in qkv.split(channels, dim=2)]

    contiguous = [torch.randn(batch, heads, seq, dim, device=DEVICE, dtype=DTYPE,
                              requires_grad=True) for _ in range(3)]
    functions = {"sdpa_flash": lambda q, k, v: common.sdpa_with_backend(
        SDPBackend.FLASH_ATTENTION, q, k, v, True)}
    if fa is not None:
        functions["fa"] = lambda q, k, v: fa.attention(q, k, v, causal=True)
    results = {"batch": batch, "heads": heads, "seq": seq, "head_dim": dim}
    for name, function in functions.items():
        entry = {}
        try:
            for layout, inputs, leaves in (
                    ("contiguous", lambda: contiguous, lambda: contiguous),
                    ("transposed", transposed, lambda: [qkv])):
                def forward(f=function, inputs=inputs):
                    return f(*inputs())

                def forward_backward(f=function, inputs=inputs, leaves=leaves):
                    return torch.autograd.grad(f(*inputs()), leaves(), dqkv)

                with torch.no_grad():
                    entry[f"{layout}_fwd_ms"] = common.median_ms(
                        [forward], warmup, runs, common.QUEUE_AHEAD_CYCLES)
                entry[f"{layout}_fwd+bwd_ms"] = common.median_ms(
                    [forward_backward], warmup, runs, common.QUEUE_AHEAD_CYCLES)
            for mode in ("fwd", "fwd+bwd"):
                entry[f"transposed_cost_{mode}"] = (
                    entry[f"transposed_{mode}_ms"] / entry[f"contiguous_{mode}_ms"] - 1)
            results[name] = entry
        except Exception as error:
            results[name] = None
            results[f"{name}_error"] = first_line(error)
    return results


def overhead_table(overhead, layout) -> str:
    def us(name, key):
        entry = overhead.get(name)
        return f"{entry[key]:.1f}" if entry else "n/a"

    lines = [f"Host time per call, B=1 H=1 N=16 D=64 bf16 causal, microseconds: issue = "
             f"{OVERHEAD_CALLS} back-to-back calls timed before one synchronize (the call "
             "overhead), wall = with it (bounded by the GPU's time per kernel); median of "
             f"{OVERHEAD_ROUNDS} rounds:", "",
             "| op | fwd no_grad issue | fwd no_grad wall | fwd requires_grad issue | "
             "fwd+bwd issue | fwd+bwd wall |", "|---|---|---|---|---|---|"]
    for name, label in (("fa", "fa.attention"), ("sdpa", "F.scaled_dot_product_attention")):
        lines.append(f"| {label} | {us(name, 'fwd_us')} | {us(name, 'fwd_wall_us')} | "
                     f"{us(name, 'fwd_requires_grad_us')} | {us(name, 'fwd+bwd_us')} | "
                     f"{us(name, 'fwd+bwd_wall_us')} |")
    lines += ["", f"[B, N, H, D]-transposed inputs vs contiguous, B={layout['batch']} "
              f"H={layout['heads']} N={layout['seq']} D={layout['head_dim']} causal, ms:", "",
              "| op | pass | contiguous | transposed | cost |", "|---|---|---|---|---|"]
    for name, label in (("fa", "fa.attention"), ("sdpa_flash", "SDPA flash")):
        entry = layout.get(name)
        for mode in ("fwd", "fwd+bwd"):
            if not entry:
                lines.append(f"| {label} | {mode} | n/a | n/a | n/a |")
                continue
            lines.append(f"| {label} | {mode} | {entry[f'contiguous_{mode}_ms']:.3f} | "
                         f"{entry[f'transposed_{mode}_ms']:.3f} | "
                         f"{100 * entry[f'transposed_cost_{mode}']:+.1f}% |")
    return "\n".join(lines)


# ------------------------------------------------------------ (c) LayerNorm

def measure_layer_norm(fa, rows, cols, warmup, runs) -> dict:
    """fa.layer_norm and F.layer_norm forward (no_grad) and backward
    (autograd.grad for x, weight and bias of a retained graph) GB/s."""
    fwd_bytes, bwd_bytes = 2.0 * rows * cols * 2, 3.0 * rows * cols * 2
    count = common.buffer_set_count(2 * bwd_bytes)
    sets = [(torch.randn(rows, cols, device=DEVICE, dtype=DTYPE, requires_grad=True),
             torch.randn(cols, device=DEVICE, dtype=DTYPE, requires_grad=True),
             torch.randn(cols, device=DEVICE, dtype=DTYPE, requires_grad=True),
             torch.randn(rows, cols, device=DEVICE, dtype=DTYPE)) for _ in range(count)]
    functions = {"torch": lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5)}
    if fa is not None:
        functions["fa"] = lambda x, w, b: fa.layer_norm(x, cols, w, b, eps=1e-5)
    result = {"rows": rows, "cols": cols}
    for name, function in functions.items():
        try:
            with torch.no_grad():
                fwd = common.median_ms([lambda s=s, f=function: f(*s[:3]) for s in sets],
                                       warmup, runs, common.QUEUE_AHEAD_CYCLES)
            graphs = [(s[:3], function(*s[:3]), s[3]) for s in sets]
            bwd = common.median_ms(
                [lambda g=g: torch.autograd.grad(g[1], g[0], g[2], retain_graph=True)
                 for g in graphs], warmup, runs, common.QUEUE_AHEAD_CYCLES)
            del graphs
            result[name] = {"fwd_gbps": fwd_bytes / (fwd * 1e-3) / 1e9,
                            "bwd_gbps": bwd_bytes / (bwd * 1e-3) / 1e9,
                            "fwd_ms": fwd, "bwd_ms": bwd}
        except Exception as error:
            result[name] = None
            result[f"{name}_error"] = first_line(error)
    del sets
    torch.cuda.empty_cache()
    return result


def layer_norm_table(rows) -> str:
    def cell(row, name, key):
        entry = row.get(name)
        return f"{entry[key]:.0f}" if entry else "n/a"

    lines = ["LayerNorm bf16 GB/s (forward 2*M*N*2 bytes, backward 3*M*N*2):", "",
             "| M x N | fa fwd | torch fwd | fa bwd | torch bwd |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['rows']} x {row['cols']} | {cell(row, 'fa', 'fwd_gbps')} | "
                     f"{cell(row, 'torch', 'fwd_gbps')} | {cell(row, 'fa', 'bwd_gbps')} | "
                     f"{cell(row, 'torch', 'bwd_gbps')} |")
    return "\n".join(lines)


# ----------------------------------------------------------------- driver

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_common_arguments(parser, default_out="bench/results")
    parser.add_argument("--seqs", type=int, nargs="+", default=[1024, 4096, 16384],
                        help="sequence lengths (each must divide 16384)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs")
    parser.add_argument("--runs", type=int, default=50, help="timed runs (median)")
    parser.add_argument("--quick", action="store_true",
                        help="seq 4096 only, 20 runs, no LayerNorm")
    parser.add_argument("--skip-layernorm", action="store_true", help="leave out (c)")
    args = parser.parse_args()
    if args.quick:
        args.seqs, args.runs, args.skip_layernorm = [4096], 20, True
    if not torch.cuda.is_available():
        print("error: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    if args.kernels:
        # fa.attention reads its kernels from $FA_KERNELS: make it the library
        # fa-run is given, so that both run the same kernels.
        current = os.environ.get("FA_KERNELS")
        if current and os.path.realpath(current) != os.path.realpath(args.kernels):
            print(f"warning: FA_KERNELS={current} but --kernels {args.kernels}: "
                  "fa.attention and fa-run may run different kernels", file=sys.stderr)
        os.environ.setdefault("FA_KERNELS", args.kernels)

    fa, fa_error = None, None
    try:
        fa = import_fa()
        if not fa.is_available():
            reason = getattr(fa, "unavailable_reason", lambda: None)()
            fa, fa_error = None, (f"fa.is_available() is False ({reason}; libfa_runtime.so: "
                                  "$FA_RUNTIME_LIBRARY, kernels: $FA_KERNELS)")
    except Exception as error:
        fa_error = first_line(error)
    if fa_error:
        print(f"error: the fa package cannot run: {fa_error}; measuring the rest",
              file=sys.stderr)

    environment = common.environment()
    print(common.environment_line(environment))
    if fa is not None:
        print(f"fa: {fa.runtime_library()}, kernels {fa.kernel_dir()}")

    rows = []
    for batch, heads, seq, dim, causal in common.attention_configurations(args.seqs,
                                                                         (HEAD_DIM,)):
        rows.append(measure_attention(args, fa, batch, heads, seq, dim, causal))
        print(progress_line(rows[-1]), flush=True)
    print("measuring call overhead", flush=True)
    overhead = measure_overhead(fa)
    layout = measure_layout(fa, args.warmup, args.runs)
    layer_norm = []
    if not args.skip_layernorm:
        print("measuring LayerNorm", flush=True)
        layer_norm = [measure_layer_norm(fa, r, c, args.warmup, args.runs)
                      for r, c in LAYER_NORM_SHAPES]

    text = (common.environment_line(environment) + "\n\n"
            f"Attention TFLOP/s, bf16, D={HEAD_DIM}, H={common.HIDDEN // HEAD_DIM}, "
            f"{common.TOKENS} tokens; forward 4*B*H*N^2*D FLOPs, backward 2.5x, "
            "half if causal; median of CUDA-event timings\n\n"
            + attention_table(rows) + "\n\n" + overhead_table(overhead, layout))
    if layer_norm:
        text += "\n\n" + layer_norm_table(layer_norm)
    print("\n" + text)
    results = {**environment, "fa_error": fa_error,
               "fa_runtime_library": str(fa.runtime_library()) if fa else None,
               "fa_kernel_dir": str(fa.kernel_dir()) if fa else None,
               "attention": rows, "overhead": overhead, "layout": layout,
               "layer_norm": layer_norm}
    common.write_results(args.out, "bench_torch_ops", results, text)

    failed = bool(fa_error)
    for row in rows:
        for key in ("fa_error", "fa_run_error"):
            if key in row:
                print(f"{key[:-6]} failed at N={row['seq']} causal={row['causal']}: "
                      f"{row[key]}", file=sys.stderr)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
