#!/usr/bin/env bash
# Every data-parallel mode, run by one process on an NCCL world of one,
# repeats the single-process run's losses exactly: the plumbing of the
# modes (buckets on a communication stream, ZeRO-1's shards) loses nothing.
#   ddp_world_of_one_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
test_name=ddp_world_of_one_test
source "$(dirname "$0")/train_runs.sh"
# Each run: 8 steps, logged one by one into NAME.jsonl.
run() {
  local name=$1
  shift
  train "$name" --steps 8 --log-every 1 --eval-every 8 --log "$work/$name.jsonl" "$@"
}
run single "$@"
for mode in naive flat overlap zero1; do
  # Small buckets, so that overlap starts several during the backward.
  run "$mode" "$@" --ddp "$mode" --bucket-mb 0.25
  if ! cmp -s "$work/single.jsonl" "$work/$mode.jsonl"; then
    echo "--ddp $mode on a world of one differs from the single-process run:" >&2
    diff "$work/single.jsonl" "$work/$mode.jsonl" >&2
    exit 1
  fi
done
echo "naive, flat, overlap and zero1 on a world of one repeat the single-process losses exactly"
