#!/usr/bin/env python3
"""Data-parallel training on one node: correctness and throughput of every
gradient mode of `fa-run train` (naive, flat, overlap, zero1), in one run.

1. Equivalence: the single-GPU run of a global batch against N ranks of
   1/N of it, 50 steps, every mode: the largest relative difference of the
   per-step losses (the bar: 1e-3), and ZeRO-1's final f32 master weights
   against flat DDP's (from their checkpoints).
2. Throughput per GPU, same per-GPU batch: one GPU, then N ranks in every
   mode, for each model; the fraction of communication hidden by `overlap`:
   (t_flat - t_overlap) / (t_flat - t_single), step times. Optimizer-state
   memory per rank from each run's setup line.
3. PyTorch eager on the same model and data (bench/train_pytorch.py), single
   and DistributedDataParallel through torchrun, when torch is there.

    python3 bench/bench_distributed.py --gpus 2 --data tinyshakespeare.txt \
        --out bench/results/<date>-h200x2-ddp
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODES = ["naive", "flat", "overlap", "zero1"]
MODELS = {  # name: fa-run train options (head_dim 64)
    "10.8M": ["--layers", "6", "--d-model", "384", "--heads", "6", "--seq", "256"],
    "85M": ["--layers", "12", "--d-model", "768", "--heads", "12", "--seq", "256"],
}


def run(command, log: Path, env=None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    log.write_text(" ".join(command) + "\n" + result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {result.returncode}:\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def fa_train(args, name, model, batch, steps, extra, gpus=1):
    out = Path(args.out)
    command = [args.fa_run, "train", "--data", args.data, *MODELS[model], "--batch", str(batch),
               "--steps", str(steps), "--warmup", str(min(100, steps // 5)),
               "--log-every", str(steps), "--eval-every", str(steps), "--eval-batches", "4",
               "--log", str(out / f"{name}.jsonl"), *extra]
    if args.kernels:
        command += ["--kernels", args.kernels]
    if gpus > 1:
        command += ["--nproc-per-node", str(gpus)]
    text = run(command, out / f"{name}.txt")
    throughput = re.search(r"throughput: (\d+) tokens/s, (\d+) per GPU, ([\d.]+) ms/step", text)
    state = re.search(r"optimizer state \(f32 weights and moments\) ([\d.]+) GiB per rank", text)
    losses = [json.loads(line)["loss"] for line in (out / f"{name}.jsonl").read_text().splitlines()]
    return {"tokens_per_s": float(throughput.group(1)) if throughput else None,
            "tokens_per_s_per_gpu": float(throughput.group(2)) if throughput else None,
            "ms_per_step": float(throughput.group(3)) if throughput else None,
            "optimizer_state_gib": float(state.group(1)) if state else None,
            "losses": losses}


def read_checkpoint(path: Path) -> np.ndarray:
    """The f32 master weights of an fa-run checkpoint (Checkpoint.h)."""
    data = path.read_bytes()
    magic = b"FA-CHECKPOINT 1\n"
    assert data.startswith(magic), path
    (header_length,) = struct.unpack_from("<Q", data, len(magic))
    start = len(magic) + 8
    header = json.loads(data[start:start + header_length])
    count = header["arrays"]["parameters"]
    offset = start + header_length
    return np.frombuffer(data, dtype="<f4", count=count, offset=offset)


def compare_weights(flat_path: Path, zero_path: Path) -> dict:
    flat, zero = read_checkpoint(flat_path), read_checkpoint(zero_path)
    return {"max_abs": float(np.max(np.abs(flat - zero))),
            "rel_l2": float(np.linalg.norm(flat - zero) / np.linalg.norm(flat)),
            "identical": bool(np.array_equal(flat, zero))}


def relative_differences(reference, other):
    return max(abs(a - b) / abs(a) for a, b in zip(reference, other))


def equivalence(args):
    steps, batch = 50, 8 * args.gpus
    out = Path(args.out)
    single = fa_train(args, "equiv-single", "10.8M", batch, steps,
                      ["--checkpoint", str(out / "equiv-single.ckpt")])
    rows = []
    for mode in MODES:
        run_ = fa_train(args, f"equiv-{mode}", "10.8M", batch // args.gpus, steps,
                        ["--ddp", mode, "--checkpoint", str(out / f"equiv-{mode}.ckpt")],
                        gpus=args.gpus)
        rows.append({"mode": mode,
                     "max_rel_loss_diff": relative_differences(single["losses"], run_["losses"]),
                     "final_loss": run_["losses"][-1]})
    params = {"after_50_steps": compare_weights(out / "equiv-flat.ckpt", out / "equiv-zero1.ckpt")}
    # After one step, before bf16 training's chaos amplifies the last bits
    # in which the two sum the gradients' squares differently.
    for mode in ("flat", "zero1"):
        fa_train(args, f"equiv-{mode}-1step", "10.8M", batch // args.gpus, steps,
                 ["--ddp", mode, "--stop-at", "1", "--checkpoint", str(out / f"equiv-{mode}-1step.ckpt")],
                 gpus=args.gpus)
    params["after_1_step"] = compare_weights(out / "equiv-flat-1step.ckpt",
                                             out / "equiv-zero1-1step.ckpt")
    for ckpt in out.glob("equiv-*.ckpt"):
        ckpt.unlink()
    return {"steps": steps, "global_batch": batch, "single_final_loss": single["losses"][-1],
            "modes": rows, "parameters": params}


def pytorch_runs(args, model, batch, steps):
    script = str(REPO / "bench" / "train_pytorch.py")
    options = ["--data", args.data, *MODELS[model], "--batch", str(batch), "--steps", str(steps),
               "--warmup", str(min(100, steps // 5))]
    results = {}
    for gpus in sorted({1, args.gpus}):
        json_out = Path(args.out) / f"torch-{model}-{gpus}gpu.json"
        if gpus == 1:
            command = [sys.executable, script, *options, "--json", str(json_out)]
        else:
            command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                       "--nproc-per-node", str(gpus), script, *options, "--json", str(json_out)]
        try:
            run(command, Path(args.out) / f"torch-{model}-{gpus}gpu.txt")
            results[gpus] = json.loads(json_out.read_text())
        except RuntimeError as error:
            results[gpus] = {"error": str(error)[-500:]}
    return results


def throughput(args):
    table = {}
    for model in args.models:
        batch, steps = args.batch[model], args.steps
        single = fa_train(args, f"tput-{model}-single", model, batch, steps, [])
        entry = {"batch_per_gpu": batch, "single": single, "modes": {}}
        for mode in args.modes:
            if mode != "overlap":
                entry["modes"][mode] = fa_train(args, f"tput-{model}-{mode}", model, batch,
                                                steps, ["--ddp", mode], gpus=args.gpus)
                continue
            for mb in args.bucket_mb:
                name = "overlap" if len(args.bucket_mb) == 1 else f"overlap {mb:g} MB"
                entry["modes"][name] = fa_train(
                    args, f"tput-{model}-overlap-{mb:g}MB", model, batch, steps,
                    ["--ddp", "overlap", "--bucket-mb", str(mb)], gpus=args.gpus)
        overlaps = [run_ for name, run_ in entry["modes"].items() if name.startswith("overlap")]
        t1 = single["ms_per_step"]
        tf = entry["modes"]["flat"]["ms_per_step"] if "flat" in entry["modes"] else None
        to = min(run_["ms_per_step"] for run_ in overlaps) if overlaps else None
        # With one rank there is nothing to hide: the modes only add their
        # NCCL plumbing (a world of one).
        entry["hidden_fraction"] = ((tf - to) / (tf - t1)
                                    if args.gpus > 1 and tf and to and tf > t1 else None)
        if args.torch:
            entry["pytorch"] = pytorch_runs(args, model, batch, steps)
        for run_ in [single, *entry["modes"].values()]:
            run_.pop("losses")
        table[model] = entry
    return table


def equivalence_markdown(eq, gpus) -> list:
    lines = [f"Equivalence: 10.8M model, global batch {eq['global_batch']}, {eq['steps']} steps, "
             f"1 GPU vs {gpus} ranks", "", "| mode | max relative loss difference | final loss |",
             "|---|---|---|", f"| 1 GPU | - | {eq['single_final_loss']:.5f} |"]
    for row in eq["modes"]:
        lines.append(f"| {row['mode']} | {row['max_rel_loss_diff']:.2e} | {row['final_loss']:.5f} |")
    lines.append("")
    for when, p in eq["parameters"].items():
        lines.append(f"ZeRO-1 vs flat DDP f32 master weights {when.replace('_', ' ')}: max |diff| "
                     f"{p['max_abs']:.3e}, relative L2 {p['rel_l2']:.3e}, identical: {p['identical']}")
    return lines + [""]


def gib(value) -> str:
    return f"{value:.3f}" if value is not None else "n/a"


def markdown(results, gpus) -> str:
    lines = [f"Device: {', '.join(results['device'])}", ""]
    if results["equivalence"]:
        lines += equivalence_markdown(results["equivalence"], gpus)
    for model, entry in results["throughput"].items():
        single = entry["single"]
        lines += [f"Throughput, {model} model, batch {entry['batch_per_gpu']} x seq 256 per GPU "
                  f"(tokens/s per GPU; scaling = per-GPU rate / 1 GPU's)", "",
                  "| run | tokens/s per GPU | scaling | ms/step | optimizer state per rank (GiB) |",
                  "|---|---|---|---|---|",
                  f"| fa, 1 GPU | {single['tokens_per_s_per_gpu']:.0f} | 1.00 | {single['ms_per_step']:.2f} | "
                  f"{gib(single['optimizer_state_gib'])} |"]
        for mode, run_ in entry["modes"].items():
            lines.append(f"| fa, {gpus} GPUs, {mode} | {run_['tokens_per_s_per_gpu']:.0f} | "
                         f"{run_['tokens_per_s_per_gpu'] / single['tokens_per_s_per_gpu']:.2f} | "
                         f"{run_['ms_per_step']:.2f} | {gib(run_['optimizer_state_gib'])} |")
        for g, torch_run in sorted(entry.get("pytorch", {}).items()):
            if "error" in torch_run:
                lines.append(f"| PyTorch eager, {g} GPU(s) | failed | | | |")
            else:
                lines.append(f"| PyTorch eager, {g} GPU(s) | {torch_run['tokens_per_s_per_gpu']:.0f} | "
                             f"{torch_run['tokens_per_s_per_gpu'] / single['tokens_per_s_per_gpu']:.2f} (of fa 1 GPU) | "
                             f"{torch_run['ms_per_step']:.2f} | |")
        hidden = entry["hidden_fraction"]
        lines += ["", "Communication hidden by overlap (its best bucket size): " +
                  (f"{hidden:.0%}" if hidden is not None
                   else "n/a (one rank, or flat no slower than one GPU)"), ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fa-run", default=str(REPO / "build" / "bin" / "fa-run"))
    parser.add_argument("--kernels", default=None)
    parser.add_argument("--data", required=True)
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--steps", type=int, default=60, help="steps of each throughput run")
    parser.add_argument("--torch", action="store_true", help="also run bench/train_pytorch.py")
    parser.add_argument("--skip-equivalence", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--modes", nargs="+", default=MODES, choices=MODES,
                        help="modes of the throughput runs")
    parser.add_argument("--bucket-mb", type=float, nargs="+", default=[25.0],
                        help="bucket sizes of the overlap runs (one run each)")
    args = parser.parse_args()
    args.batch = {"10.8M": 64, "85M": 32}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    results = {"gpus": args.gpus,
               "device": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                         "--format=csv,noheader"], capture_output=True,
                                        text=True).stdout.strip().splitlines()}
    results["equivalence"] = None if args.skip_equivalence else equivalence(args)
    results["throughput"] = {} if args.skip_throughput else throughput(args)
    (Path(args.out) / "distributed.json").write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results, args.gpus)
    (Path(args.out) / "distributed.md").write_text(text + "\n")
    print(text)
    bad = [r for r in (results["equivalence"] or {}).get("modes", [])
           if r["max_rel_loss_diff"] > 1e-3]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
