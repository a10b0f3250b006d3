#!/bin/bash
# Second device call: the fa-run.grad.fused-dq.* ctest commands on the
# fixture library (test/runtime/fixtures/FusedDqKernels.mlir, fuse-dq=1, as
# the build compiles it with this commit's fa-opt: .carry/exp/fixture-fused-dq),
# late against dsbuf in alternation (3 rounds, N=4096, plain and causal,
# 100 timed runs) for run1's one ambiguous row, then fa-run tune --direction
# backward on dsbuf's library and bench_attention_bwd.py following it (ours
# as tuned, SDPA's FA2 and cuDNN, same run, D=128). Writes under $OUT.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do for s in "17 2 4 2" "4097 1 4 2"; do set -- $s
  out=$(timeout 60 $F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim 128 --dtype bf16 $c --grad --check --kernels .carry/exp/fixture-fused-dq 2>&1); rc=$?
  echo "CTEST fa-run.grad.fused-dq ${c:-plain} seq=$1 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror|kernel' | tr -s ' ' | tr '\n' '|' | cut -c1-400)"
done; done
kern() { [ -n "$1" ] && echo attention_bwd_bf16_d128_causal_m128n64w8s2_q64x64w4gpf || echo attention_bwd_bf16_d128_m128n64w8s2_q64x64w4gpf; }
for round in 1 2 3; do for c in "" "--causal"; do for dir in late dsbuf; do
  out=$(timeout 60 $F attention --batch 4 --heads 16 --seq 4096 --dim 128 --dtype bf16 --grad --bench --runs 100 $c --backward-kernel $(kern "$c") --kernels .carry/exp/$dir 2>&1)
  echo "AB round=$round $dir ${c:-full} N=4096: $(echo "$out" | grep -E 'bench +backward|rror' | sed 's/counting.*//' | tr -s ' ' | tr '\n' '|')"
done; done; done
echo "after $((SECONDS-start)) s"
rm -f .carry/exp/dsbuf/tuning.json
timeout 240 $F tune --direction backward --kernels .carry/exp/dsbuf 2>&1 | tee $OUT/tune.txt | tail -14
cp .carry/exp/dsbuf/tuning.json $OUT/tuning.json
echo "after $((SECONDS-start)) s"
timeout $((570-(SECONDS-start))) python3 bench/bench_attention_bwd.py --fa-run $F --kernels .carry/exp/dsbuf --out $OUT/bwd --dims 128 2>&1 | tail -14
echo "done after $((SECONDS-start)) s"
