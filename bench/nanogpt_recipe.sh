#!/usr/bin/env bash
# nanoGPT's train_shakespeare_char recipe (6 layers, 6 heads, 384 wide, block
# 256, batch 64, lr 1e-3 -> 1e-4 cosine over 5000 steps, warm-up 100,
# beta2 0.99, weight decay 0.1, clip 1, dropout 0.2) with fa-run train, and
# the same recipe in PyTorch (bench/train_pytorch.py, eager, SDPA) on the
# same GPU, then their curves in one PNG (needs matplotlib; skipped without).
# Validation: the whole held-out 10% (7 batches of 64 windows), every 250.
#   bench/nanogpt_recipe.sh FA_RUN KERNELS DATA OUT_DIR [STEPS]
set -euo pipefail
fa_run=$1 kernels=$2 data=$3 out=$4 steps=${5:-5000}
mkdir -p "$out"
recipe=(--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64 --steps "$steps"
  --lr 1e-3 --min-lr 1e-4 --warmup 100 --beta2 0.99 --weight-decay 0.1
  --grad-clip 1.0 --dropout 0.2 --eval-every 250 --eval-batches 200)
start=$(date +%s.%N)
"$fa_run" train --kernels "$kernels" --data "$data" "${recipe[@]}" \
  --log-every 250 --log "$out/fa-run.jsonl" > "$out/fa-run.txt"
end=$(date +%s.%N)
echo "fa-run train: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s wall" |
  tee -a "$out/fa-run.txt"
start=$(date +%s.%N)
python3 "$(dirname "$0")/train_pytorch.py" --data "$data" "${recipe[@]}" \
  --log-every 250 --json "$out/pytorch.json" > "$out/pytorch.txt"
end=$(date +%s.%N)
echo "pytorch eager: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s wall" |
  tee -a "$out/pytorch.txt"
python3 - "$out/fa-run.jsonl" "$out/pytorch.json" <<'PY' | tee "$out/summary.txt"
import json, sys
fa = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fa_val = [(e["step"], e["loss"], e["val_loss"]) for e in fa if "val_loss" in e]
pt = json.load(open(sys.argv[2]))["eval_curve"]
print("step | fa-run train | fa-run val | pytorch train | pytorch val")
for (s, l, v), (s2, l2, v2) in zip(fa_val, pt):
    print(f"{s} | {l:.4f} | {v:.4f} | {l2:.4f} | {v2:.4f}")
best = min(fa_val, key=lambda e: e[2]); best_pt = min(pt, key=lambda e: e[2])
print(f"best val: fa-run {best[2]:.4f} at step {best[0]}, pytorch {best_pt[2]:.4f} at step {best_pt[0]} (nanoGPT's README: 1.4697)")
PY
python3 "$(dirname "$0")/plot_training.py" "$out/fa-run.jsonl" --out "$out/loss.png" \
  --reference "$out/pytorch.json" --reference-label "PyTorch (same recipe)" \
  --target 1.4697 --target-label "nanoGPT README best val 1.4697" \
  --title "nanoGPT shakespeare_char recipe, dropout 0.2: fa-run train vs PyTorch" ||
  echo "no plot (matplotlib missing?)"
