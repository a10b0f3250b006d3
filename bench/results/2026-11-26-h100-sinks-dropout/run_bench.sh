#!/bin/bash
# Sinks and dropout next to the plain kernels, same run: bf16, D=128,
# 16k tokens (B x N = 16384), 16 heads; forward and backward TFLOP/s.
# Usage: run_bench.sh KERNELS_DIR
k=${1:?kernels dir}
run() { echo "== $*"; LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./.carry/bin/fa-run attention --kernels "$k" --dtype bf16 --dim 128 --heads 16 --grad --bench "$@" 2>&1 | grep -iE "TFLOP|error|kernel" | head -8; }
for n in 4096 16384; do
  b=$((16384 / n))
  for causal in "" "--causal"; do
    run --batch $b --seq $n $causal
    run --batch $b --seq $n $causal --sinks
    run --batch $b --seq $n $causal --dropout 0.1
  done
done
