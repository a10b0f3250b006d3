#!/usr/bin/env python3
"""Accuracy of fa-run's attention against PyTorch's own SDPA.

For each shape: random normal inputs rounded to the dtype, saved as .npy;
`fa-run attention --q --k --v --out --lse` runs our kernel on them; an fp64
reference is computed with torch on the upcast inputs; PyTorch SDPA runs on
the same inputs in the same dtype (FLASH_ATTENTION, else CUDNN_ATTENTION,
else EFFICIENT_ATTENTION, else MATH). A shape passes when our relative error
(||out - ref|| / ||ref||, Frobenius) is at most 2x PyTorch's, in every dtype,
and our lse is within 1e-3 relative of the reference (PyTorch exposes no lse
to compare). Shapes the kernel library has no kernel for are listed as such
and counted apart, never as passes.

    python3 bench/compare_sdpa.py --fa-run build/bin/fa-run --out bench/results
"""

import argparse
import itertools
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.nn.attention import SDPBackend

import common

BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION,
            SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
LSE_TOLERANCE = 1e-3
NO_KERNEL = "no kernel for"


def shapes(seqs, dtypes, dims=(64, 128)):
    """(batch, heads, kv_heads, seq_q, seq_kv, dim, causal, dtype): every
    dtype x head_dim x causal, each seq (plus seq_q != seq_kv pairs when 128
    and 1000 are both asked for), with 4 query heads over 4 (multi-head) or 2
    (grouped-query) kv heads."""
    pairs = [(n, n) for n in seqs]
    if 128 in seqs and 1000 in seqs:
        pairs += [(128, 1000), (1000, 128)]
    for (seq_q, seq_kv), dtype, dim, causal, kv_heads in itertools.product(
            pairs, dtypes, dims, (False, True), (4, 2)):
        yield 2, 4, kv_heads, seq_q, seq_kv, dim, causal, dtype


def reference_fp64(q, k, v, causal: bool):
    """out and lse of softmax(q k^T / sqrt(D)) v in float64, one head at a
    time to bound memory; causal is top-left aligned (j <= i)."""
    batch, heads, seq_q, dim = q.shape
    group = heads // k.shape[1]
    k = k.double().repeat_interleave(group, dim=1)
    v = v.double().repeat_interleave(group, dim=1)
    q = q.double()
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq_q, dtype=torch.float64, device=q.device)
    mask = torch.ones(seq_q, k.shape[2], dtype=torch.bool, device=q.device).triu(1)
    for b, h in itertools.product(range(batch), range(heads)):
        scores = (q[b, h] @ k[b, h].T) / math.sqrt(dim)
        if causal:
            scores.masked_fill_(mask, -math.inf)
        lse[b, h] = torch.logsumexp(scores, dim=-1)
        out[b, h] = torch.exp(scores - lse[b, h, :, None]) @ v[b, h]
    return out, lse


def relative_error(actual, reference) -> float:
    actual = actual.double()
    return (torch.linalg.vector_norm(actual - reference) /
            torch.linalg.vector_norm(reference)).item()


def run_ours(args, work: Path, q, k, v, causal: bool, dtype: str):
    """Our kernel through fa-run on .npy copies of q, k, v (as f32, which
    holds bf16/f16 values exactly)."""
    paths = {name: work / f"{name}.npy" for name in ("q", "k", "v", "out", "lse")}
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        np.save(paths[name], tensor.float().cpu().numpy())
    common.run_fa_run(args, ["--dtype", dtype, *(["--causal"] if causal else []),
                             *itertools.chain.from_iterable(
                                 (f"--{name}", str(path)) for name, path in paths.items())])

    def load(name):
        return torch.from_numpy(np.load(paths[name])).to(q.device)

    return load("out"), load("lse")


def compare_shape(args, work: Path, shape) -> dict:
    batch, heads, kv_heads, seq_q, seq_kv, dim, causal, dtype = shape
    torch_dtype = common.DTYPES[dtype]
    q = torch.randn(batch, heads, seq_q, dim, device="cuda").to(torch_dtype)
    k = torch.randn(batch, kv_heads, seq_kv, dim, device="cuda").to(torch_dtype)
    v = torch.randn(batch, kv_heads, seq_kv, dim, device="cuda").to(torch_dtype)
    row = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_q": seq_q,
           "seq_kv": seq_kv, "head_dim": dim, "causal": causal, "dtype": dtype}
    ref_out, ref_lse = reference_fp64(q, k, v, causal)
    backend, torch_out = common.first_working_backend(BACKENDS, q, k, v, causal)
    row["torch_backend"] = backend.name
    row["torch_rel"] = relative_error(torch_out, ref_out)
    try:
        out, lse = run_ours(args, work, q, k, v, causal, dtype)
    except RuntimeError as error:
        row.update(error=str(error), passed=False)
        return row
    row["ours_rel"] = relative_error(out, ref_out)
    row["ours_lse_rel"] = relative_error(lse, ref_lse)
    row["ratio"] = row["ours_rel"] / row["torch_rel"] if row["torch_rel"] else math.inf
    out_ok = row["ours_rel"] <= 2 * row["torch_rel"]
    row["passed"] = out_ok and row["ours_lse_rel"] <= LSE_TOLERANCE
    return row


def table(rows) -> str:
    lines = ["| dtype | D | causal | B | H | Hk | N | M | torch backend | ours rel | "
             "torch rel | ratio | ours lse rel | pass |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        shape = (f"| {r['dtype']} | {r['head_dim']} | {'yes' if r['causal'] else 'no'} | "
                 f"{r['batch']} | {r['heads']} | {r['kv_heads']} | {r['seq_q']} | "
                 f"{r['seq_kv']} | {r['torch_backend']} |")
        if NO_KERNEL in r.get("error", ""):
            lines.append(f"{shape} | {r['torch_rel']:.2e} | | | no kernel in the library |")
        elif "error" in r:
            lines.append(f"{shape} error | {r['torch_rel']:.2e} | | | FAIL: "
                         f"{r['error'].splitlines()[-1][-120:]} |")
        else:
            lines.append(f"{shape} {r['ours_rel']:.2e} | {r['torch_rel']:.2e} | "
                         f"{r['ratio']:.2f} | {r['ours_lse_rel']:.2e} | "
                         f"{'pass' if r['passed'] else 'FAIL'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_common_arguments(parser, default_out="bench/results")
    parser.add_argument("--seqs", type=int, nargs="+", default=[1, 17, 128, 1000, 4096],
                        help="sequence lengths (default: the issue's acceptance set)")
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 128],
                        help="head dims")
    parser.add_argument("--dtypes", nargs="+", choices=list(common.DTYPES),
                        default=list(common.DTYPES), help="element types")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for shape in shapes(args.seqs, args.dtypes, args.dims):
            rows.append(compare_shape(args, Path(work), shape))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print("\n" + text)
    common.write_results(args.out, "compare_sdpa", rows, text)
    missing = sum(NO_KERNEL in r.get("error", "") for r in rows)
    failed = sum(not r["passed"] for r in rows) - missing
    print(f"{len(rows) - failed - missing}/{len(rows)} shapes pass, {failed} fail, "
          f"{missing} have no kernel in the library")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
