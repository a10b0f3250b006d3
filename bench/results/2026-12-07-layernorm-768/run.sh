#!/bin/bash
# One device call: LayerNorm bf16 at 16384 x 768 (the 85M model's rows),
# the library's kernels for 768 columns (r2c1024w4p forward, r1c1024w4
# backward) against 768-column candidates (ln768.mlir, compiled by fa-opt
# into .carry/exp/ln768): fp64 check, then --bench, two alternating rounds.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
L=.carry/exp/ln768; F=.carry/bin/fa-run
pairs="r2c1024w4p:r1c1024w4 r4c768w4:r4c768w4 r4c768w4p:r4c768w4 r8c768w8:r8c768w8 r8c768w8p:r8c768w8"
for p in $pairs; do f=${p%%:*}; b=${p##*:}
  out=$($F layernorm --rows 1000 --cols 768 --dtype bf16 --grad --check --kernel layernorm_fwd_bf16_$f \
    --backward-kernel layernorm_bwd_bf16_$b --kernels $L 2>&1)
  echo "CHECK $f $b rc=$?: $(echo "$out" | grep -E 'check|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
done
for round in 1 2; do for p in $pairs; do f=${p%%:*}; b=${p##*:}
  out=$($F layernorm --rows 16384 --cols 768 --dtype bf16 --grad --bench --kernel layernorm_fwd_bf16_$f \
    --backward-kernel layernorm_bwd_bf16_$b --kernels $L 2>&1)
  echo "BENCH r$round $f $b: $(echo "$out" | grep -E 'bench|rror' | tr -s ' ' | tr '\n' '|')"
done; done
