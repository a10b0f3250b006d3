#!/bin/bash
# The f16 fused candidates' fp64 checks (tune_f16.mlir in .carry/exp/tune-f16;
# the generated.grad-fused-dq.f16-* ctest commands), and the ctest command of
# generated.tune-backward.bf16-d128 (test/runtime/CMakeLists.txt) on the
# bf16 library of run.sh (or the library given as $1).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
L=${1:-.carry/exp/tune}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do
  k=attention_bwd_f16_d128_m128n64w8s2_q64x64w4gpf
  [ -n "$c" ] && k=attention_bwd_f16_d128_causal_m128n64w8s2_q64x64w4gpf
  for s in "1 1" "17 17" "1000 1000" "4097 4097" "300 1000" "1000 300"; do set -- $s
    out=$(timeout 60 $F attention --batch 2 --heads 4 --kv-heads 2 --seq $1 --kv-seq $2 --dim 128 --dtype f16 $c --grad --check --backward-kernel $k --kernels .carry/exp/tune-f16 2>&1); rc=$?
    echo "CHECK f16 fused ${c:-full} seq=$1 kv=$2 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
  done
done
rm -f /tmp/cache.json
sh -c '
      set -e
      "$1" tune --direction backward --dtype bf16 --dim 128 --warmup 1 --runs 3 \
        --out "$3" --kernels "$2" --skip-if-no-gpu
      "$1" attention --batch 1 --heads 4 --seq 5000 --dim 128 --dtype bf16 \
        --causal --grad --check --json --tuning "$3" --kernels "$2" > "$3.run.json"
      grep -q "\"kernel_source\": \"tuning_cache\"" "$3.run.json"
' sh $F $L /tmp/cache.json > /tmp/ctest.txt 2>&1
echo "CTEST generated.tune-backward.bf16-d128 rc=$? (0 passes)"; tail -4 /tmp/ctest.txt
