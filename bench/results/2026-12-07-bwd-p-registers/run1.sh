#!/bin/bash
# The fused backward's computing warpgroups keeping P^T in registers (dV +=
# P^T dO with A from registers, no shared store of P and its two block
# barriers) against the shipped fused candidate (P^T through shared memory),
# each at setmaxnreg 40/232 and 24/240, and P^T in registers with dS computed
# before dV's product is issued (late, 40/232), and late with dS^T in two
# alternating slots, which drops the barrier before its store (dsbuf).
# Libraries: tune.mlir of
# ../2026-12-07-bwd-tune compiled by fa-opt with the experiment switches
# (README.md): .carry/exp/{tune,preg,preg24,p24,late,dsbuf}. fp64
# checks of late and dsbuf, then the whole backward of each, every row in one run.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
kern() { [ -n "$1" ] && echo attention_bwd_bf16_d128_causal_m128n64w8s2_q64x64w4gpf || echo attention_bwd_bf16_d128_m128n64w8s2_q64x64w4gpf; }
for V in late dsbuf; do for c in "" "--causal"; do for s in "1 2 2 1" "17 2 4 2" "333 1 8 2" "1000 2 2 2" "4097 1 4 2" "2049 3 2 1"; do set -- $s
  out=$(timeout 60 $F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim 128 --dtype bf16 --grad --check $c --backward-kernel $(kern "$c") --kernels .carry/exp/$V 2>&1); rc=$?
  echo "CHECK $V ${c:-full} seq=$1 B=$2 H=$3 KV=$4 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
done; done; done
for c in "" "--causal"; do for nb in "1024 16" "4096 4" "16384 1"; do set -- $nb
  for dir in tune preg preg24 p24 late dsbuf; do
    out=$(timeout 120 $F attention --batch $2 --heads 16 --seq $1 --dim 128 --dtype bf16 --grad --bench $c --backward-kernel $(kern "$c") --kernels .carry/exp/$dir 2>&1)
    echo "BENCH $dir ${c:-full} N=$1: $(echo "$out" | grep -E 'bench +backward|rror' | sed 's/(median of 30, //; s/ buffer sets)//; s/counting.*//' | tr -s ' ' | tr '\n' '|')"
  done; done; done
