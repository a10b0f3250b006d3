#!/usr/bin/env bash
# The backward's weight-gradient products on a second stream
# (--weight-grad-stream) repeat the serial run's (the default) losses,
# learning rates, gradient norms and validation losses bit for bit: the
# training stream waits for each dW product before overwriting what it
# reads. Checked on the default model, with dropout (the branch gradients'
# dropped copies), on head copies without cuBLASLt's epilogues (bias
# gradients in a kernel of their own on that stream), replayed from a CUDA
# graph (the stream forked and joined inside the capture), and with --ddp
# overlap on an NCCL world of one (buckets start only once both streams are
# done with them).
#   weight_grad_stream_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
test_name=weight_grad_stream_test
source "$(dirname "$0")/train_runs.sh"
# compare NAME OPTIONS...: 8 steps with OPTIONS and with OPTIONS
# --weight-grad-stream log the same bytes.
compare() {
  local name=$1
  shift
  logged "$name-serial" 8 4 "$@"
  logged "$name-stream" 8 4 "$@" --weight-grad-stream
  same_logs "$name-serial" "$name-stream" \
    "'$name' with the weight-gradient stream differs from the serial run"
}
compare default "$@"
compare dropout "$@" --dropout 0.2
compare copies "$@" --head-copies --epilogues none
compare graph "$@" --cuda-graph
compare ddp-overlap "$@" --ddp overlap --bucket-mb 0.25
echo "the weight-gradient stream repeats the serial losses exactly (default," \
  "dropout, head copies without epilogues, CUDA graph, --ddp overlap)"
