#!/bin/bash
# One device call: fa-run-new / fa-train-gpu-tests-new are this change's
# build (chunked AdamW; --epilogues gelu-backward as DGELU alone, fc's bias
# gradient in its dW product); fa-run is the shipped one (16a0d50).
# The Matmul and AdamW GPU tests, the gradient checks with every epilogue,
# then the 85M and 10.8M steps, alternating, 40 steps, --profile.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
K=/tmp/k/kernels; D=.carry/data/tinyshakespeare.txt
.carry/bin/fa-train-gpu-tests-new --gtest_filter='MatmulGpuTest.*:*AdamW*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure" | tee $OUT/gpu_tests.txt | tail -40
for args in "--dtype f32 --epilogues all" "--dtype bf16 --epilogues all" "--dtype f32" "--dtype bf16"; do
  out=$(timeout 120 .carry/bin/fa-run-new gradcheck --kernels $K $args 2>&1); rc=$?
  echo "GRADCHECK $args rc=$rc: $(echo "$out" | tail -3 | tr '\n' '|')"
done
m85="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
m11="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64"
for round in 1 2; do
  for model in 85 11; do
    shape=$([ $model = 85 ] && echo "$m85" || echo "$m11")
    for v in "old|fa-run|" "new|fa-run-new|" "new-dgelu|fa-run-new|--epilogues all"; do
      IFS='|' read -r label bin extra <<< "$v"
      f=$OUT/profile_${model}m_${label}_$round
      timeout 200 .carry/bin/$bin train --kernels $K --data $D $shape --steps 40 $extra --profile \
        --profile-steps 10 --profile-json $f.json > $f.txt 2>&1
      echo "PROFILE ${model}M $label r$round: $(grep -E '^throughput|matmul|gelu  |optimizer|step \(wall\)|^step +40' $f.txt | tr -s ' ' | tr '\n' '|')"
    done
  done
done
