#!/usr/bin/env bash
# The backward's weight-gradient products on a second stream (the default)
# repeat the serial run's (--serial-weight-grads) losses, learning rates,
# gradient norms and validation losses bit for bit: the training stream
# waits for each dW product before overwriting what it reads. Checked on the
# default model (bias gradients in a kernel of their own on that stream),
# with every epilogue (bias gradients in the dW products), with dropout (the
# branch gradients' dropped copies), on head copies without cuBLASLt's
# epilogues, replayed from a CUDA graph (the stream forked and joined inside
# the capture), and with --ddp overlap on an NCCL world of one (buckets
# start only once both streams are done with them).
#   weight_grad_stream_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
test_name=weight_grad_stream_test
source "$(dirname "$0")/train_runs.sh"
# compare NAME OPTIONS...: 8 steps with OPTIONS --serial-weight-grads and
# with OPTIONS (the stream) log the same bytes.
compare() {
  local name=$1
  shift
  logged "$name-serial" 8 4 "$@" --serial-weight-grads
  logged "$name-stream" 8 4 "$@"
  grep -q "weight gradients on the training stream" "$work/$name-serial.txt" &&
    grep -q "weight gradients on a second stream" "$work/$name-stream.txt" || {
    echo "$test_name: '$name' did not run the stream by default and the" \
      "serial products with --serial-weight-grads:" >&2
    grep -H "weight gradients" "$work/$name-serial.txt" "$work/$name-stream.txt" >&2
    exit 1
  }
  same_logs "$name-serial" "$name-stream" \
    "'$name' with the weight-gradient stream differs from the serial run"
}
compare default "$@"
compare epilogues "$@" --epilogues all
compare dropout "$@" --dropout 0.2
compare copies "$@" --head-copies --epilogues none
compare graph "$@" --cuda-graph
compare ddp-overlap "$@" --ddp overlap --bucket-mb 0.25
echo "the weight-gradient stream repeats the serial losses exactly (default," \
  "all epilogues, dropout, head copies without epilogues, CUDA graph," \
  "--ddp overlap)"
