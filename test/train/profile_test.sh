#!/usr/bin/env bash
# `fa-run train --profile` on a small model: every phase that every model
# has takes time (attention forward and backward, LayerNorm, matmul,
# embedding, loss, optimizer); "residual" has its row, 0 when the
# LayerNorms add the residual stream (the library's residual kernels) and
# positive with --dropout (dropped branches are added by dropout kernels);
# "heads layout" has its row, 0 by
# default (attention reads q, k, v in place) and positive with
# --head-copies; "bias grad" and "gelu" have theirs, positive with
# --epilogues none, 0 when cuBLASLt's epilogues do that work inside
# "matmul" (the default fuses GELU's forward and backward: "bias grad"
# positive, "gelu" 0; --epilogues all fuses the bias gradients too: both 0);
# "elementwise
# (other)" has its row (dropout's masks without a residual add; 0 without
# dropout); communication is 0 on one process and positive on an NCCL
# world of one (ZeRO-1: reduce-scatter, all-gather on the training stream;
# overlap: its buckets on the communication stream, reported beside the
# sum), the phases sum to at most the wall time, and profiling does not
# change the losses.
#   profile_test.sh FA_RUN WORK_DIR [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
test_name=profile_test
source "$(dirname "$0")/train_runs.sh"
fail() { echo "$test_name: $*" >&2; exit 1; }
run() {
  local name=$1
  shift
  logged "$name" 16 16 "$@"
}
# The table's rows: "  NAME (28 columns) MS PERCENT%[ mark]".
ms_of() { # FILE ROW-NAME
  awk -v want="$2" '{ name = substr($0, 3, 28); sub(/ +$/, "", name);
    if (name == want) { split(substr($0, 31), f, " "); print f[1]; exit } }' "$1"
}
positive() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }
check_table() { # NAME COMMUNICATION(zero|positive)
  local out=$work/$1.txt
  grep -q "^step profile: steps 9-12 (4 steps)" "$out" ||
    fail "$1: no profile of steps 9-12 in its output: $(cat "$out")"
  grep -q "profiled steps left out" "$out" ||
    fail "$1: the throughput line does not leave the profiled steps out"
  grep -q "idle/other clamped" "$out" && fail "$1: idle clamped: $(cat "$out")"
  local row value sum=0
  for row in "attention fwd" "attention bwd" "layernorm fwd+bwd" \
      "matmul (cuBLASLt)" "embedding" "heads layout" "bias grad" "gelu" \
      "residual" "elementwise (other)" "loss (cross-entropy)" \
      "optimizer (norm, AdamW)" "communication"; do
    value=$(ms_of "$out" "$row")
    [ -n "$value" ] || fail "$1: no '$row' row: $(cat "$out")"
    if [ "$row" = "elementwise (other)" ] || [ "$row" = "heads layout" ] ||
       [ "$row" = "bias grad" ] || [ "$row" = gelu ] ||
       [ "$row" = residual ]; then
      awk -v x="$value" 'BEGIN { exit !(x + 0 >= 0) }' ||
        fail "$1: '$row' took $value ms: $(cat "$out")"
    elif [ "$row" != communication ] || [ "$2" = positive ]; then
      positive "$value" || fail "$1: '$row' took $value ms: $(cat "$out")"
    elif [ "$2" = zero ]; then
      awk -v x="$value" 'BEGIN { exit !(x + 0 == 0) }' ||
        fail "$1: communication $value ms on one process"
    fi
    sum=$(awk -v a="$sum" -v b="$value" 'BEGIN { print a + b }')
  done
  local wall idle
  wall=$(ms_of "$out" "step (wall)")
  idle=$(ms_of "$out" "idle/other")
  positive "$wall" || fail "$1: step wall $wall"
  awk -v s="$sum" -v w="$wall" 'BEGIN { exit !(s <= w * 1.0001 + 0.005) }' ||
    fail "$1: the phases sum to $sum ms, more than the wall $wall ms"
  # idle = wall - sum (to the table's rounding).
  awk -v s="$sum" -v w="$wall" -v i="$idle" \
    'BEGIN { d = w - s - i; exit !(d < 0.01 && d > -0.01) }' ||
    fail "$1: idle $idle is not wall $wall - sum $sum"
}

run plain "$@"
run profiled "$@" --profile --profile-steps 4 --profile-json "$work/profile.json"
check_table profiled zero
value=$(ms_of "$work/profiled.txt" "bias grad")
positive "$value" || fail "default: 'bias grad' took $value ms: $(cat "$work/profiled.txt")"
grep -q '"phases"' "$work/profile.json" || fail "no --profile-json: $(cat "$work/profile.json")"
for row in embedding "heads layout" "bias grad" gelu residual "elementwise (other)"; do
  grep -qF "\"$row\":" "$work/profile.json" ||
    fail "--profile-json has no '$row' phase: $(cat "$work/profile.json")"
done
same_logs plain profiled "--profile changed the losses"
run copies "$@" --head-copies --profile --profile-steps 4
check_table copies zero
value=$(ms_of "$work/copies.txt" "heads layout")
positive "$value" || fail "copies: 'heads layout' took $value ms: $(cat "$work/copies.txt")"
run epilogues "$@" --epilogues all --profile --profile-steps 4
check_table epilogues zero
for row in "bias grad" gelu; do
  value=$(ms_of "$work/epilogues.txt" "$row")
  awk -v x="$value" 'BEGIN { exit !(x + 0 == 0) }' ||
    fail "--epilogues all: '$row' took $value ms: $(cat "$work/epilogues.txt")"
done
run kernels "$@" --epilogues none --profile --profile-steps 4
check_table kernels zero
run dropout "$@" --dropout 0.1 --profile --profile-steps 4
check_table dropout zero
value=$(ms_of "$work/dropout.txt" residual)
positive "$value" || fail "dropout: 'residual' took $value ms: $(cat "$work/dropout.txt")"
for row in "bias grad" gelu; do
  value=$(ms_of "$work/kernels.txt" "$row")
  positive "$value" || fail "kernels: '$row' took $value ms: $(cat "$work/kernels.txt")"
done
run zero1 "$@" --ddp zero1 --profile --profile-steps 4
check_table zero1 positive
run overlap "$@" --ddp overlap --bucket-mb 0.25 --profile --profile-steps 4
check_table overlap any
value=$(ms_of "$work/overlap.txt" "communication (overlapped)")
[ -n "$value" ] && positive "$value" ||
  fail "overlap: no positive 'communication (overlapped)' row: $(cat "$work/overlap.txt")"
grep -q "on the communication stream" "$work/overlap.txt" ||
  fail "overlap: no footnote on the overlapped communication"
cat "$work/profiled.txt" "$work/overlap.txt" | grep -A20 "^step profile"
echo "--profile: every phase timed, the sum within the wall, losses unchanged"
