#!/usr/bin/env python3
"""Attention variants' speed: fa-run's variant kernels next to
torch.compile(flex_attention) (FlexAttention), measured in the same run on the
same shapes, forward and backward.

bf16, batch * seq = 16384 tokens, heads = 2048 / head_dim, head_dim in --dims
(default 128), seq in --seqs (default 4096 16384). The variants (--variants
picks some):

  causal     plain top-left causal (j <= i), the baseline of "ours / our causal";
             SDPA flash and cuDNN run it too, for reference
  window     causal + window(1024, 0): i - 1024 <= j <= i (FlashAttention's
             window_size=(1024, 0))
  document   causal + documents of 1000 tokens (packed sequences: the lengths
             of --doc-lens repeated, the last one cut, in every batch row)
  softcap    causal + softcap 30: s' = 30 * tanh(s / 30)
  alibi      causal + ALiBi, slopes 2^(-8(h+1)/H)
  window-sym window(1024, 1024), not causal (only with --all or --variants)

Attention sinks and dropout have no rows: FlexAttention cannot express
either as the same computation. A sink adds exp(sink[h]) to each row's
denominator, which no score_mod or mask_mod does (one can only rescale
flex_attention's output by its returned lse afterwards, a second pass that
its backward then differentiates through, not a kernel); and FlexAttention
has no dropout. fa-run times them alone: `fa-run attention ... --sinks
--grad --bench` (dsinks's kernel among the backward's) or `--dropout 0.1`.

Ours is `fa-run attention ... --bench --json` (with --grad for the backward).
FlexAttention gets the same mask as a mask_mod (its block mask built once per
shape with create_block_mask, outside the timing, as users do) and softcap or
ALiBi as a score_mod, compiled once per shape and warmed up; its forward runs
on inputs that require grad (a training step's forward), its backward is
torch.autograd.grad(out, (q, k, v), dout) of a retained graph, as
bench_attention_bwd.py times SDPA's. Every number is the median of CUDA-event
timings after warm-up, with inputs rotated across buffer sets spanning at least
2x the L2 cache, PyTorch's runs queued behind a GPU spin so that host overhead
does not count.

FLOPs count only the kept (i, j) pairs, the same count for every
implementation: 4 * D * B * H * kept for the forward, 2.5 times that for the
backward. The tables show ours as TFLOP/s of those FLOPs over fa-run's median
time, and fa-run's own TFLOP/s (it counts the kept pairs itself; a * marks a
count more than 1% away from ours).

--check instead compares fa-run's outputs (and gradients) with FlexAttention's
on a small shape per variant: q, k, v and dout rounded to bf16 and written as
.npy, fa-run run on them (--q/--k/--v/--out, --grad --dout/--dq/--dk/--dv),
FlexAttention in fp32 (eager) as the reference and compiled in bf16 as
PyTorch's own low-precision answer; a variant passes when each of our relative
errors is at most 2x PyTorch's.

    python3 bench/bench_variants.py --fa-run build/bin/fa-run --out bench/results
    python3 bench/bench_variants.py --fa-run build/bin/fa-run --check --out bench/results

Each (variant, shape) compiles FlexAttention anew (forward and backward);
--variants, --seqs and --directions split a run that would take too long.

The parts that need no GPU (variants, kept-pair counts, tables) import neither
torch nor common (which imports torch); their doctests run anywhere:
`python3 -m doctest bench/bench_variants.py`.
"""

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Where the PyTorch parts run. "cpu" runs FlexAttention's mask and score
# functions and the --check flow without a GPU (for testing them; timing and
# compiled FlexAttention's backward need CUDA).
DEVICE = "cuda"
# A count of fa-run's further than this from ours is marked in the tables.
FLOPS_MISMATCH = 0.01
DIRECTIONS = ("forward", "backward")
CHECKED_TENSORS = ("out", "dq", "dk", "dv")


