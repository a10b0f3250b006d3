#!/usr/bin/env bash
# One call on a GPU machine (one GPU or several) for the training loop: the
# NCCL tests of fa-train-gpu-tests, then bench/bench_distributed.py (its
# options after GPUS, e.g. --torch --skip-equivalence). Few files come back:
# comm_tests.txt, bench.txt, distributed.json/.md and logs.tgz (every run's
# output and loss log).
#   scripts/pack_carry.sh                                   # here
#   bash bench/gpu_train_check.sh .carry OUT GPUS [options]  # there
set -uo pipefail
usage="usage: gpu_train_check.sh CARRY OUT GPUS [bench_distributed.py options]"
carry=${1:?$usage} out=${2:?$usage} gpus=${3:?$usage}
shift 3
# NVLink multicast stays off (the GPU machines' rule: it can take shared GPUs
# out of service); the ranks inherit this environment.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nccl=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
export LD_LIBRARY_PATH=$nccl:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 180 "$carry/bin/fa-train-gpu-tests" --gtest_filter='*Comm*:*Nccl*:*MultiGpu*' \
  > "$out/comm_tests.txt" 2>&1
echo "NCCL tests: rc=$?"
grep -E "OK \]|FAILED  \]|SKIPPED \]" "$out/comm_tests.txt" | tail -20
work=$(mktemp -d)
timeout 480 python3 bench/bench_distributed.py --fa-run "$carry/bin/fa-run" \
  --kernels "$carry/kernels" --data "$carry/data/tinyshakespeare.txt" --gpus "$gpus" \
  --out "$work/runs" "$@" > "$out/bench.txt" 2>&1
status=$?
echo "bench_distributed.py: rc=$status"
tail -60 "$out/bench.txt"
cp "$work/runs/distributed.json" "$work/runs/distributed.md" "$out/" 2>/dev/null
tar czf "$out/logs.tgz" --exclude='*.ckpt' -C "$work" runs
exit $status
