#!/bin/bash
# The backward's fused-dQ candidates in a library with the defaults (tune.mlir,
# compiled into .carry/exp/tune): fp64 checks of each fused candidate by name
# (the generated.grad-fused-dq.* ctest commands, bf16), fa-run tune
# --direction backward into the library's own tuning.json, a backward run
# following it, then bench_attention_bwd.py (ours as tuned, FA2 and cuDNN
# through SDPA in the same run) at D=128. Writes under $OUT.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
L=.carry/exp/tune
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do
  k=attention_bwd_bf16_d128_m128n64w8s2_q64x64w4gpf
  [ -n "$c" ] && k=attention_bwd_bf16_d128_causal_m128n64w8s2_q64x64w4gpf
  for s in "1 1" "17 17" "1000 1000" "4097 4097" "300 1000" "1000 300"; do set -- $s
    out=$(timeout 60 $F attention --batch 2 --heads 4 --kv-heads 2 --seq $1 --kv-seq $2 --dim 128 --dtype bf16 $c --grad --check --backward-kernel $k --kernels $L 2>&1); rc=$?
    echo "CHECK fused ${c:-full} seq=$1 kv=$2 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
  done
done
timeout 300 $F tune --direction backward --kernels $L 2>&1 | tee $OUT/tune.txt
timeout 60 $F attention --batch 1 --heads 4 --seq 5000 --dim 128 --dtype bf16 --causal --grad --check --json --kernels $L > $OUT/tuned_run.json 2>&1
echo "TUNED RUN rc=$?: $(grep -E '"kernel_source"|"passed"' $OUT/tuned_run.json | tr -s ' ' | tr '\n' ' ')"
cp $L/tuning.json $OUT/tuning.json
timeout 400 python3 bench/bench_attention_bwd.py --fa-run $F --kernels $L --out $OUT/bwd --dims 128 2>&1 | tail -16
