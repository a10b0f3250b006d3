"""Helpers shared by the benchmark and comparison scripts: running fa-run,
choosing PyTorch SDPA backends, the attention benchmark shapes, timing with
CUDA events, and writing results."""

import argparse
import itertools
import json
import subprocess
import sys
import warnings
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

REPO_ROOT = Path(__file__).resolve().parent.parent
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}

# The attention benchmarks' convention (the FlashAttention papers'): bf16,
# batch * seq = 16384 tokens, heads * head_dim = 2048, against PyTorch SDPA's
# FlashAttention-2 and cuDNN backends.
TOKENS = 16384
HIDDEN = 2048
SDPA_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
# About 25 ms at H100 clocks: longer than the host needs to queue the timed
# runs (see median_ms).
QUEUE_AHEAD_CYCLES = 50_000_000


def add_common_arguments(parser: argparse.ArgumentParser, default_out: str) -> None:
    parser.add_argument("--fa-run", default=str(REPO_ROOT / "build" / "bin" / "fa-run"),
                        help="path of the fa-run binary (default: build/bin/fa-run)")
    parser.add_argument("--kernels", default=None,
                        help="kernel library directory passed to fa-run --kernels "
                             "(default: fa-run's own default)")
    parser.add_argument("--out", default=default_out,
                        help=f"directory for the results (default: {default_out})")


def run_fa_run(args: argparse.Namespace, fa_run_args: list[str],
               subcommand: str = "attention") -> subprocess.CompletedProcess:
    """Runs `fa-run <subcommand> <fa_run_args>`; raises RuntimeError with its
    stderr when it fails."""
    command = [args.fa_run, subcommand, *fa_run_args]
    if args.kernels:
        command += ["--kernels", args.kernels]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {result.returncode}: "
                           f"{result.stderr.strip()}")
    return result


def sdpa(q, k, v, causal: bool):
    """PyTorch SDPA with top-left causal alignment (as fa-run) and grouped-query
    attention when k/v have fewer heads. is_causal is top-left aligned only
    for square masks in every backend, so other shapes get an explicit mask
    (which rules out the flash backend)."""
    seq_q, seq_kv = q.shape[2], k.shape[2]
    gqa = k.shape[1] != q.shape[1]
    if causal and seq_q != seq_kv:
        mask = torch.ones(seq_q, seq_kv, dtype=torch.bool, device=q.device).tril()
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=gqa)
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=gqa)


def sdpa_with_backend(backend: SDPBackend, q, k, v, causal: bool):
    with sdpa_kernel([backend]):
        return sdpa(q, k, v, causal)


def first_working_backend(backends: list[SDPBackend], q, k, v, causal: bool):
    """The first backend that runs these inputs, and its output. PyTorch warns
    about every backend that cannot; the error raised if none can says why."""
    errors = []
    for backend in backends:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return backend, sdpa_with_backend(backend, q, k, v, causal)
        except (RuntimeError, NotImplementedError) as error:
            errors.append(f"{backend.name}: {str(error).splitlines()[0]}")
    raise RuntimeError("no SDPA backend ran: " + "; ".join(errors))


def median_ms(calls: list, warmup: int, runs: int, queue_ahead_cycles: int = 0) -> float:
    """Median CUDA-event time of calls[i % len(calls)]() over `runs` runs,
    after `warmup` untimed ones; rotating calls over different buffers keeps
    inputs out of L2. With `queue_ahead_cycles`, the GPU spins that long
    before the first timed run, so that the host queues the runs while it
    waits: for calls whose host work (e.g. autograd) takes longer than their
    GPU work, the events then time the GPU work alone."""
    for i in range(warmup):
        calls[i % len(calls)]()
    if queue_ahead_cycles:
        torch.cuda._sleep(queue_ahead_cycles)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        starts[i].record()
        calls[(warmup + i) % len(calls)]()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(end) for start, end in zip(starts, ends))
    middle = runs // 2
    return times[middle] if runs % 2 else (times[middle - 1] + times[middle]) / 2


def buffer_set_count(set_bytes) -> int:
    """Enough buffer sets of `set_bytes` to span 2x L2, at most 64."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(1, min(64, -(-2 * l2 // int(set_bytes))))


def attention_flops(batch, heads, seq_q, seq_kv, dim, causal) -> float:
    """4*B*H*N*M*D, halved when causal (the FlashAttention convention)."""
    flops = 4.0 * batch * heads * seq_q * seq_kv * dim
    return flops / 2 if causal else flops


def attention_backward_flops(batch, heads, seq_q, seq_kv, dim, causal) -> float:
    """2.5 times the forward's: five matrix products to its two (the
    FlashAttention convention, as fa-run's)."""
    return 2.5 * attention_flops(batch, heads, seq_q, seq_kv, dim, causal)


def attention_configurations(seqs, dims=(64, 128)):
    """(batch, heads, seq, head_dim, causal) of the attention benchmarks:
    each head_dim in `dims` (heads = HIDDEN / head_dim), each seq, causal and
    not."""
    for dim, seq, causal in itertools.product(dims, seqs, (False, True)):
        yield TOKENS // seq, HIDDEN // dim, seq, dim, causal


def attention_table(rows, extra_columns=()) -> str:
    """Markdown: TFLOP/s of ours ("ours"), SDPA flash and cuDNN per row, then
    one column per (header, cell of a row) in `extra_columns`."""
    def cell(value):
        return f"{value:.1f}" if value is not None else "n/a"

    headers = "".join(f" {header} |" for header, _ in extra_columns)
    lines = ["| D | N | B | H | causal | ours TFLOP/s | FA2 (flash) | cuDNN | ours / FA2 |"
             + headers,
             "|---|---|---|---|---|---|---|---|---|" + "---|" * len(extra_columns)]
    for r in rows:
        ratio = (f"{r['ours'] / r['flash']:.2f}"
                 if r["ours"] is not None and r["flash"] else "n/a")
        extra = "".join(f" {row_cell(r)} |" for _, row_cell in extra_columns)
        lines.append(f"| {r['head_dim']} | {r['seq']} | {r['batch']} | {r['heads']} | "
                     f"{'yes' if r['causal'] else 'no'} | {cell(r['ours'])} | "
                     f"{cell(r['flash'])} | {cell(r['cudnn'])} | {ratio} |" + extra)
    return "\n".join(lines)


def driver_version() -> str:
    """GPU 0's NVIDIA driver version, or "unknown"."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def environment() -> dict:
    """The GPU, its driver and the PyTorch build a result was measured with."""
    return {"device": torch.cuda.get_device_name(0), "driver": driver_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda}


def environment_line(env: dict) -> str:
    return (f"Device: {env['device']}, driver {env['driver']}, "
            f"torch {env['torch']} (CUDA {env['cuda']})")


def report_fa_run_errors(rows) -> int:
    """Prints each row's fa-run failure to stderr; the exit code: 1 if any."""
    errors = [r for r in rows if "ours_error" in r]
    for r in errors:
        print(f"fa-run failed: {r['ours_error']}", file=sys.stderr)
    return 1 if errors else 0


def write_results(out_dir: str, stem: str, results, table: str) -> None:
    """Writes `results` (rows, or an object holding them) as <stem>.json and
    `table` as <stem>.md."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / f"{stem}.md").write_text(table + "\n")
    print(f"\nwrote {out / (stem + '.json')} and {out / (stem + '.md')}")
