#!/bin/bash
# A shorter run1.sh for a small device budget: the four fa-run.grad.fused-dq.* ctest
# commands on the boxes kernels (fp64), then the backward of default / rows / boxes at
# N=4096 and 16384, plain and causal, every row in one run.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do for s in "17 2 4 2" "4097 1 4 2"; do set -- $s
  out=$($F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim 128 --dtype bf16 $c --grad --check --kernels .carry/exp/fused-dq --skip-if-no-gpu 2>&1); rc=$?
  echo "CTEST fused-dq ${c:-plain} seq=$1 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ')"
done; done
for c in "" "--causal"; do for nb in "4096 4" "16384 1"; do set -- $nb
  for dir in default rows boxes; do
    out=$(timeout 60 $F attention --batch $2 --heads 16 --seq $1 --dim 128 --dtype bf16 --grad --bench $c --kernels .carry/exp/$dir 2>&1)
    echo "BENCH $dir ${c:-full} N=$1: $(echo "$out" | grep -E 'bench +backward|rror' | sed 's/(median of 30, //; s/ buffer sets)//; s/counting.*//' | tr -s ' ' | tr '\n' '|')"
  done; done; done
