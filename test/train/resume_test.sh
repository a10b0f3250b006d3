#!/usr/bin/env bash
# Resuming from a checkpoint repeats the uninterrupted run: trains STEPS steps
# in one go; then the same run stopped after HALF steps (--stop-at writes its
# checkpoint) and resumed in a new process; and compares the losses of every
# step after HALF (to 1e-5 relative; the kernels are deterministic, so they
# should be equal).
#   resume_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
steps=12 half=6
rm -rf "$work" && mkdir -p "$work"
test_name=resume_test
source "$(dirname "$0")/train_runs.sh"
schedule=(--steps "$steps" --log-every 1 --eval-every "$steps")

train full "${schedule[@]}" "$@" --log "$work/full.jsonl"
train first "${schedule[@]}" "$@" --log "$work/resumed.jsonl" --checkpoint "$work/run.ckpt" --stop-at "$half"
train second "${schedule[@]}" "$@" --log "$work/resumed.jsonl" --checkpoint "$work/run.ckpt" --resume
grep -q "resumed at step $half" "$work/second.txt" || { cat "$work/second.txt"; exit 1; }

python3 - "$work/full.jsonl" "$work/resumed.jsonl" "$steps" <<'PY'
import json, sys
full = [json.loads(line) for line in open(sys.argv[1])]
resumed = [json.loads(line) for line in open(sys.argv[2])]
steps = int(sys.argv[3])
assert [e["step"] for e in full] == list(range(1, steps + 1)), full
assert [e["step"] for e in resumed] == list(range(1, steps + 1)), resumed
worst = 0.0
for a, b in zip(full, resumed):
    for key in ("loss", "val_loss"):
        if key in a or key in b:
            error = abs(a[key] - b[key]) / max(abs(a[key]), 1e-30)
            worst = max(worst, error)
            if error > 1e-5:
                sys.exit(f"step {a['step']} {key}: uninterrupted {a[key]!r}, resumed {b[key]!r}")
print(f"resumed run matches the uninterrupted one at all {steps} steps "
      f"(largest relative difference {worst:.1e})")
PY
