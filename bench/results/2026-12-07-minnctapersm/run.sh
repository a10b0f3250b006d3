#!/bin/bash
# One device call. Libraries compiled here by fa-opt (README.md):
#   .carry/exp/new128  the D=128 bf16 tuning library (../2026-12-07-bwd-tune/
#                      tune.mlir) with nvvm.minctasm = 1 on the
#                      warp-specialised kernels (.minnctapersm 1)
#   .carry/exp/old128  the same PTX without that line (= the shipped library)
#   .carry/exp/d64     d64.mlir: D=64 forward defaults, backward default (g)
#                      and the same warp-specialised (gp), with the line
# fp64 checks of the new kernels, then old and new (D=128) and g and gp
# (D=64) in alternating rounds, 16k tokens, H=16; ncu of the D=64 dK/dV
# kernels if time is left. Writes under $OUT.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run; E=.carry/exp
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
check() { # lib dim causal-flag kernel
  for s in "1 2 2 1" "17 2 4 2" "333 1 8 2" "1000 2 2 2" "4097 1 4 2"; do set -- $s
    out=$(timeout 60 $F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim $DIM --dtype bf16 --grad --check $CAUSAL --backward-kernel $KERN --kernels $E/$LIB 2>&1); rc=$?
    echo "CHECK $LIB $KERN seq=$1 B=$2 H=$3 KV=$4 rc=$rc: $(echo "$out" | grep -E 'check +(out|grad)|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-400)"
  done
}
name() { # dim causal suffix
  local c=""; [ -n "$2" ] && c=_causal
  echo attention_bwd_bf16_d$1${c}_m128n64w8s2_q64x64w4$3
}
for CAUSAL in "" "--causal"; do
  DIM=64; LIB=d64; KERN=$(name 64 "$CAUSAL" gp); check
  DIM=128; LIB=new128; KERN=$(name 128 "$CAUSAL" gp); check
  DIM=128; LIB=new128; KERN=$(name 128 "$CAUSAL" gpf); check
done
echo "checks done after $((SECONDS-start)) s"
bench() { # label lib dim N B causal kernel
  out=$(timeout 120 $F attention --batch $5 --heads 16 --seq $4 --dim $3 --dtype bf16 --grad --bench $6 --backward-kernel $7 --kernels $E/$2 2>&1)
  echo "BENCH $1 d$3 ${6:-full} N=$4 $7: $(echo "$out" | grep -E 'bench +(forward|backward)|rror' | sed 's/(median of 30, //; s/ buffer sets)//; s/counting.*//' | tr -s ' ' | tr '\n' '|')"
}
for round in 1 2; do
  for c in "" "--causal"; do for nb in "1024 16" "4096 4" "16384 1"; do set -- $nb
    for k in g gp; do bench r$round-$k d64 64 $1 $2 "$c" $(name 64 "$c" $k); done
    for lib in old128 new128; do for k in gp gpf; do
      bench r$round-$lib $lib 128 $1 $2 "$c" $(name 128 "$c" $k); done; done
  done; done
  echo "round $round done after $((SECONDS-start)) s"
done
M="launch__registers_per_thread,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
for k in g gp; do
  left=$((560-(SECONDS-start)))
  [ $left -gt 60 ] || { echo "NCU $k skipped: ${left} s left"; continue; }
  timeout $((left-20)) ncu --clock-control none -k "regex:${k}_dkdv$" --launch-count 1 --metrics "$M" \
    $F attention --batch 4 --heads 16 --seq 4096 --dim 64 --dtype bf16 --grad --bench --warmup 0 --runs 1 \
    --backward-kernel $(name 64 "" $k) --kernels $E/d64 2>&1 |
    grep -vE "^(kernel|chosen|grad|device|shape|bench|memory)" > $OUT/ncu_d64_$k.txt
  echo "NCU $k: $(grep -E 'tensor_cycles|issue_active|duration' $OUT/ncu_d64_$k.txt | tr -s ' ' | tr '\n' '|')"
done
echo "done after $((SECONDS-start)) s"
