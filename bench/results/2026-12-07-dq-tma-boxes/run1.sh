#!/bin/bash
# Fused dQ adds by TMA tensor reduction (boxes) against the rows' bulk copies:
# fp64 checks and bitwise repeatability of boxes (V picks another dir), then
# the backward of default / rows / boxes (DIRS picks others), every row in
# one run, then the fa-run.grad.fused-dq.* ctest commands. Inputs: README.md.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
V=${V:-boxes}
for c in "" "--causal"; do for s in "1 2 2 1" "17 2 4 2" "333 1 8 2" "1000 2 2 2" "4097 1 4 2" "2049 3 2 1"; do set -- $s
  out=$(timeout 60 $F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim 128 --dtype bf16 --grad --check $c --kernels .carry/exp/$V 2>&1); rc=$?
  echo "CHECK $V ${c:-full} seq=$1 B=$2 H=$3 KV=$4 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
done; done
python3 - <<'PY'
import numpy as np
r = np.random.default_rng(7)
for name in ["q", "k", "v", "dout"]:
    np.save(f"/tmp/{name}.npy", r.standard_normal((2, 4, 4097, 128)).astype(np.float32))
PY
for c in "" "--causal"; do
  for i in 1 2; do $F attention --q /tmp/q.npy --k /tmp/k.npy --v /tmp/v.npy --out /tmp/o.npy --dout /tmp/dout.npy --grad $c --dq /tmp/dq$i.npy --dk /tmp/dk$i.npy --dtype bf16 --kernels .carry/exp/$V > /tmp/log$i.txt 2>&1 || { echo "run $i failed"; tail -3 /tmp/log$i.txt; }; done
  cmp /tmp/dq1.npy /tmp/dq2.npy && echo "REPEAT ${c:-full}: dq bitwise equal over two runs" || echo "REPEAT ${c:-full}: dq DIFFERS"
  cmp /tmp/dk1.npy /tmp/dk2.npy && echo "REPEAT ${c:-full}: dk bitwise equal" || echo "REPEAT ${c:-full}: dk DIFFERS"
done
for c in "" "--causal"; do for nb in "1024 16" "4096 4" "16384 1"; do set -- $nb
  for dir in ${DIRS:-default rows boxes}; do
    out=$(timeout 120 $F attention --batch $2 --heads 16 --seq $1 --dim 128 --dtype bf16 --grad --bench $c --kernels .carry/exp/$dir 2>&1)
    echo "BENCH $dir ${c:-full} N=$1: $(echo "$out" | grep -E 'bench +backward|rror' | sed 's/(median of 30, //; s/ buffer sets)//; s/counting.*//' | tr -s ' ' | tr '\n' '|')"
  done; done; done
# The GPU ctest entries fa-run.grad.fused-dq.* (test/runtime/CMakeLists.txt), their commands, on the
# library that the build's custom command makes (fixtures/FusedDqKernels.mlir, fuse-dq=1).
for c in "" "--causal"; do for s in "17 2 4 2" "4097 1 4 2"; do set -- $s
  out=$($F attention --batch $2 --heads $3 --kv-heads $4 --seq $1 --dim 128 --dtype bf16 $c --grad --check --kernels .carry/exp/fused-dq --skip-if-no-gpu 2>&1); rc=$?
  echo "CTEST fused-dq ${c:-plain} seq=$1 rc=$rc: $(echo "$out" | grep -E 'check +grad|rror' | tr -s ' ')"
done; done
