#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=.carry/bin/fa-run
for v in precise ftz; do for d in 64 128; do for c in "" --causal; do
  $R attention --dtype bf16 --batch 2 --heads 4 --kv-heads 2 --seq 1000 --dim $d $c --grad --check --kernels .carry/exp/$v >/dev/null 2>&1 && echo "check $v d$d $c ok" || echo "check $v d$d $c FAILED"
done; done; done
for rep in 1 2; do for d in 128 64; do for n in 1024 4096 16384; do for c in "" --causal; do for v in precise ftz; do
  h=$((2048 / d))
  t=$($R attention --dtype bf16 --batch $((16384 / n)) --heads $h --seq $n --dim $d $c --grad --bench --runs 20 --kernels .carry/exp/$v --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["bench_backward"]["tflops"],1), round(d["bench"]["tflops"],1))')
  echo "rep$rep D=$d N=$n ${c:-plain} $v bwd/fwd $t"
done; done; done; done; done
