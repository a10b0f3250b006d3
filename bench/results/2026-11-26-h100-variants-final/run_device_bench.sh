#!/bin/bash
# One device call: the issue-20 benchmarks on the carried build (.carry).
# Usage (repository root, on the GPU machine): run_device_bench.sh OUT PART
# PART 1: forward stages, sinks/dropout, the SDPA tables (D 64/128/256);
# PART 2: the variants next to FlexAttention.
out=${1:?out dir}
part=${2:?part 1 or 2}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
here=$(dirname "$0")
fa=./.carry/bin/fa-run
k=.carry/kernels
py=python3; [ -x /opt/torch/.venv/bin/python ] && py=/opt/torch/.venv/bin/python
if [ "$part" = 1 ]; then
# Window and document forwards: single- vs double-buffered K/V now that the
# classifier emits one loop (exp kernels compiled from exp.mlir).
for v in "window --window 1024,0" "document --doc-lens 1000"; do
  set -- $v
  for n in 4096 16384; do
    for s in s1 s2; do
      echo "== exp_${1}_fwd_$s N=$n"
      $fa attention --kernels .carry/exp --kernel exp_${1}_fwd_$s --dtype bf16 --dim 128 --heads 16 \
        --batch $((16384 / n)) --seq $n --causal "${@:2}" --bench 2>&1 | grep -E "bench|error"
    done
  done
done > "$out/window_document_forward_stages.txt"
# Sinks and dropout next to the plain kernels.
bash "$here/../2026-11-26-h100-sinks-dropout/run_bench.sh" $k > "$out/bench_sinks_dropout.txt" 2>&1
# Head dim 256 (and 64/128: the plain kernels' table rerun) next to SDPA.
timeout 200 $py bench/bench_attention.py --fa-run $fa --kernels $k --dims 64 128 256 --seqs 1024 4096 16384 \
  --out "$out" > "$out/bench_attention.log" 2>&1
timeout 200 $py bench/bench_attention_bwd.py --fa-run $fa --kernels $k --dims 64 128 256 --seqs 1024 4096 16384 \
  --out "$out" > "$out/bench_attention_bwd.log" 2>&1
else
# Variants next to torch.compile(flex_attention), same run.
timeout 540 $py bench/bench_variants.py --fa-run $fa --kernels $k --variants causal window document \
  --out "$out" > "$out/bench_variants.log" 2>&1
fi
ls "$out"
