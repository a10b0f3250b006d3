#!/usr/bin/env bash
# Device: time hand-patched PTX variants of the D=128 default forward, same run.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=.carry/bin/fa-run
out=${OUT:-/tmp}/ablation.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $out
for v in base ftz move ftzmove; do
  for c in "" --causal; do
    name=attention_fwd_bf16_d128_m128n128w8qs2gopte; [ -n "$c" ] && name=attention_fwd_bf16_d128_causal_m128n128w8qs2gopte
    $R attention --dtype bf16 --batch 2 --heads 4 --kv-heads 2 --seq 1000 --dim 128 $c --kernel $name --kernels .carry/exp/$v --check >/dev/null 2>&1 && echo "check $v $c seq1000 ok" | tee -a $out || echo "check $v $c FAILED" | tee -a $out
    $R attention --dtype bf16 --batch 1 --heads 2 --seq 4097 --kv-seq 300 --dim 128 $c --kernel $name --kernels .carry/exp/$v --check >/dev/null 2>&1 && echo "check $v $c 4097x300 ok" | tee -a $out || echo "check $v $c 4097x300 FAILED" | tee -a $out
  done
done
for rep in 1 2; do
for n in 1024 2048 4096 16384; do
  for c in "" --causal; do
    name=attention_fwd_bf16_d128_m128n128w8qs2gopte; [ -n "$c" ] && name=attention_fwd_bf16_d128_causal_m128n128w8qs2gopte
    for v in base ftz move ftzmove; do
      t=$($R attention --dtype bf16 --batch $((16384 / n)) --heads 16 --seq $n --dim 128 $c --kernel $name --kernels .carry/exp/$v --bench --runs 50 --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["bench"]["tflops"],1))' 2>&1)
      echo "rep$rep N=$n ${c:-plain} $v $t" | tee -a $out
    done
  done
done
done
