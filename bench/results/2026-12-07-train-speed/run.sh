#!/bin/bash
# One device call. fa-run-new: this session's runtime (chunked AdamW, the
# DGELU epilogue, all three epilogues by default); fa-run: the shipped one
# (16a0d50). 1) the training tests' scripts with fa-run-new (the ctest
# commands of test/train/CMakeLists.txt: CUDA graph, resume, profile, DDP on
# a world of one); 2) tokens/s, 100 steps, both models: fa-run-new, fa-run,
# PyTorch eager and torch.compile (bench/train_pytorch.py), then
# fa-run-new's --profile table.
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:/usr/local/cuda/lib64
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# Everything but run.txt under /tmp/w, packed into results.tgz at the end (the
# device tool brings back a few files only).
FINAL=$OUT; OUT=/tmp/w; rm -rf $OUT; mkdir -p $OUT
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
K=/tmp/k/kernels; D=.carry/data/tinyshakespeare.txt; F=.carry/bin/fa-run-new
small="--kernels $K --layers 2 --d-model 128 --heads 2 --seq 64 --batch 8 --warmup 2 --eval-batches 2"
for t in cuda_graph_test profile_test ddp_world_of_one_test resume_test; do
  timeout 240 bash test/train/$t.sh $F /tmp/t-$t $small > $OUT/test_$t.txt 2>&1
  echo "TEST $t rc=$?: $(tail -2 $OUT/test_$t.txt | tr '\n' '|')"
done
timeout 240 bash test/train/resume_test.sh $F /tmp/t-resume-dropout $small --dropout 0.2 > $OUT/test_resume_dropout.txt 2>&1
echo "TEST resume_test --dropout 0.2 rc=$?: $(tail -2 $OUT/test_resume_dropout.txt | tr '\n' '|')"
m85="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
m11="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64"
for model in 85 11; do
  shape=$([ $model = 85 ] && echo "$m85" || echo "$m11")
  for run in fa-run-new.1 fa-run.1 fa-run-new.2; do bin=${run%.*}
    timeout 120 .carry/bin/$bin train --kernels $K --data $D $shape --steps 100 > $OUT/fa_${model}m_$run.txt 2>&1
    echo "FA ${model}M $run: $(grep -E '^throughput' $OUT/fa_${model}m_$run.txt)"
  done
  for mode in eager compile; do
    flag=$([ $mode = compile ] && echo --compile)
    timeout 300 python3 bench/train_pytorch.py --data $D $shape --steps 100 --warmup 10 $flag \
      --json $OUT/pt_${model}m_$mode.json > $OUT/pt_${model}m_$mode.txt 2>&1
    echo "PT ${model}M $mode: $(tail -2 $OUT/pt_${model}m_$mode.txt | tr '\n' '|')"
  done
  timeout 120 $F train --kernels $K --data $D $shape --steps 40 --profile --profile-steps 10 \
    --profile-json $OUT/profile_${model}m.json > $OUT/profile_${model}m.txt 2>&1
done
tail -22 $OUT/profile_85m.txt
tar -czf $FINAL/results.tgz -C $OUT .
