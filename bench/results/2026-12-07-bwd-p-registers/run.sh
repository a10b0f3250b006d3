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
