#!/usr/bin/env bash
# One call on a GPU machine checks and benchmarks the generated kernels,
# printing the tables last. WHAT picks the kernels:
#  - attention (the default): checks every attention kernel against fp64,
#    compares accuracy with PyTorch SDPA, tunes (`fa-run tune` writes
#    <kernels>/tuning.json, which every later run follows), and benchmarks
#    against SDPA's flash and cuDNN backends;
#  - layernorm: checks the LayerNorm kernels (forward, and backward with
#    --grad) against fp64 and benchmarks them against PyTorch's layer_norm;
#  - attention_grad: checks the attention backward of every group (`fa-run
#    attention --grad --check`: out, lse, dq, dk, dv) against fp64 and
#    benchmarks it against the backward of SDPA's flash and cuDNN backends
#    (5 files: device.txt, check_attention_grad.md, bench_attention_bwd.md
#    and .json, logs.txt);
#  - compare: bench/compare_kernels.py, generated vs hand-written
#    (fa-handwritten, carried as CARRY_DIR/bin/fa-handwritten) vs PyTorch on
#    attention forward, backward and LayerNorm (device.txt, logs.txt,
#    compare_kernels.json and .md, three PNG plots); COMPARE_WHAT (default:
#    all three) passes --what to split it over calls;
#  - all: the first three. That writes 14 files, more than the device tool
#    brings back (8): through the tool, run the modes in separate calls.
# The GPU machines have no MLIR, so fa-run and the kernel library are built
# here and carried:
#
#   scripts/pack_carry.sh                   # .carry/ is git-ignored
#   (device) bash bench/gpu_check.sh .carry "$OUT" [attention|layernorm|all]
set -uo pipefail
usage="usage: gpu_check.sh CARRY_DIR OUT_DIR [attention|layernorm|attention_grad|compare|all]"
carry=${1:?$usage}
out=${2:?$usage}
what=${3:-attention}
case "$what" in
  attention|layernorm|attention_grad|compare|all) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
fa_run="$carry/bin/fa-run"
kernels="$carry/kernels"
mkdir -p "$out"
# Few files (the device tool brings back no more than 8): the tools' output
# goes to logs.txt, the tuning table included (tuning.json holds its numbers).
export PYTHONUNBUFFERED=1
status=0

