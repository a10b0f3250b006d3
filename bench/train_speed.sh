#!/usr/bin/env bash
# fa-run train against PyTorch (eager and torch.compile, bench/train_pytorch.py)
# on one GPU, in one run: 100 steps each of the 85M model (12 x 768, seq 1024,
# batch 16) and the 10.8M one (6 x 384, seq 256, batch 64), tokens/s over
# steps 11-100; fa-run also with --unfused-epilogues (GELU and bias gradients
# as kernels of their own) and with --profile (its step breakdown).
#   bench/train_speed.sh FA_RUN KERNELS DATA OUT_DIR
set -uo pipefail
fa_run=$1 kernels=$2 data=$3 out=$4
mkdir -p "$out"
declare -A models=(
  [85m]="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
  [11m]="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64")
for name in 85m 11m; do
  shape=${models[$name]}
  # shellcheck disable=SC2086
  "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 100 \
    > "$out/fa_$name.txt" 2>&1
  "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 100 \
    --unfused-epilogues > "$out/fa_${name}_unfused.txt" 2>&1
  "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 40 \
    --profile --profile-steps 10 --profile-json "$out/profile_$name.json" \
    > "$out/profile_$name.txt" 2>&1
  "$fa_run" train --kernels "$kernels" --data "$data" $shape --steps 40 \
    --unfused-epilogues --profile --profile-steps 10 \
    --profile-json "$out/profile_${name}_unfused.json" \
    > "$out/profile_${name}_unfused.txt" 2>&1
  for mode in eager compile; do
    flag=$([ $mode = compile ] && echo --compile)
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
    try: return json.loads((out / f"{name}.json").read_text()).get("tokens_per_s")
    except FileNotFoundError: return None
print("| model | fa-run | fa-run unfused | PyTorch eager | torch.compile | fa-run / compile |")
print("|---|---|---|---|---|---|")
for name in ("85m", "11m"):
    f, u, e, c = fa(f"fa_{name}"), fa(f"fa_{name}_unfused"), pt(f"pt_{name}_eager"), pt(f"pt_{name}_compile")
    ratio = f"{f / c:.2f}x" if f and c else "-"
    print(f"| {name} | {f} | {u} | {e and round(e)} | {c and round(c)} | {ratio} |")
PY
