#!/usr/bin/env bash
# Training on uint16 token shards repeats training on the bytes they came
# from: bench/make_u16_shard.py writes TEXT's bytes as a raw (nanoGPT) shard,
# an llm.c shard and a train/val pair; `--data-format u16 --vocab 256` runs on
# each must log the same losses as `--data-format bytes` on TEXT (the same
# tokens, model and batches), the pair through --val-data.
#   u16_shard_test.sh FA_RUN WORK_DIR TEXT [fa-run train options...]
# Exit 77 (ctest's SKIPPED) without a GPU.
set -uo pipefail
fa_run=$1 work=$2 text=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
test_name=u16_shard_test
source "$(dirname "$0")/train_runs.sh"
python3 "$(dirname "$0")/../../bench/make_u16_shard.py" "$text" "$work/shard" \
  --val-fraction 0.1 > "$work/make_u16_shard.txt" ||
  { cat "$work/make_u16_shard.txt"; exit 1; }
run() {
  local name=$1
  shift
  train "$name" --steps 8 --log-every 1 --eval-every 4 --val-fraction 0.1 \
    --log "$work/$name.jsonl" "$@"
}
run bytes --data "$text" "$@"
run raw --data-format u16 --vocab 256 --data "$work/shard.raw.bin" "$@"
run llmc --data-format u16 --vocab 256 --data "$work/shard.llmc.bin" "$@"
run split --data-format u16 --vocab 256 --data "$work/shard.train.bin" \
  --val-data "$work/shard.val.bin" "$@"
for name in raw llmc split; do
  if ! cmp -s "$work/bytes.jsonl" "$work/$name.jsonl"; then
    echo "u16 shard '$name' gives other losses than the bytes of $text:" >&2
    diff "$work/bytes.jsonl" "$work/$name.jsonl" >&2
    exit 1
  fi
done
grep -q "^data: $work/shard.llmc.bin (u16), " "$work/llmc.txt" ||
  { cat "$work/llmc.txt"; echo "$test_name: no data line for the llm.c shard" >&2; exit 1; }
echo "raw, llm.c and train/val u16 shards repeat the bytes run's losses exactly"