attention_checks() {
  echo "== correctness: every attention kernel of the library, fp64 reference"
  {
    printf "| dtype | D | mask | seq | out rel | lse rel | result |\n|---|---|---|---|---|---|---|\n"
    for dtype in bf16 f16 f32; do
      for dim in 32 64 96 128 256; do
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
  # The loop ran in the pipeline's subshell: its failures are read back here.
  grep -q FAIL "$out/check.md" && status=1

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
}

attention_tables() {
  cat "$out/check.md" | grep -c pass | sed 's/^/check rows passing: /'
  grep -v pass "$out/check.md" | tail -n +3
  cat "$out/bench_attention.md" 2>/dev/null || tail -20 "$out/logs.txt"
}

# One row of check_layernorm.md from `fa-run layernorm --check --json`.
layernorm_row() {
  python3 - "$@" <<'PY'
import json, sys
dtype, mode, rows, cols, rc, text = sys.argv[1:]
names = ["y", "mean", "rstd", "dx", "dweight", "dbias"]
try:
    r = json.loads(text)
    outputs = r["check"]["outputs"]
    errors = [f"{outputs[n]['rel']:.2e}" + ("" if outputs[n]["passed"] else " (!)")
              if n in outputs else "" for n in names]
    kernels = r["kernels"]["forward"]["name"]
    if "backward" in r["kernels"]:
        kernels += ", " + r["kernels"]["backward"]["name"]
    result = "pass" if rc == "0" else "FAIL"
except Exception:
    errors, kernels = [""] * len(names), ""
    result = "FAIL: " + text.strip().replace("\n", " ")[-200:]
print(f"| {dtype} | {mode} | {rows} | {cols} | " + " | ".join(errors) +
      f" | {kernels} | {result} |")
PY
}

layernorm_checks() {
  echo "== correctness: LayerNorm kernels, forward and backward, fp64 reference"
  {
    printf "| dtype | mode | rows | N | y rel | mean rel | rstd rel | dx rel | dweight rel | dbias rel | kernels | result |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    for dtype in bf16 f16 f32; do
      for mode in fwd grad; do
        flag=""; [ "$mode" = grad ] && flag=--grad
        for cols in 1 100 1024 4096 8192 65536; do
          # 1000 x 65536 would spend seconds in the CPU reference for little.
          row_counts="37 1000"; [ "$cols" -gt 8192 ] && row_counts=37
          for rows in $row_counts; do
            json=$("$fa_run" layernorm --rows "$rows" --cols "$cols" --dtype "$dtype" $flag \
                   --check --kernels "$kernels" --json 2>&1)
            rc=$?
            if [[ "$json" == *"fa-run: no layernorm_"*" kernel"* ]]; then
              printf "| %s | %s | %s | %s | | | | | | | | no kernel: %s |\n" \
                "$dtype" "$mode" "$rows" "$cols" "$(echo "$json" | head -1 | cut -c1-200)"
              continue
            fi
            layernorm_row "$dtype" "$mode" "$rows" "$cols" "$rc" "$json"
          done
        done
      done
    done
  } | tee "$out/check_layernorm.md"
  grep -q FAIL "$out/check_layernorm.md" && status=1

  echo "== speed next to PyTorch layer_norm (bf16, 32768 rows)"
  python3 bench/bench_layernorm.py --fa-run "$fa_run" --kernels "$kernels" --out "$out" \
    >> "$out/logs.txt" 2>&1 || status=1
}

# check_tables WHAT CHECK BENCH: how many rows of the check table CHECK
# passed, the others, then the benchmark table BENCH (or the log's end).
check_tables() {
  grep -c '| pass |$' "$out/$2" | sed "s/^/$1 check rows passing: /"
  grep -v '| pass |$' "$out/$2" | tail -n +3
  cat "$out/$3" 2>/dev/null || tail -20 "$out/logs.txt"
}

layernorm_tables() {
  check_tables layernorm check_layernorm.md bench_layernorm.md
}

# One row of check_attention_grad.md from `fa-run attention --grad --check
# --json`.
attention_grad_row() {
  python3 - "$@" <<'PY'
import json, sys
dtype, dim, mask, seq, rc, text = sys.argv[1:]
try:
    # The report, then (when the check fails) fa-run's message on stderr.
    c = json.JSONDecoder().raw_decode(text.lstrip())[0]["check"]
    g = c["gradients"]
    errors = [f"{c[n]['rel']:.2e}" for n in ("out", "lse")] + \
             [f"{g[n]['rel']:.2e}" + ("" if g[n]["nan"] == 0 else f" ({g[n]['nan']} NaN)")
              for n in ("dq", "dk", "dv")]
    result = "pass" if rc == "0" else "FAIL"
except Exception:
    errors = [""] * 5
    result = "FAIL: " + text.strip().replace("\n", " ")[-200:]
print(f"| {dtype} | {dim} | {mask} | {seq} | " + " | ".join(errors) + f" | {result} |")
PY
}

attention_grad_checks() {
  echo "== correctness: the attention backward of every group, fp64 reference"
  {
    printf "| dtype | D | mask | seq | out rel | lse rel | dq rel | dk rel | dv rel | result |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|\n"
    for dtype in bf16 f16 f32; do
      for dim in 32 64 96 128 256; do
        for mask in full causal; do
          flag=""; [ "$mask" = causal ] && flag=--causal
          for seq in 1 17 128 1000; do
            json=$("$fa_run" attention --batch 2 --heads 4 --kv-heads 2 --seq "$seq" --dim "$dim" \
                   --dtype "$dtype" $flag --grad --check --kernels "$kernels" --json 2>&1)
            rc=$?
            if [[ "$json" == *"no kernel for"* ]]; then
              printf "| %s | %s | %s | %s | | | | | | no kernel: %s |\n" \
                "$dtype" "$dim" "$mask" "$seq" "$(echo "$json" | head -1 | cut -c1-200)"
              continue
            fi
            attention_grad_row "$dtype" "$dim" "$mask" "$seq" "$rc" "$json"
          done
        done
      done
    done
  } | tee "$out/check_attention_grad.md"
  grep -q FAIL "$out/check_attention_grad.md" && status=1

  echo "== speed next to the backward of PyTorch SDPA flash and cuDNN (bf16, 16k tokens, hidden 2048)"
  python3 bench/bench_attention_bwd.py --fa-run "$fa_run" --kernels "$kernels" --out "$out" \
    >> "$out/logs.txt" 2>&1 || status=1
}

attention_grad_tables() {
  check_tables "attention backward" check_attention_grad.md bench_attention_bwd.md
}

compare_checks() {
  echo "== generated vs hand-written vs PyTorch (compare_kernels.py)"
  # shellcheck disable=SC2086 # COMPARE_WHAT is a list of words.
  python3 bench/compare_kernels.py --fa-run "$fa_run" --fa-handwritten "$carry/bin/fa-handwritten" \
    --kernels "$kernels" --out "$out" ${COMPARE_WHAT:+--what $COMPARE_WHAT} \
    >> "$out/logs.txt" 2>&1 || status=1
}

compare_tables() {
  cat "$out/compare_kernels.md" 2>/dev/null || tail -20 "$out/logs.txt"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$out/device.txt"

runs() { [ "$what" = "$1" ] || { [ "$what" = all ] && [ "$1" != compare ]; }; }
runs attention && attention_checks
runs layernorm && layernorm_checks
runs attention_grad && attention_grad_checks
runs compare && compare_checks
runs attention && attention_tables
runs layernorm && layernorm_tables
runs attention_grad && attention_grad_tables
runs compare && compare_tables
exit $status