@dataclass(frozen=True)
class Variant:
    """An attention variant: its mask (causal, window, documents) and score
    modification (softcap, ALiBi), in the terms of fa-run's flags."""
    key: str
    causal: bool = False
    window: tuple[int, int] | None = None
    doc_lens: tuple[int, ...] | None = None
    softcap: float | None = None
    alibi: bool = False

    @property
    def label(self) -> str:
        """The variant in the tables, e.g. "causal+window(1024,0)"."""
        parts = ["causal"] if self.causal else []
        if self.window:
            parts.append(f"window({self.window[0]},{self.window[1]})")
        if self.doc_lens:
            parts.append(f"document({','.join(map(str, self.doc_lens))})")
        if self.softcap:
            parts.append(f"softcap({self.softcap:g})")
        if self.alibi:
            parts.append("alibi")
        return "+".join(parts) or "full"

    @property
    def has_mask(self) -> bool:
        return self.causal or self.window is not None or self.doc_lens is not None

    @property
    def has_score_mod(self) -> bool:
        return self.softcap is not None or self.alibi

    @property
    def sdpa_expresses(self) -> bool:
        """SDPA's flash and cuDNN backends run it: plain causal only."""
        return self.causal and not (self.window or self.doc_lens or self.has_score_mod)


def make_variants(window: int, doc_lens, softcap: float) -> dict[str, Variant]:
    """Every variant this script knows, by key (--variants)."""
    doc_lens = tuple(doc_lens)
    return {v.key: v for v in (
        Variant("causal", causal=True),
        Variant("window", causal=True, window=(window, 0)),
        Variant("document", causal=True, doc_lens=doc_lens),
        Variant("softcap", causal=True, softcap=softcap),
        Variant("alibi", causal=True, alibi=True),
        Variant("window-sym", window=(window, window)))}


DEFAULT_VARIANTS = ("causal", "window", "document", "softcap", "alibi")


def fa_run_flags(variant: Variant) -> list[str]:
    """fa-run attention's flags for the variant (the variants contract).

    >>> fa_run_flags(make_variants(1024, [1000], 30.0)["window"])
    ['--causal', '--window', '1024,0']
    >>> fa_run_flags(make_variants(1024, [300, 1000], 30.0)["document"])
    ['--causal', '--doc-lens', '300,1000']
    >>> fa_run_flags(make_variants(1024, [1000], 30.0)["softcap"])
    ['--causal', '--softcap', '30']
    """
    flags = ["--causal"] if variant.causal else []
    if variant.window:
        flags += ["--window", f"{variant.window[0]},{variant.window[1]}"]
    if variant.doc_lens:
        flags += ["--doc-lens", ",".join(map(str, variant.doc_lens))]
    if variant.softcap:
        flags += ["--softcap", f"{variant.softcap:g}"]
    if variant.alibi:
        flags.append("--alibi")
    return flags


def document_spans(seq: int, doc_lens) -> list[tuple[int, int]]:
    """[start, end) of each document: doc_lens repeated until seq is covered,
    the last one cut (fa-run's --doc-lens).

    >>> document_spans(2500, [1000])
    [(0, 1000), (1000, 2000), (2000, 2500)]
    """
    spans, start = [], 0
    while start < seq:
        end = min(seq, start + doc_lens[len(spans) % len(doc_lens)])
        spans.append((start, end))
        start = end
    return spans


def document_ids(seq: int, doc_lens) -> list[int]:
    """Each position's document index (non-decreasing, as fa-run requires)."""
    return [index for index, (start, end) in enumerate(document_spans(seq, doc_lens))
            for _ in range(start, end)]


def keeps(variant: Variant, q_idx, kv_idx, doc_ids):
    """Whether query q_idx sees key kv_idx (Sq == Skv): on Python ints for the
    counts' tests, and as FlexAttention's mask_mod on tensors, so that both use
    one definition of the mask. A variant without a mask keeps everything."""
    conditions = []
    if variant.causal:
        conditions.append(kv_idx <= q_idx)
    if variant.window:
        left, right = variant.window
        conditions += [kv_idx >= q_idx - left, kv_idx <= q_idx + right]
    if variant.doc_lens:
        conditions.append(doc_ids[q_idx] == doc_ids[kv_idx])
    if not conditions:
        return kv_idx >= 0
    kept = conditions[0]
    for condition in conditions[1:]:
        kept = kept & condition
    return kept


