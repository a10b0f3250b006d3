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
logged single 8 8 "$@"
for mode in naive flat overlap zero1; do
  # Small buckets, so that overlap starts several during the backward.
  logged "$mode" 8 8 "$@" --ddp "$mode" --bucket-mb 0.25
  same_logs single "$mode" \
    "--ddp $mode on a world of one differs from the single-process run:"
done
echo "naive, flat, overlap and zero1 on a world of one repeat the single-process losses exactly"
