#!/bin/bash
# One device call: bench/cublaslt_algos.cpp (built there with nvcc) on the
# 85M and 10.8M models' block products (16384 tokens, width 768 and 384);
# the AdamW GPU tests of the chunked kernel (fa-train-gpu-tests-new); and the
# 85M step's `fa-run train --profile` with the shipped fa-run and with the
# chunked AdamW (fa-run-new), alternating.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -std=c++17 -x cu bench/cublaslt_algos.cpp -lcublasLt -o /tmp/cublaslt_algos || exit 1
/tmp/cublaslt_algos --tokens 16384 --width 768 --candidates 16 | tee $OUT/algos_85m.txt
/tmp/cublaslt_algos --tokens 16384 --width 384 --candidates 16 | tee $OUT/algos_11m.txt
.carry/bin/fa-train-gpu-tests-new --gtest_filter='*AdamW*' 2>&1 | tail -15 | tee $OUT/adamw_tests.txt
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
for round in 1 2; do for bin in fa-run fa-run-new; do
  timeout 200 .carry/bin/$bin train --kernels /tmp/k/kernels --data .carry/data/tinyshakespeare.txt \
    --layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16 --steps 40 --profile --profile-steps 10 \
    --profile-json $OUT/profile_85m_${bin}_$round.json > $OUT/profile_85m_${bin}_$round.txt 2>&1
  echo "PROFILE $bin round $round: $(grep -E 'optimizer|step \(wall\)|^throughput' $OUT/profile_85m_${bin}_$round.txt | tr -s ' ' | tr '\n' '|')"
done; done
tail -22 $OUT/profile_85m_fa-run-new_2.txt