def kept_pairs(variant: Variant, seq: int) -> int:
    """The number of kept (i, j) pairs of one (batch, head): each query row
    keeps one interval of keys, the intersection of the causal, window and
    document intervals.

    >>> v = make_variants(2, [3], 30.0)
    >>> kept_pairs(v["causal"], 4), kept_pairs(v["window"], 4), kept_pairs(v["window-sym"], 4)
    (10, 9, 14)
    >>> kept_pairs(v["document"], 5)  # documents [0, 3) and [3, 5), causal: 6 + 3
    9
    """
    doc_of_row = []
    if variant.doc_lens:
        for start, end in document_spans(seq, variant.doc_lens):
            doc_of_row += [(start, end)] * (end - start)
    total = 0
    for i in range(seq):
        low, high = 0, seq - 1
        if variant.causal:
            high = min(high, i)
        if variant.window:
            low, high = max(low, i - variant.window[0]), min(high, i + variant.window[1])
        if variant.doc_lens:
            start, end = doc_of_row[i]
            low, high = max(low, start), min(high, end - 1)
        total += max(0, high - low + 1)
    return total


def attention_flops(variant: Variant, batch, heads, seq, dim, direction: str) -> float:
    """4 * D * B * H * kept for the forward, 2.5 times that for the backward
    (its five matrix products to the forward's two)."""
    forward = 4.0 * dim * batch * heads * kept_pairs(variant, seq)
    return forward if direction == "forward" else 2.5 * forward


def alibi_slopes(heads: int) -> list[float]:
    """The ALiBi paper's slopes, as fa-run --alibi: 2^(-8 (h + 1) / H)."""
    return [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)]


