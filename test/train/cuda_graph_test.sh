#!/usr/bin/env bash
# `fa-run train --cuda-graph` repeats the eager run's losses, learning rates,
# gradient norms and validation losses bit for bit: the graph replays the
# eager step's kernels on the same buffers. Checked on the default model,
# on head copies without cuBLASLt's epilogues (other kernels in the graph),
# on an NCCL world of one (--ddp flat and zero1 average after the graph),
# and resumed from a checkpoint (the resumed run's first step is eager
# again). Validation every 3 steps runs eager forwards between replays.
#   cuda_graph_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
test_name=cuda_graph_test
source "$(dirname "$0")/train_runs.sh"
fail() { echo "$test_name: $*" >&2; exit 1; }
steps=8
# Each run: $steps steps, logged one by one into NAME.jsonl.
run() {
  local name=$1
  shift
  logged "$name" "$steps" 3 "$@"
}
# The graph run must have captured on its second step and replayed to the end.
check_captured() {
  grep -Eq "^cuda graph: the forward and backward \([1-9][0-9]* nodes\) captured at step 2, replayed through step $steps$" \
    "$work/$1.txt" || { cat "$work/$1.txt"; fail "run '$1' did not replay a CUDA graph"; }
}
# same EAGER GRAPH: the two logs are byte for byte equal.
same() { same_logs "$1" "$2" "run '$2' (--cuda-graph) differs from run '$1'"; }

run eager "$@"
run graph "$@" --cuda-graph
check_captured graph
same eager graph
# The eager run prints no graph line.
grep -q "^cuda graph:" "$work/eager.txt" && fail "the eager run reported a CUDA graph"

run eager-copies "$@" --head-copies --epilogues none
run graph-copies "$@" --head-copies --epilogues none --cuda-graph
check_captured graph-copies
same eager-copies graph-copies

for mode in flat zero1; do
  run "graph-$mode" "$@" --cuda-graph --ddp "$mode"
  check_captured "graph-$mode"
  same eager "graph-$mode"
done

# Stopped after 4 steps and resumed, eagerly and with the graph: the resumed
# run's first step is eager again, and it captures on its second.
resume() {
  local name=$1
  shift
  train "$name-first" --steps "$steps" --log-every 1 --eval-every 3 \
    --log "$work/$name.jsonl" --checkpoint "$work/$name.ckpt" --stop-at 4 "$@"
  train "$name-second" --steps "$steps" --log-every 1 --eval-every 3 \
    --log "$work/$name.jsonl" --checkpoint "$work/$name.ckpt" --resume "$@"
}
resume eager-resumed "$@"
resume graph-resumed "$@" --cuda-graph
grep -q "captured at step 6, replayed through step $steps" \
  "$work/graph-resumed-second.txt" || {
  cat "$work/graph-resumed-second.txt"
  fail "the resumed run did not capture on its second step"
}
same eager-resumed graph-resumed
echo "--cuda-graph repeats the eager losses exactly (default, head copies" \
  "without epilogues, --ddp flat and zero1 on a world of one, resumed)"
