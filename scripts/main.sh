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
# The example has no fa.tile, so it gets the library's default configuration
# for its chip, dtype and head dim (wgmma on sm_90a).
echo "tensor-core instructions in the PTX:" \
  "$(cat "$out"/*.ptx | grep -c "wgmma.mma_async" || true) wgmma.mma_async," \
  "$(cat "$out"/*.ptx | grep -c "mma.sync.aligned" || true) mma.sync"

# `fa-run devices` exits 0 with a GPU, 2 without one, 1 on other errors.
if [ ! -x build/bin/fa-run ]; then
  echo "== fa-run was not built (no CUDA toolkit at /usr/local/cuda): the PTX above is the result"
  exit 0
fi
status=0
build/bin/fa-run devices || status=$?
case $status in
  0)
    echo "== fa-run: the example kernel on a GPU"
    build/bin/fa-run attention --kernels "$out" --batch 2 --heads 8 --kv-heads 2 \
      --seq 1000 --dim 64 --dtype bf16 --causal --check --bench ;;
  2)
    echo "== no GPU found on this machine: the PTX above is the result;" \
      "copy build/bin/fa-run and $out to a GPU machine to run it" ;;
  *)
    echo "main: fa-run devices failed (exit $status)" >&2
    exit "$status" ;;
esac