def configurations(seqs, dims, tokens: int, hidden: int):
    """(batch, heads, seq, head_dim) per head_dim and seq: batch * seq =
    tokens, heads * head_dim = hidden. Raises ValueError on sizes that do not
    divide them.

    >>> list(configurations([4096, 16384], [128], 16384, 2048))
    [(4, 16, 4096, 128), (1, 16, 16384, 128)]
    """
    for name, values, total in (("--seqs", seqs, tokens), ("--dims", dims, hidden)):
        for value in values:
            if value <= 0 or total % value:
                raise ValueError(f"{name} {value} does not divide {total}")
    return [(tokens // seq, hidden // dim, seq, dim) for dim in dims for seq in seqs]


def build_parser(add_common_arguments) -> argparse.ArgumentParser:
    """The command line; add_common_arguments is common.add_common_arguments
    (--fa-run, --kernels, --out), passed in so that this stays torch-free."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser, default_out="bench/results")
    parser.add_argument("--seqs", type=int, nargs="+", default=[4096, 16384],
                        help="sequence lengths (each must divide 16384)")
    parser.add_argument("--dims", type=int, nargs="+", default=[128],
                        help="head dims (heads = 2048 / head_dim)")
    parser.add_argument("--variants", nargs="+", default=None,
                        choices=list(make_variants(1, [1], 1.0)),
                        help=f"variants to run (default: {' '.join(DEFAULT_VARIANTS)})")
    parser.add_argument("--all", action="store_true",
                        help="every variant, window-sym included")
    parser.add_argument("--directions", nargs="+", choices=DIRECTIONS,
                        default=list(DIRECTIONS), help="forward, backward or both")
    parser.add_argument("--window", type=int, default=1024,
                        help="window size: (W, 0) causal and (W, W) for window-sym")
    parser.add_argument("--doc-lens", type=int, nargs="+", default=[1000],
                        help="document lengths, repeated along the sequence")
    parser.add_argument("--softcap", type=float, default=30.0, help="softcap value")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs")
    parser.add_argument("--runs", type=int, default=30, help="timed runs (median)")
    parser.add_argument("--check", action="store_true",
                        help="compare outputs and gradients with FlexAttention on "
                             "--check-shape instead of timing")
    parser.add_argument("--check-shape", type=int, nargs=3, default=[2, 4, 2048],
                        metavar=("B", "H", "N"), help="the shape of --check (D from --dims)")
    return parser


def chosen_variants(args) -> list[Variant]:
    """The variants of --variants / --all, in the order of make_variants.
    Raises ValueError on a bad window, softcap or document length."""
    if args.window < 0 or args.softcap <= 0 or min(args.doc_lens) <= 0:
        raise ValueError("--window must be >= 0, --softcap and --doc-lens > 0")
    known = make_variants(args.window, args.doc_lens, args.softcap)
    keys = set(known) if args.all else set(args.variants or DEFAULT_VARIANTS)
    return [variant for key, variant in known.items() if key in keys]


def tflops(flops: float, ms) -> float | None:
    return flops / (ms * 1e-3) / 1e12 if ms else None


def _cell(value) -> str:
    return f"{value:.1f}" if value is not None else "n/a"


def _ratio(numerator, denominator) -> str:
    return f"{numerator / denominator:.2f}" if numerator is not None and denominator else "n/a"


def fa_run_count_differs(row) -> bool:
    """Whether fa-run counted FLOPs more than FLOPS_MISMATCH away from ours."""
    counted = row.get("ours_fa_run_flops")
    return bool(counted) and abs(counted / row["flops"] - 1) > FLOPS_MISMATCH


def variants_table(rows, direction: str) -> str:
    """Markdown for one direction: per (variant, D, N) ours (kept FLOPs over
    fa-run's time), fa-run's own TFLOP/s, FlexAttention, their ratio, ours
    over our causal at the same D and N, and SDPA where it runs the variant."""
    rows = [r for r in rows if r["direction"] == direction]
    causal = {(r["head_dim"], r["seq"]): r["ours"] for r in rows if r["variant"] == "causal"}
    lines = ["| variant | D | N | B | H | kept | ours TFLOP/s | fa-run's TFLOP/s | Flex | "
             "ours / Flex | ours / our causal | SDPA flash | cuDNN |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fa_run = _cell(r.get("ours_fa_run")) + ("*" if fa_run_count_differs(r) else "")
        lines.append(
            f"| {r['label']} | {r['head_dim']} | {r['seq']} | {r['batch']} | {r['heads']} | "
            f"{100 * r['kept_fraction']:.1f}% | {_cell(r.get('ours'))} | {fa_run} | "
            f"{_cell(r.get('flex'))} | {_ratio(r.get('ours'), r.get('flex'))} | "
            f"{_ratio(r.get('ours'), causal.get((r['head_dim'], r['seq'])))} | "
            f"{_cell(r.get('flash'))} | {_cell(r.get('cudnn'))} |")
    return "\n".join(lines)


def short_error(message: str) -> str:
    """An error for a table cell: without fa-run's command line (common.run_fa_run's
    "COMMAND exited with N: STDERR"), its last line, at most 120 characters.

    >>> short_error("fa-run attention --causal exited with 1: no kernel\\nfor softcap")
    'for softcap'
    >>> short_error("fa-run attention --alibi exited with 1: no backward kernel")
    'exited with 1: no backward kernel'
    """
    text = message.strip()
    if " exited with " in text:
        text = "exited with " + text.split(" exited with ", 1)[1]
    return (text.splitlines() or [""])[-1][-120:]


def check_table(rows) -> str:
    """Markdown of --check: per variant and tensor, our and PyTorch's (Flex
    bf16) max abs error / relative error against Flex fp32."""
    header = "".join(f" {name} ours | {name} Flex bf16 |" for name in CHECKED_TENSORS)
    lines = ["| variant | D | B | H | N |" + header + " pass |",
             "|---|---|---|---|---|" + "---|---|" * len(CHECKED_TENSORS) + "---|"]
    for r in rows:
        cells = ""
        for name in CHECKED_TENSORS:
            for who in ("ours", "flex"):
                error = r.get("errors", {}).get(name, {}).get(who)
                cells += (f" {error['max_abs']:.1e} ({error['rel']:.1e}) |" if error
                          else " n/a |")
        verdict = "pass" if r.get("passed") else "FAIL"
        for key in ("ours_error", "ours_grad_error", "flex_error"):
            if key in r:
                verdict += f"; {key}: {short_error(r[key])}"
        lines.append(f"| {r['label']} | {r['head_dim']} | {r['batch']} | {r['heads']} | "
                     f"{r['seq']} |{cells} {verdict} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- GPU parts


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def configure_torch_compile() -> None:
    """Timing repeats the backward of one retained graph; AOTAutograd's donated
    buffers (freed after the first backward) forbid retain_graph=True."""
    import torch._functorch.config as functorch_config
    if hasattr(functorch_config, "donated_buffer"):
        functorch_config.donated_buffer = False


def flex_attention_of(variant: Variant, heads: int, seq: int, compiled: bool = True):
    """attention(q, k, v) -> out through torch.compile(flex_attention) (or
    eager flex_attention: the fp32 reference of --check), with the variant's
    block mask (built here, once) and score_mod."""
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    doc_ids = (torch.tensor(document_ids(seq, variant.doc_lens), dtype=torch.int32,
                            device=DEVICE) if variant.doc_lens else None)
    slopes = (torch.tensor(alibi_slopes(heads), dtype=torch.float32, device=DEVICE)
              if variant.alibi else None)

    def mask_mod(batch, head, q_idx, kv_idx):
        return keeps(variant, q_idx, kv_idx, doc_ids)

    def score_mod(score, batch, head, q_idx, kv_idx):
        if variant.softcap:
            score = variant.softcap * torch.tanh(score / variant.softcap)
        if variant.alibi:
            score = score - slopes[head] * (q_idx - kv_idx).abs()
        return score

    # The mask is the same for every batch row and head: broadcast (None).
    block_mask = (create_block_mask(mask_mod, None, None, seq, seq, device=DEVICE)
                  if variant.has_mask else None)
    function = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    kwargs = {"block_mask": block_mask,
              "score_mod": score_mod if variant.has_score_mod else None}
    return lambda q, k, v: function(q, k, v, **kwargs)


def sdpa_attention_of(backend):
    """attention(q, k, v) -> out through SDPA's backend, top-left causal."""
    import warnings

    import common

    def attention(q, k, v):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return common.sdpa_with_backend(backend, q, k, v, True)
    return attention


def input_sets(batch, heads, seq, dim):
    """Enough (q, k, v) sets, requiring grad, to span 2x L2 with the backward's
    q, k, v, out, dout, dq, dk, dv."""
    import torch

    import common
    count = common.buffer_set_count(8 * batch * heads * seq * dim * 2)
    return [[torch.randn(batch, heads, seq, dim, device=DEVICE, dtype=torch.bfloat16,
                         requires_grad=True) for _ in range(3)] for _ in range(count)]


def torch_ms(attention, sets, direction: str, warmup, runs) -> float:
    """Median ms of attention(q, k, v), or of its backward (autograd.grad of
    a retained graph for a random dout). The first calls compile."""
    import torch

    import common
    if direction == "forward":
        calls = [lambda s=s: attention(*s) for s in sets]
    else:
        graphs = []
        for s in sets:
            out = attention(*s)
            graphs.append((s, out, torch.randn_like(out)))
        calls = [lambda g=g: torch.autograd.grad(g[1], g[0], g[2], retain_graph=True)
                 for g in graphs]
    return common.median_ms(calls, warmup, runs, common.QUEUE_AHEAD_CYCLES)


def peer_times(make_attention, sets, directions, warmup, runs) -> dict:
    """{direction: (median ms, None) or (None, why)} of one PyTorch peer,
    made by make_attention() after a fresh dynamo cache (compiled graphs are
    per variant and shape; a fresh cache keeps the recompile limit away)."""
    import torch
    torch._dynamo.reset()
    # Compilation and kernels fail in many ways (Triton, Inductor, out of
    # memory): each is this peer's result for the row, not the run's end.
    try:
        attention = make_attention()
    except Exception as error:  # noqa: BLE001
        return {direction: (None, first_line(error)) for direction in directions}
    times = {}
    for direction in directions:
        try:
            times[direction] = (torch_ms(attention, sets, direction, warmup, runs), None)
        except Exception as error:  # noqa: BLE001
            times[direction] = (None, first_line(error))
        torch.cuda.empty_cache()
    return times


def ours_bench(args, variant: Variant, batch, heads, seq, dim) -> dict:
    """{direction: fa-run's bench json} (median_ms, flops, tflops), and the
    variant fa-run reports; with the backward asked for, one `--grad` run
    times both; if it fails the forward is run alone, and
    {"backward_error": ...} says why."""
    import common
    base = ["--batch", str(batch), "--heads", str(heads), "--seq", str(seq),
            "--dim", str(dim), "--dtype", "bf16", *fa_run_flags(variant),
            "--bench", "--json", "--warmup", str(args.warmup), "--runs", str(args.runs)]
    result = {}
    if "backward" in args.directions:
        try:
            report = json.loads(common.run_fa_run(args, base + ["--grad"]).stdout)
            return {"forward": report["bench"], "backward": report["bench_backward"],
                    "variant": report.get("variant")}
        except RuntimeError as error:
            result["backward_error"] = str(error)
    report = json.loads(common.run_fa_run(args, base).stdout)
    result.update(forward=report["bench"], variant=report.get("variant"))
    return result


def measure(args, variant: Variant, batch, heads, seq, dim) -> list[dict]:
    """One row per direction: ours, FlexAttention and (for plain causal) SDPA."""
    import torch

    import common
    kept = kept_pairs(variant, seq)
    rows = {d: {"direction": d, "variant": variant.key, "label": variant.label,
                "fa_run_flags": fa_run_flags(variant), "batch": batch, "heads": heads,
                "seq": seq, "head_dim": dim, "kept_pairs": kept,
                "kept_fraction": kept / (seq * seq),
                "flops": attention_flops(variant, batch, heads, seq, dim, d)}
            for d in args.directions}

    try:
        bench = ours_bench(args, variant, batch, heads, seq, dim)
    except RuntimeError as error:
        bench = {"forward_error": str(error), "backward_error": str(error)}
    for direction, row in rows.items():
        report = bench.get(direction)
        if report is None:
            row["ours"] = None
            row["ours_error"] = bench.get(f"{direction}_error") or bench["forward_error"]
            continue
        row.update(ours_ms=report["median_ms"], ours=tflops(row["flops"], report["median_ms"]),
                   ours_fa_run=report["tflops"], ours_fa_run_flops=report["flops"],
                   ours_variant=bench.get("variant"))

    peers = {"flex": lambda: flex_attention_of(variant, heads, seq)}
    if variant.sdpa_expresses:
        peers.update({name: lambda b=b: sdpa_attention_of(b)
                      for name, b in common.SDPA_BACKENDS.items()})
    sets = input_sets(batch, heads, seq, dim)
    for name, make_attention in peers.items():
        times = peer_times(make_attention, sets, args.directions, args.warmup, args.runs)
        for direction, (ms, error) in times.items():
            row = rows[direction]
            row[f"{name}_ms"], row[name] = ms, tflops(row["flops"], ms)
            if error:
                row[f"{name}_error"] = error
    del sets
    torch.cuda.empty_cache()
    return list(rows.values())


def bench(args, variants, env) -> int:
    import common
    rows = []
    for batch, heads, seq, dim in configurations(args.seqs, args.dims, common.TOKENS,
                                                 common.HIDDEN):
        for variant in variants:
            new_rows = measure(args, variant, batch, heads, seq, dim)
            rows += new_rows
            for row in new_rows:
                print(f"{row['direction']:8}" + variants_table([row], row["direction"])
                      .splitlines()[-1], flush=True)
    text = (common.environment_line(env) + "\n\n"
            f"Attention variants, bf16, {common.TOKENS} tokens, hidden {common.HIDDEN}; "
            "TFLOP/s of 4*D*B*H*kept (backward 2.5x), kept = unmasked (i, j) pairs; "
            "ours: those FLOPs over fa-run's median time; fa-run's TFLOP/s: its own count "
            f"(* = more than {FLOPS_MISMATCH:.0%} away); Flex: torch.compile(flex_attention) "
            "with the same block mask; SDPA for plain causal only")
    for direction in args.directions:
        text += f"\n\n### {direction}\n\n" + variants_table(rows, direction)
    print("\n" + text)
    flex_errors = sorted({r["flex_error"] for r in rows if "flex_error" in r})
    for error in flex_errors:
        print(f"FlexAttention failed: {error}", file=sys.stderr)
    results = {**env, "dtype": "bf16", "tokens": common.TOKENS, "hidden": common.HIDDEN,
               "flops": "4 * head_dim * batch * heads * kept pairs, backward 2.5x",
               "results": rows}
    common.write_results(args.out, "bench_variants", results, text)
    return 1 if common.report_fa_run_errors(rows) or flex_errors else 0


def run_ours_on_files(args, variant: Variant, work: Path, with_grad: bool) -> dict:
    """fa-run on work/{q,k,v,dout}.npy; {name: output array} for out (and dq,
    dk, dv with_grad)."""
    import numpy as np

    import common
    names = ["q", "k", "v", "out"] + (["dout", "dq", "dk", "dv"] if with_grad else [])
    flags = [flag for name in names for flag in (f"--{name}", str(work / f"{name}.npy"))]
    common.run_fa_run(args, ["--dtype", "bf16", *fa_run_flags(variant), *flags,
                             *(["--grad"] if with_grad else [])])
    return {name: np.load(work / f"{name}.npy") for name in CHECKED_TENSORS
            if with_grad or name == "out"}


def flex_outputs(attention, q, k, v, dout) -> dict:
    """out, dq, dk and dv (float32) of attention(q, k, v) for the gradient dout."""
    import torch
    inputs = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = attention(*inputs)
    grads = torch.autograd.grad(out, inputs, dout.to(out.dtype))
    return {name: t.detach().float() for name, t in zip(CHECKED_TENSORS, (out, *grads))}


def errors_against(reference, actual) -> dict:
    """Max abs and relative (Frobenius) error of actual against reference."""
    difference = actual.double() - reference.double()
    return {"max_abs": difference.abs().max().item(),
            "rel": (difference.norm() / reference.double().norm()).item()}


def check_variant(args, variant: Variant, work: Path, inputs, dim) -> dict:
    """Our and FlexAttention-bf16's errors against FlexAttention fp32 on
    inputs = (q, k, v, dout), float32 holding bf16 values, also in work/*.npy."""
    import torch
    batch, heads, seq = args.check_shape
    row = {"variant": variant.key, "label": variant.label, "fa_run_flags": fa_run_flags(variant),
           "batch": batch, "heads": heads, "seq": seq, "head_dim": dim}
    q, k, v, dout = inputs
    reference = flex_outputs(flex_attention_of(variant, heads, seq, compiled=False), *inputs)
    pytorch = {}
    try:
        torch._dynamo.reset()
        pytorch = flex_outputs(flex_attention_of(variant, heads, seq),
                               *(t.to(torch.bfloat16) for t in (q, k, v)), dout)
    except Exception as error:  # noqa: BLE001 (as in peer_times)
        row["flex_error"] = first_line(error)
    ours = {}
    try:
        ours = run_ours_on_files(args, variant, work, with_grad=True)
    except RuntimeError as error:
        row["ours_grad_error"] = str(error)
        try:
            ours = run_ours_on_files(args, variant, work, with_grad=False)
        except RuntimeError as error:
            row["ours_error"] = str(error)
    row["errors"] = {}
    for name in CHECKED_TENSORS:
        entry = {}
        if name in ours:
            entry["ours"] = errors_against(reference[name], torch.from_numpy(ours[name]).to(DEVICE))
        if name in pytorch:
            entry["flex"] = errors_against(reference[name], pytorch[name])
        row["errors"][name] = entry
    row["passed"] = all("ours" in e and "flex" in e and e["ours"]["rel"] <= 2 * e["flex"]["rel"]
                        for e in row["errors"].values())
    return row


def check(args, variants, env) -> int:
    """--check: each variant at --check-shape per head dim; exit 1 unless all pass."""
    import warnings

    import numpy as np
    import torch

    import common
    batch, heads, seq = args.check_shape
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for dim in args.dims:
            torch.manual_seed(0)
            inputs = [torch.randn(batch, heads, seq, dim, device=DEVICE)
                      .to(torch.bfloat16).float() for _ in range(4)]
            for name, tensor in zip(("q", "k", "v", "dout"), inputs):
                np.save(work / f"{name}.npy", tensor.cpu().numpy())
            for variant in variants:
                # Eager flex_attention warns that it materialises the scores.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rows.append(check_variant(args, variant, work, inputs, dim))
                print(check_table(rows[-1:]).splitlines()[-1], flush=True)
                torch.cuda.empty_cache()
    text = (common.environment_line(env) + "\n\n"
            "Attention variants against FlexAttention in fp32 (eager) on the same bf16 "
            "inputs: max abs error (relative Frobenius error) of ours and of "
            "torch.compile(flex_attention) in bf16; pass: each of ours at most 2x PyTorch's\n\n"
            + check_table(rows))
    print("\n" + text)
    common.write_results(args.out, "bench_variants_check", {**env, "results": rows}, text)
    return 0 if all(r["passed"] for r in rows) else 1


def main() -> int:
    import common
    parser = build_parser(common.add_common_arguments)
    args = parser.parse_args()
    try:
        variants = chosen_variants(args)
        configurations(args.seqs, args.dims, common.TOKENS, common.HIDDEN)
        if min(args.check_shape) <= 0:
            raise ValueError("--check-shape sizes must be positive")
    except ValueError as error:
        parser.error(str(error))
    env = common.environment()
    print(common.environment_line(env), flush=True)
    configure_torch_compile()
    return check(args, variants, env) if args.check else bench(args, variants, env)


if __name__ == "__main__":
    sys.exit(main())
