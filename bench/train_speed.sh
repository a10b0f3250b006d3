#!/usr/bin/env bash
# fa-run train against PyTorch (eager and torch.compile, bench/train_pytorch.py)
# on one GPU, in one run: 100 steps each of the 85M model (12 x 768, seq 1024,
# batch 16) and the 10.8M one (6 x 384, seq 256, batch 64), tokens/s over
# steps 11-100. fa-run runs as it is by default, with --epilogues none (no
# GELU or bias gradients in cuBLASLt's products) and with --head-copies
# --epilogues none (q, k, v copied to [B, H, T, D] too: the step before both
# changes), each with --profile too (its step breakdown, 40 steps).
#   bench/train_speed.sh FA_RUN KERNELS DATA OUT_DIR
set -uo pipefail
fa_run=$1 kernels=$2 data=$3 out=$4
mkdir -p "$out"
declare -A models=(
  [85m]="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
  [11m]="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64")
declare -A variants=([default]="" [none]="--epilogues none"
  [before]="--head-copies --epilogues none")
for name in 85m 11m; do
  shape=${models[$name]}
  for variant in default none before; do
    # shellcheck disable=SC2086
    "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 100 \
      ${variants[$variant]} > "$out/fa_${name}_$variant.txt" 2>&1
    # shellcheck disable=SC2086
    "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 40 \
      ${variants[$variant]} --profile --profile-steps 10 \
      --profile-json "$out/profile_${name}_$variant.json" \
      > "$out/profile_${name}_$variant.txt" 2>&1
  done
  for mode in eager compile; do
    flag=$([ $mode = compile ] && echo --compile)
    # shellcheck disable=SC2086
    python3 "$(dirname "$0")/train_pytorch.py" --data "$data" $shape --steps 100 \
      --warmup 10 $flag --json "$out/pt_${name}_$mode.json" > "$out/pt_${name}_$mode.txt" 2>&1
  done
done
python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def fa(name):
    m = re.search(r"throughput: (\d+) tokens/s", (out / f"{name}.txt").read_text())
    return int(m.group(1)) if m else None
def pt(name):
    try:
        return json.loads((out / f"{name}.json").read_text()).get("tokens_per_s")
    except FileNotFoundError:
        return None
print("| model | fa-run | fa-run --epilogues none | fa-run --head-copies --epilogues none "
      "| PyTorch eager "
      "| torch.compile | fa-run / compile |")
print("|---|---|---|---|---|---|---|")
for name in ("85m", "11m"):
    f, h, e = (fa(f"fa_{name}_{v}") for v in ("default", "none", "before"))
    eager, compiled = pt(f"pt_{name}_eager"), pt(f"pt_{name}_compile")
    ratio = f"{f / compiled:.2f}x" if f and compiled else "-"
    print(f"| {name} | {f} | {h} | {e} | {eager and round(eager)} | "
          f"{compiled and round(compiled)} | {ratio} |")
PY
