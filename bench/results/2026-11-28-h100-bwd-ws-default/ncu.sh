# ncu of the backward's kernels, bf16 D=128 N=4096 B=4 H=16: the new default's
# dK/dV (warp-specialised 128 x 64, plain and causal) and dQ kernels, and the
# previous default's dK/dV kernel (old128), for tensor-pipe utilisation and
# the stall reasons. Clocks left alone (METHOD.md).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
M="launch__registers_per_thread,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
run() { # dir causal kernel-regex
  ncu --clock-control none -k "regex:$3" --launch-count 1 --metrics "$M" .carry/bin/fa-run attention --batch 4 --heads 16 --seq 4096 --dim 128 --dtype bf16 --grad --bench $2 --warmup 0 --runs 1 --kernels .carry/$1 2>&1 | grep -vE "^(kernel|chosen|grad|device|shape|bench|memory)" ; }
run kernels "" "dkdv$"
run kernels "--causal" "dkdv$"
run exp/old128 "" "dkdv$"
run kernels "" "gp$"
