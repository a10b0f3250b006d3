#!/bin/bash
# One device call: bench/cublaslt_algos.cpp with --split-k and --overlap on
# the 85M and 10.8M block products; then the 85M step at GPT-2's vocabulary
# (u16 shards of the bytes, --vocab 50304) against --vocab 256, profiled.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
nvcc -O2 -std=c++17 -x cu bench/cublaslt_algos.cpp -lcublasLt -o /tmp/cublaslt_algos || exit 1
/tmp/cublaslt_algos --tokens 16384 --width 768 --candidates 8 --split-k --overlap | tee $OUT/split_overlap_85m.txt
/tmp/cublaslt_algos --tokens 16384 --width 384 --candidates 8 --split-k --overlap | tee $OUT/split_overlap_11m.txt
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
for vocab in 256 50304; do  # shipped fa-run (before the stream)
  timeout 200 .carry/bin/fa-run train --kernels /tmp/k/kernels --data-format u16 --vocab $vocab \
    --data .carry/data/ts.train.bin --val-data .carry/data/ts.val.bin \
    --layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16 --steps 24 --profile --profile-steps 8 \
    > $OUT/vocab_$vocab.txt 2>&1
  echo "VOCAB $vocab: $(grep -E 'embedding|matmul|loss|step \(wall\)|^throughput' $OUT/vocab_$vocab.txt | tr -s ' ' | tr '\n' '|')"
done
# The weight-gradient stream (fa-run-ws, GptModel::setWeightGradientStream):
# its test, then the 85M and 10.8M steps with it and without it
# (--serial-weight-grads), alternating, 40 steps each.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
bash .carry/test/weight_grad_stream_test.sh .carry/bin/fa-run-ws /tmp/wgs --kernels /tmp/k/kernels \
  --data .carry/data/tinyshakespeare.txt --layers 2 --d-model 128 --heads 2 --seq 64 --batch 8 \
  --warmup 2 --eval-batches 2 > $OUT/wgs_test.txt 2>&1; echo "wgs test rc $?: $(tail -2 $OUT/wgs_test.txt)"
declare -A models=(
  [85m]="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
  [11m]="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64")
for name in 85m 11m; do for round in 1 2; do for variant in stream serial; do
  flag=$([ $variant = serial ] && echo --serial-weight-grads)
  timeout 200 .carry/bin/fa-run-ws train --kernels /tmp/k/kernels --data .carry/data/tinyshakespeare.txt \
    ${models[$name]} --steps 40 $flag > $OUT/step_${name}_${variant}_$round.txt 2>&1
  echo "STEP $name $variant $round: $(grep -E '^throughput' $OUT/step_${name}_${variant}_$round.txt)"
done; done; done
tar czf /tmp/results.tgz -C $OUT . && mv /tmp/results.tgz $OUT/
