#!/usr/bin/env bash
# Issue 18's GPU checks in one call on a GPU machine:
#  1. requests no GPU (or host) can hold fail at once, naming the bytes needed
#     and free: attention, LayerNorm and training, each timed;
#  2. LayerNorm with eps 1e-5 (the default), 1e-6 and 1e-12 against fp64, the
#     eps now a kernel parameter, on row lengths that take every kind of
#     kernel (resident, persistent, looped);
#  3. LayerNorm GB/s (bf16, M = 32768, forward and backward) of this build
#     against the build before eps became a parameter (OLD_CARRY: its fa-run
#     and kernel library), interleaved, twice, in the same run.
# The GPU machines have no MLIR, so both builds are carried:
#
#   scripts/pack_carry.sh                          # .carry/ (this build)
#   (device) bash bench/gpu_hardening_check.sh .carry .carry-old "$OUT"
#
# Writes OUT/hardening.md (the tables) and OUT/logs.txt.
set -uo pipefail
usage="usage: gpu_hardening_check.sh CARRY_DIR OLD_CARRY_DIR OUT_DIR"
carry=${1:?$usage}
old=${2:?$usage}
out=${3:?$usage}
mkdir -p "$out"
report="$out/hardening.md"
log="$out/logs.txt"
: > "$report"
: > "$log"
status=0

# timed NAME ARGS...: runs fa-run ARGS, expecting a clear refusal; records
# the wall time, the exit code and the message.
timed() {
  local name=$1
  shift
  local start end message rc
  start=$(date +%s%N)
  message=$("$carry/bin/fa-run" "$@" 2>&1)
  rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  printf "| %s | %s | %d ms | %s |\n" "$name" "$rc" "$ms" "$message" >> "$report"
  echo "$name: fa-run $*" >> "$log"
  if [ "$rc" = 0 ] || [ "$ms" -ge 1000 ] || [[ "$message" != *needs*free* && "$message" != *needs*available* ]]; then
    echo "FAILED: $name (exit $rc, $ms ms)" | tee -a "$log"
    status=1
  fi
}

{
  echo "## Oversized requests (fa-run exits 1 at once)"
  echo
  echo "| request | exit | wall | message |"
  echo "|---|---|---|---|"
} >> "$report"
timed "attention B64 H32 N65536 D128 bf16 --bench" attention --batch 64 --heads 32 \
  --seq 65536 --dim 128 --dtype bf16 --bench --kernels "$carry/kernels"
timed "attention B64 H32 N65536 D128 bf16 --grad --check" attention --batch 64 \
  --heads 32 --seq 65536 --dim 128 --dtype bf16 --grad --check --kernels "$carry/kernels"
timed "layernorm 4194304 x 65536 bf16 --grad --check" layernorm --rows 4194304 --cols 65536 --check \
  --dtype bf16 --grad --kernels "$carry/kernels"
timed "layernorm 2^22 x 4096 f32 --grad --bench" layernorm --rows 4194304 --cols 4096 \
  --dtype f32 --grad --bench --kernels "$carry/kernels"
timed "train 4 x 2048, batch 256 x seq 4096" train --layers 4 --d-model 2048 --heads 16 \
  --seq 4096 --batch 256 --steps 10 --kernels "$carry/kernels"
timed "train 96 x 12288 (175B), batch 64 x seq 2048" train --layers 96 --d-model 12288 \
  --heads 96 --seq 2048 --batch 64 --steps 10 --kernels "$carry/kernels"

{
  echo
  echo "## LayerNorm eps as a kernel parameter, against fp64"
  echo
  echo "| dtype | rows x cols | eps | y rel | dx rel | result |"
  echo "|---|---|---|---|---|---|"
} >> "$report"
for dtype in bf16 f16 f32; do
  for shape in "4099 100" "20001 300" "1001 1024" "301 4096" "37 65536"; do
    set -- $shape
    for eps in 1e-5 1e-6 1e-12; do
      json=$("$carry/bin/fa-run" layernorm --rows "$1" --cols "$2" --dtype "$dtype" \
             --eps "$eps" --grad --check --json --kernels "$carry/kernels" 2>>"$log")
      rc=$?
      python3 - "$dtype" "$1x$2" "$eps" "$rc" "$json" >> "$report" <<'PY' || status=1
import json, sys
dtype, shape, eps, rc, text = sys.argv[1:6]
try:
    check = json.loads(text)["check"]
except Exception:
    print(f"| {dtype} | {shape} | {eps} | | | FAILED (exit {rc}) |")
    sys.exit(1)
def rel(name):
    return check["outputs"].get(name, {}).get("rel", float("nan"))
passed = rc == "0" and check.get("passed", False)
print(f"| {dtype} | {shape} | {eps} | {rel('y'):.2e} | {rel('dx'):.2e} | {'pass' if passed else 'FAIL'} |")
sys.exit(0 if passed else 1)
PY
    done
  done
done

# bench LABEL FA_RUN KERNELS COLS [--eps E]: one JSON line of GB/s.
bench() {
  local label=$1 fa_run=$2 kernels=$3 cols=$4
  shift 4
  local json
  json=$("$fa_run" layernorm --rows 32768 --cols "$cols" --dtype bf16 --grad --bench \
         --runs 200 --json --kernels "$kernels" "$@" 2>>"$log")
  python3 - "$label" "$cols" "$json" <<'PY'
import json, sys
label, cols, text = sys.argv[1:4]
try:
    r = json.loads(text)
    print(json.dumps({"build": label, "cols": int(cols),
                      "fwd": r["bench"]["forward"]["gbps"], "bwd": r["bench"]["backward"]["gbps"]}))
except Exception as e:
    print(json.dumps({"build": label, "cols": int(cols), "error": str(e)}))
PY
}
gbps="$out/layernorm_gbps.jsonl"
: > "$gbps"
for round in 1 2; do
  for cols in 1024 2048 4096 8192; do
    bench before "$old/fa-run" "$old/kernels" "$cols" >> "$gbps"
    bench after "$carry/bin/fa-run" "$carry/kernels" "$cols" >> "$gbps"
    bench "after eps 1e-6" "$carry/bin/fa-run" "$carry/kernels" "$cols" --eps 1e-6 >> "$gbps"
  done
done
python3 - "$gbps" >> "$report" <<'PY'
import json, sys, collections
rows = [json.loads(line) for line in open(sys.argv[1])]
best = collections.defaultdict(list)
for r in rows:
    if "error" not in r:
        best[(r["build"], r["cols"])].append((r["fwd"], r["bwd"]))
print("\n## LayerNorm GB/s, bf16, M = 32768 (two interleaved rounds: first / second)\n")
print("| N | before fwd | after fwd | after eps 1e-6 fwd | before bwd | after bwd | after eps 1e-6 bwd |")
print("|---|---|---|---|---|---|---|")
for cols in sorted({r["cols"] for r in rows}):
    def cell(build, i):
        return " / ".join(f"{v[i]:.0f}" for v in best[(build, cols)]) or "error"
    print(f"| {cols} | {cell('before', 0)} | {cell('after', 0)} | {cell('after eps 1e-6', 0)} "
          f"| {cell('before', 1)} | {cell('after', 1)} | {cell('after eps 1e-6', 1)} |")
PY
cat "$report"
exit $status
