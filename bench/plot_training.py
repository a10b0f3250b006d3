#!/usr/bin/env python3
"""The loss curve of an `fa-run train --log FILE` run: training loss (and its
moving average) and validation loss against the step, as a PNG, plus a
one-line summary. Needs matplotlib only.

    python3 bench/plot_training.py run.jsonl --out bench/results/.../loss.png \
        --title "GPT 10.7M, Tiny Shakespeare, H100"
"""
import argparse
import json
import sys
from pathlib import Path


def read_log(path: Path):
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not entries:
        raise SystemExit(f"plot_training: {path} holds no steps")
    return entries


def moving_average(values, window):
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="the JSON lines of fa-run train --log")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--title", default="fa-run train")
    parser.add_argument("--reference", type=Path,
                        help="a bench/train_pytorch.py --json result whose eval_curve "
                             "(training and validation loss at each evaluation) is drawn too")
    parser.add_argument("--reference-label", default="PyTorch")
    parser.add_argument("--target", type=float, default=1.7,
                        help="a horizontal line at this loss (0: none)")
    parser.add_argument("--target-label", default="1.7 nats/byte")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = read_log(args.log)
    steps = [e["step"] for e in entries]
    losses = [e["loss"] for e in entries]
    val = [(e["step"], e["val_loss"]) for e in entries if "val_loss" in e]
    figure, axis = plt.subplots(figsize=(8, 5))
    axis.plot(steps, losses, color="tab:blue", alpha=0.25, label="training loss")
    axis.plot(steps, moving_average(losses, 50), color="tab:blue",
              label="training loss (50-step mean)")
    if val:
        axis.plot(*zip(*val), "o-", color="tab:red", label="validation loss")
        best = min(val, key=lambda sv: sv[1])
        axis.annotate(f"best {best[1]:.4f} (step {best[0]})", best,
                      textcoords="offset points", xytext=(0, -18), ha="center",
                      color="tab:red")
    if args.reference:
        curve = json.loads(args.reference.read_text()).get("eval_curve") or []
        if not curve:
            raise SystemExit(f"plot_training: {args.reference} has no eval_curve")
        ref_steps = [c[0] for c in curve]
        axis.plot(ref_steps, [c[1] for c in curve], "s--", color="tab:green",
                  markersize=3, label=f"{args.reference_label} training loss")
        axis.plot(ref_steps, [c[2] for c in curve], "s-", color="tab:orange",
                  markersize=3, label=f"{args.reference_label} validation loss")
    if args.target > 0:
        axis.axhline(args.target, color="gray", linestyle="--", linewidth=1,
                     label=args.target_label)
    axis.set_xlabel("step")
    axis.set_ylabel("cross-entropy (nats/byte)")
    axis.set_title(args.title)
    axis.grid(alpha=0.3)
    axis.legend()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=120, bbox_inches="tight")
    last_val = f", final validation loss {val[-1][1]:.4f} at step {val[-1][0]}" if val else ""
    print(f"{len(entries)} steps, final training loss {losses[-1]:.4f}{last_val}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
