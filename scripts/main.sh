#!/usr/bin/env bash
# The main job on a fresh machine: install what is needed, build, compile the
# bundled example fa.attention to PTX, and where a GPU is present run it,
# checked against an fp64 reference and timed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh

out=build/example
rm -rf "$out"
echo "== fa-opt: examples/attention.mlir -> $out"
build/bin/fa-opt examples/attention.mlir --fa-to-ptx="export-dir=$out" -o "$out.mlir"
ls -l "$out"
grep -c "mma.sync.aligned.m16n8k16" "$out"/*.ptx | sed 's/^/mma.sync instructions: /'

if [ -x build/bin/fa-run ] && build/bin/fa-run devices >/dev/null 2>&1; then
  echo "== fa-run: the example kernel on a GPU"
  build/bin/fa-run attention --kernels "$out" --batch 2 --heads 8 --kv-heads 2 \
    --seq 1000 --dim 64 --dtype bf16 --causal --check --bench
else
  echo "== no GPU here: the PTX above is the result; run fa-run on a GPU machine"
fi
