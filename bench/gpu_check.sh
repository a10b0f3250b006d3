#!/usr/bin/env bash
# One call on a GPU machine: checks every generated kernel against fp64,
# compares accuracy with PyTorch SDPA, tunes (`fa-run tune` writes
# <kernels>/tuning.json, which every later run follows), and benchmarks
# against SDPA's flash and cuDNN backends, printing the tables last. The GPU machines have no MLIR, so
# fa-run and the kernel library are built here and carried:
#
#   rm -rf .carry && mkdir -p .carry/bin && cp build/bin/fa-run .carry/bin/ &&
#   cp -r build/kernels .carry/kernels      # .carry/ is git-ignored
#   (device) bash bench/gpu_check.sh .carry "$OUT"
set -uo pipefail
carry=${1:?usage: gpu_check.sh CARRY_DIR OUT_DIR}
out=${2:?usage: gpu_check.sh CARRY_DIR OUT_DIR}
fa_run="$carry/bin/fa-run"
kernels="$carry/kernels"
mkdir -p "$out"
# Eight files at most (the device tool brings back no more): the tools' output
# goes to logs.txt, the tuning table included (tuning.json holds its numbers).
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$out/device.txt"

echo "== correctness: every kernel of the library, fp64 reference"
status=0
{
  printf "| dtype | D | mask | seq | out rel | lse rel | result |\n|---|---|---|---|---|---|---|\n"
  for dtype in bf16 f16 f32; do
    for dim in 64 128; do
      for mask in full causal; do
        flag=""; [ "$mask" = causal ] && flag=--causal
        for seq in 1 17 128 1000 4096; do
          json=$("$fa_run" attention --batch 2 --heads 4 --kv-heads 2 --seq "$seq" --dim "$dim" \
                 --dtype "$dtype" $flag --check --kernels "$kernels" --json 2>&1)
          rc=$?
          if [[ "$json" == *"no kernel for"* ]]; then
            printf "| %s | %s | %s | %s | | | no kernel |\n" "$dtype" "$dim" "$mask" "$seq"
            continue
          fi
          [ $rc -ne 0 ] && status=1
          python3 - "$dtype" "$dim" "$mask" "$seq" "$rc" "$json" <<'PY'
import json, sys
dtype, dim, mask, seq, rc, text = sys.argv[1:]
try:
    r = json.loads(text)
    c = r.get("check", {})
    out_rel = c.get("out", {}).get("rel", float("nan"))
    lse_rel = c.get("lse", {}).get("rel", float("nan"))
    print(f"| {dtype} | {dim} | {mask} | {seq} | {out_rel:.2e} | {lse_rel:.2e} | "
          f"{'pass' if rc == '0' else 'FAIL'} |")
except Exception:
    print(f"| {dtype} | {dim} | {mask} | {seq} | | | FAIL: {text.strip()[-200:]} |")
PY
        done
      done
    done
  done
} | tee "$out/check.md"

echo "== accuracy next to PyTorch SDPA (same inputs, same dtype)"
python3 bench/compare_sdpa.py --fa-run "$fa_run" --kernels "$kernels" --out "$out" \
  >> "$out/logs.txt" 2>&1 || status=1
tail -3 "$out/logs.txt"

echo "== tuning: time every kernel of each group per seq_kv class; the cache picks the kernel from here on"
"$fa_run" tune --kernels "$kernels" >> "$out/logs.txt" 2>&1 || status=1
cp "$kernels/tuning.json" "$out/tuning.json" 2>/dev/null
grep -c '\*$' "$out/logs.txt" | sed 's/^/tuned classes: /'

echo "== speed next to PyTorch SDPA flash and cuDNN (bf16, 16k tokens, hidden 2048)"
python3 bench/bench_attention.py --fa-run "$fa_run" --kernels "$kernels" --out "$out" \
  >> "$out/logs.txt" 2>&1 || status=1
cat "$out/check.md" | grep -c pass | sed 's/^/check rows passing: /'
grep -v pass "$out/check.md" | tail -n +3
cat "$out/bench_attention.md" 2>/dev/null || tail -20 "$out/logs.txt"
exit $status
