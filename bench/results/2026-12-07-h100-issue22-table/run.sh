#!/bin/bash
# One device call on this commit's whole build (scripts/pack_carry.sh): every
# GPU ctest entry (scripts/device_ctest.sh), then the backward next to SDPA's
# FA2 and cuDNN backends in the same run (bench_attention_bwd.py, D=64 and
# 128, N 1024..16384, plain and causal). The library carries the tuning.json
# of ../2026-12-07-bwd-p-registers (D=128 bf16 backward groups: the fused
# kernel except at plain N <= 1024); every other group runs its default.
# Writes under $OUT.
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 250 bash scripts/device_ctest.sh .carry $OUT
echo "CTEST rc=$? after $((SECONDS-start)) s"
cp bench/results/2026-12-07-bwd-p-registers/tuning.json .carry/kernels/tuning.json
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
timeout $((380-(SECONDS-start))) python3 bench/bench_attention_bwd.py --fa-run .carry/bin/fa-run \
  --kernels .carry/kernels --out $OUT/bwd 2>&1 | tail -24
echo "BWD after $((SECONDS-start)) s"
