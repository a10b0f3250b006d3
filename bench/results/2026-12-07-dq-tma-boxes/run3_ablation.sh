#!/bin/bash
# Where the fused backward's time goes after the tensor-map adds: the boxes
# kernels (.carry/exp/boxes) against PTX edits of their dK/dV kernels
# (timing only, the results are wrong or racy): nomembar drops the writers'
# fence.acq_rel.gpu before the turn's signal; noturn also drops the spin on
# the turn counter (racy order, first-block stores overwrite); noadds drops
# the four tensor reduce-adds / stores per tile (turns kept); nowriter drops
# both (ptxas then spills 24 bytes in it). Made by make_ablation.py.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do for nb in "1024 16" "4096 4" "16384 1"; do set -- $nb
  for dir in default boxes boxes-nomembar boxes-noturn boxes-noadds boxes-nowriter; do
    out=$(timeout 120 $F attention --batch $2 --heads 16 --seq $1 --dim 128 --dtype bf16 --grad --bench $c --kernels .carry/exp/$dir 2>&1)
    echo "BENCH $dir ${c:-full} N=$1: $(echo "$out" | grep -E 'bench +backward|rror' | sed 's/(median of 30, //; s/ buffer sets)//; s/counting.*//' | tr -s ' ' | tr '\n' '|')"
  done; done; done
