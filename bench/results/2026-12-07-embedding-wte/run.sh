#!/bin/bash
# One device call: embedding_backward_wte with one token scan per group of
# up to 4 channel chunks (fa-run-emb, fa-train-gpu-tests-emb) against one
# scan per chunk (fa-run-new, commit d78046c): the TrainKernels GPU tests of
# the embedding and the determinism tests; the 85M and 10.8M steps profiled,
# alternating, with their loss logs compared byte for byte.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/k && tar -xJf .carry/kernels.tar.xz -C /tmp/k
K=/tmp/k/kernels; D=.carry/data/tinyshakespeare.txt
.carry/bin/fa-train-gpu-tests-emb --gtest_filter='*Embedding*:*RepeatBitForBit*' 2>&1 |
  grep -E "^\[ *(OK|FAILED|PASSED) |Failure" | tee $OUT/gpu_tests.txt | tail -12
m85="--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 16"
m11="--layers 6 --d-model 384 --heads 6 --seq 256 --batch 64"
for round in 1 2; do for model in 85 11; do
  shape=$([ $model = 85 ] && echo "$m85" || echo "$m11")
  for bin in fa-run-new fa-run-emb; do
    f=/tmp/${model}m_${bin}_$round
    timeout 120 .carry/bin/$bin train --kernels $K --data $D $shape --steps 40 --profile --profile-steps 10 \
      --log $f.jsonl > $f.txt 2>&1
    echo "PROFILE ${model}M $bin r$round: $(grep -E '^throughput|embedding  |step \(wall\)' $f.txt | tr -s ' ' | tr '\n' '|')"
  done
  python3 - /tmp/${model}m_fa-run-new_$round.jsonl /tmp/${model}m_fa-run-emb_$round.jsonl <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
keys = ("step", "loss", "val_loss", "grad_norm", "norm")
same = len(a) == len(b) and all(x.get(k) == y.get(k) for x, y in zip(a, b) for k in keys)
print(f"LOGS {sys.argv[1]}: {len(a)} entries, losses and norms {'identical' if same else 'DIFFER'}")
PY
done; done
cp /tmp/85m_fa-run-emb_2.txt $OUT/profile_85m_emb.txt
