#!/bin/bash
# One device call: the TrainKernels GPU tests of the new cross-entropy and
# bias-gradient kernels; gradcheck with the weight-gradient stream; the 85M
# step at GPT-2's vocabulary (u16 shards of the bytes, --vocab 50304) with
# fa-run-base (d79d2b1) and fa-run-ws (the patches applied); the 85M and 10.8M steps with and
# without the weight-gradient stream, with and without the bias gradients in
# the dW products, with and without a CUDA graph of the step, alternating.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
.carry/bin/fa-train-gpu-tests-new --gtest_filter='*TrainKernels*:*LossHead*' > $OUT/train_kernels_tests.txt 2>&1
echo "train kernels tests: $(tail -3 $OUT/train_kernels_tests.txt | tr '\n' ' ')"
for args in "--dtype f32" "--dtype bf16" "--dtype f32 --vocab 50304 --layers 1" "--dtype f32 --weight-grad-stream" "--dtype f32 --epilogues none"; do
  .carry/bin/fa-run-ws gradcheck --kernels /tmp/k/kernels $args > /tmp/gc.txt 2>&1
  echo "gradcheck $args: rc $? $(tail -1 /tmp/gc.txt)" | tee -a $OUT/gradcheck.txt
done
bash .carry/test/weight_grad_stream_test.sh .carry/bin/fa-run-ws /tmp/wgs --kernels /tmp/k/kernels \
  --data .carry/data/tinyshakespeare.txt --layers 2 --d-model 128 --heads 2 --seq 64 --batch 8 \
  --warmup 2 --eval-batches 2 > $OUT/wgs_test.txt 2>&1; echo "wgs test rc $?: $(tail -2 $OUT/wgs_test.txt)"
# The training scripts moved onto train_runs.sh's helpers (016fa45).
small="--kernels /tmp/k/kernels --data .carry/data/tinyshakespeare.txt --layers 2 --d-model 128 --heads 2 --seq 64 --batch 8 --warmup 2 --eval-batches 2"
bash .carry/test/cuda_graph_test.sh .carry/bin/fa-run-ws /tmp/cg $small > $OUT/cuda_graph_test.txt 2>&1
echo "cuda graph test rc $?: $(tail -1 $OUT/cuda_graph_test.txt)"
bash .carry/test/profile_test.sh .carry/bin/fa-run-ws /tmp/pt $small > $OUT/profile_test.txt 2>&1
echo "profile test rc $?: $(tail -1 $OUT/profile_test.txt)"
for bin in fa-run-base fa-run-ws; do
  timeout 200 .carry/bin/$bin train --kernels /tmp/k/kernels --data-format u16 --vocab 50304 \
    --data .carry/data/ts.train.bin --val-data .carry/data/ts.val.bin \
    --layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16 --steps 30 --profile --profile-steps 8 \
    > $OUT/vocab50304_$bin.txt 2>&1
  echo "VOCAB 50304 $bin: $(grep -E 'embedding|loss \(|step \(wall\)|^throughput' $OUT/vocab50304_$bin.txt | tr -s ' ' | tr '\n' '|')"
done
declare -A models=(
  [85m]="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
  [11m]="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64")
declare -A variants=([serial]=""
  [stream-nobgrad]="--epilogues gelu-forward,gelu-backward --weight-grad-stream"
  [serial-nobgrad]="--epilogues gelu-forward,gelu-backward"
  [graph]="--cuda-graph" [graph-stream]="--cuda-graph --weight-grad-stream")
for round in 1 2; do for name in 85m 11m; do for variant in serial serial-nobgrad stream-nobgrad graph graph-stream; do
  timeout 200 .carry/bin/fa-run-ws train --kernels /tmp/k/kernels --data .carry/data/tinyshakespeare.txt \
    ${models[$name]} --steps 40 ${variants[$variant]} > $OUT/step_${name}_${variant}_$round.txt 2>&1
  echo "STEP $name $variant $round: $(grep -E '^throughput' $OUT/step_${name}_${variant}_$round.txt)"
done; done; done
.carry/bin/fa-run-ws train --kernels /tmp/k/kernels --data .carry/data/tinyshakespeare.txt ${models[85m]} \
  --steps 40 --epilogues gelu-forward,gelu-backward --weight-grad-stream --profile --profile-steps 10 > $OUT/profile_85m_nobgrad.txt 2>&1
grep -E "bias grad|matmul|step \(wall" $OUT/profile_85m_nobgrad.txt
# The caller tars $OUT (this script may be cut off by its timeout).
