#!/bin/bash
# One device call on the packed build of the weight-gradient stream as the
# default (--serial-weight-grads turns it off) with the default epilogues
# gelu-forward,gelu-backward (bias gradients in TrainKernels::biasGradient on
# that stream): 1) the training and gradcheck ctest entries (label gpu); 2)
# tokens/s, 85M and 10.8M, 40 steps (throughput 9-40), two rounds
# alternating: the new default, the previous default (--serial-weight-grads
# --epilogues all), each with and without --cuda-graph; 3) PyTorch eager and
# torch.compile of the same models (bench/train_pytorch.py, 100 steps); 4)
# the default's --profile at 85M (with --serial-weight-grads: profiling
# serialises the phases).
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:/usr/local/cuda/lib64
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FINAL=$OUT; OUT=/tmp/w; rm -rf $OUT; mkdir -p $OUT
trap 'tar -czf $FINAL/results.tgz -C $OUT .' EXIT
start=$SECONDS
timeout 240 bash scripts/device_ctest.sh .carry $OUT 'fa-run\.(train|gradcheck)'
echo "CTEST rc=$? in $((SECONDS - start)) s"
K=.carry/kernels; D=.carry/data/tinyshakespeare.txt; F=.carry/bin/fa-run
declare -A models=(
  [85m]="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
  [11m]="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64")
declare -A variants=([default]="" [previous]="--serial-weight-grads --epilogues all"
  [graph]="--cuda-graph" [graph-previous]="--cuda-graph --serial-weight-grads --epilogues all")
for round in 1 2; do for name in 85m 11m; do for variant in default previous graph graph-previous; do
  timeout 100 $F train --kernels $K --data $D ${models[$name]} --steps 40 ${variants[$variant]} \
    > $OUT/step_${name}_${variant}_$round.txt 2>&1
  echo "STEP $name $variant $round: $(grep -E '^throughput' $OUT/step_${name}_${variant}_$round.txt)"
done; done; done
for name in 85m 11m; do for mode in eager compile; do
  flag=$([ $mode = compile ] && echo --compile)
  timeout 240 python3 bench/train_pytorch.py --data $D ${models[$name]} --steps 100 --warmup 10 $flag \
    --json $OUT/pt_${name}_$mode.json > $OUT/pt_${name}_$mode.txt 2>&1
  echo "PT $name $mode: $(tail -2 $OUT/pt_${name}_$mode.txt | tr '\n' '|')"
done; done
timeout 100 $F train --kernels $K --data $D ${models[85m]} --steps 40 --profile --profile-steps 10 \
  > $OUT/profile_85m.txt 2>&1
tail -22 $OUT/profile_85m.txt
echo "total $((SECONDS - start)) s"
