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
