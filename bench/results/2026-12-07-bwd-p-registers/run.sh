#!/bin/bash
# One device call: run1.sh (fp64 checks of the P^T-in-registers forms, the
# four libraries' backwards at N=1024/4096/16384), then the fastest of them
# (mean TFLOP/s over run1's BENCH rows) next to SDPA's cuDNN and FA2 backends
# (bench_attention_bwd.py, D=128, with last session's tuning.json so the
# fused kernel runs from N=2048), then run2.sh of ../2026-12-07-bwd-tune
# (the f16 fused checks, the tune-backward ctest command) on that library.
# Writes under $OUT.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
here=bench/results/2026-12-07-bwd-p-registers
start=$SECONDS
bash $here/run1.sh 2>&1 | tee $OUT/run1.txt
best=$(awk '/^BENCH/ { v=$2; for (i=1;i<=NF;i++) if ($i ~ /TFLOP/) { s[v]+=$(i-1); n[v]++ } }
  END { for (v in s) if (s[v]/n[v] > m) { m=s[v]/n[v]; b=v }; print b }' $OUT/run1.txt)
echo "BEST ${best:-none} after $((SECONDS-start)) s" | tee -a $OUT/run1.txt
[ -n "$best" ] || exit 1
cp bench/results/2026-12-07-bwd-tune/tuning.json .carry/exp/$best/tuning.json
timeout $((560-(SECONDS-start)-90)) python3 bench/bench_attention_bwd.py --fa-run .carry/bin/fa-run \
  --kernels .carry/exp/$best --out $OUT/bwd --dims 128 --seqs 2048 4096 8192 16384 2>&1 | tail -12
echo "after $((SECONDS-start)) s"
timeout 80 bash bench/results/2026-12-07-bwd-tune/run2.sh .carry/exp/$best > $OUT/run2.txt 2>&1
tail -20 $OUT/run2.txt
# If time is left: ncu of the fused dK/dV kernel (tune and dsbuf, D=128
# N=4096 B=4 H=16, plain), tensor-pipe use and stall reasons; clocks left
# alone (METHOD.md).
M="launch__registers_per_thread,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
for dir in tune dsbuf; do
  left=$((560-(SECONDS-start)))
  [ $left -gt 60 ] || { echo "NCU $dir skipped: ${left} s left"; continue; }
  timeout $((left-20)) ncu --clock-control none -k "regex:gpf_dkdv$" --launch-count 1 --metrics "$M" \
    .carry/bin/fa-run attention --batch 4 --heads 16 --seq 4096 --dim 128 --dtype bf16 --grad --bench \
    --warmup 0 --runs 1 --backward-kernel attention_bwd_bf16_d128_m128n64w8s2_q64x64w4gpf --kernels .carry/exp/$dir 2>&1 |
    grep -vE "^(kernel|chosen|grad|device|shape|bench|memory)" > $OUT/ncu_$dir.txt
  echo "NCU $dir: $(grep -E 'tensor_cycles|issue_active|duration' $OUT/ncu_$dir.txt | tr -s ' ' | tr '\n' '|')"
done
echo "done after $((SECONDS-start)) s"
