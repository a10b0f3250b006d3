#!/usr/bin/env bash
# Trains examples/torch_gpt.py (the 85M GPT, 200 steps by default) with each
# attention {fa, sdpa-flash, sdpa-cudnn} in each mode {eager, compile}, in one
# run on one GPU, and tables tokens/s, ms/step, MFU, the final loss and the
# largest per-step loss difference from fa's run of the same mode (same seed,
# so same weights and batches: only the kernels differ).
#
#   PYTHONPATH=python bench/torch_gpt_table.sh [--out DIR] [torch_gpt.py args...]
#
# Writes DIR/<attn>-<mode>.json and .log, and DIR/torch_gpt_table.md
# (default DIR: bench/results/torch_gpt). Extra arguments go to every run
# (e.g. --steps 100, --data PATH). A failed run is reported in the table and
# makes the script exit 1 after the others have run.
set -uo pipefail

cd "$(dirname "$0")/.."
OUT=bench/results/torch_gpt
if [[ "${1:-}" == "--out" ]]; then
  if [[ -z "${2:-}" ]]; then
    echo "error: --out needs a directory" >&2
    exit 2
  fi
  OUT=$2
  shift 2
fi
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"

failed=()
for mode in eager compile; do
  for attn in fa sdpa-flash sdpa-cudnn; do
    name="$attn-$mode"
    flags=(--attn "$attn" --steps 200 --json "$OUT/$name.json")
    [[ $mode == compile ]] && flags+=(--compile)
    echo "=== $name: $PYTHON examples/torch_gpt.py ${flags[*]} $*"
    rm -f "$OUT/$name.json"
    start=$SECONDS
    if ! "$PYTHON" examples/torch_gpt.py "${flags[@]}" "$@" 2>&1 | tee "$OUT/$name.log"; then
      echo "=== $name FAILED (log: $OUT/$name.log)" >&2
      failed+=("$name")
    fi
    echo "=== $name took $((SECONDS - start)) s"
  done
done

"$PYTHON" - "$OUT" <<'EOF'
"""Tables the runs' JSONs: one row per (mode, attention)."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
runs = {}
for mode in ("eager", "compile"):
    for attn in ("fa", "sdpa-flash", "sdpa-cudnn"):
        path = out / f"{attn}-{mode}.json"
        runs[attn, mode] = json.loads(path.read_text()) if path.is_file() else None

first = next((r for r in runs.values() if r), None)
lines = []
if first:
    c = first["config"]
    lines += [f"examples/torch_gpt.py on {first['device']}, torch {first['torch']} "
              f"(CUDA {first['cuda']}): {first['parameters'] / 1e6:.1f}M parameters, "
              f"layers {c['layers']}, d_model {c['d_model']}, heads {c['heads']}, "
              f"seq {c['seq']}, batch {c['batch']}, {c['steps']} steps, seed {c['seed']}, "
              f"dropout {c['dropout']}; throughput over steps 11-{c['steps']}; "
              f"MFU of {first.get('peak_tflops', 989.4)} TFLOP/s", ""]
lines += ["| mode | attention | LayerNorm | tokens/s | ms/step | MFU | final loss "
          "| max abs loss diff vs fa | first step s | peak GiB |",
          "|---|---|---|---|---|---|---|---|---|---|"]


def number(run, key, spec):
    value = run.get(key) if run else None
    return format(value, spec) if value is not None else "n/a"


for (attn, mode), run in runs.items():
    if run is None:
        lines.append(f"| {mode} | {attn} | FAILED (see {attn}-{mode}.log) "
                     "| | | | | | | |")
        continue
    reference = runs.get(("fa", mode))
    if attn == "fa":
        diff = "-"
    elif reference and len(reference["losses"]) == len(run["losses"]):
        diff = format(max(abs(a - b) for a, b in zip(reference["losses"], run["losses"])),
                      ".4f")
    else:
        diff = "n/a"
    mfu = run.get("mfu")
    lines.append(f"| {mode} | {attn} | {run['ln']} | {number(run, 'tokens_per_s', ',.0f')} "
                 f"| {number(run, 'ms_per_step', '.2f')} "
                 f"| {'n/a' if mfu is None else f'{100 * mfu:.1f}%'} "
                 f"| {number(run, 'final_loss', '.4f')} | {diff} "
                 f"| {number(run, 'first_step_seconds', '.1f')} "
                 f"| {number(run, 'peak_memory_gib', '.2f')} |")
text = "\n".join(lines) + "\n"
(out / "torch_gpt_table.md").write_text(text)
print("\n" + text + f"wrote {out / 'torch_gpt_table.md'}")
EOF
table_rc=$?

if ((${#failed[@]})); then
  echo "failed runs: ${failed[*]}" >&2
  exit 1
fi
exit $table_rc
