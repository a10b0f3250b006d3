# Sourced by the training tests' scripts: `train NAME OPTIONS...` runs
# `$fa_run train OPTIONS... --skip-if-no-gpu`, its output in $work/NAME.txt;
# without a GPU the script exits 77 (ctest's SKIPPED), and a failed run ends
# it with the run's output. Needs fa_run, work and test_name set.
train() {
  local name=$1
  shift
  "$fa_run" train --skip-if-no-gpu "$@" > "$work/$name.txt" 2>&1
  local status=$?
  [ "$status" = 77 ] && { cat "$work/$name.txt"; exit 77; }
  [ "$status" = 0 ] || { cat "$work/$name.txt"; echo "$test_name: run '$name' failed" >&2; exit 1; }
}
# `logged NAME STEPS EVAL_EVERY OPTIONS...`: `train` for STEPS steps, each
# logged into $work/NAME.jsonl, validation every EVAL_EVERY steps.
logged() {
  local name=$1 steps=$2 every=$3
  shift 3
  train "$name" --steps "$steps" --log-every 1 --eval-every "$every" \
    --log "$work/$name.jsonl" "$@"
}
# `same_logs A B MESSAGE`: runs A and B logged the same bytes; else the
# script ends with MESSAGE and the two logs' diff.
same_logs() {
  cmp -s "$work/$1.jsonl" "$work/$2.jsonl" && return
  echo "$test_name: $3" >&2
  diff "$work/$1.jsonl" "$work/$2.jsonl" >&2
  exit 1
}
