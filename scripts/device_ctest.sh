#!/usr/bin/env bash
# On a GPU machine, from the repository root: runs the ctest entries labelled
# gpu (or those matching REGEX) from the build that scripts/pack_carry.sh
# packed into CARRY, writing OUT/ctest_gpu.log and a summary to stdout.
#   scripts/device_ctest.sh .carry OUT [REGEX]
# ctest's files hold the packing machine's absolute paths, so this links
# those paths to the copy here when they do not exist.
set -uo pipefail
usage="usage: device_ctest.sh CARRY OUT [REGEX]"
carry=$(cd "${1:?$usage}" && pwd) || exit 2
out=${2:?$usage}
regex=${3:-}
mkdir -p "$out"
build_dir=$(cat "$carry/build-dir") source_dir=$(cat "$carry/source-dir")
[ -d "$carry/kernels" ] || tar -C "$carry" -xJf "$carry/kernels.tar.xz"
ln -sfn "$carry/bin" "$carry/build/bin"
ln -sfn "$carry/kernels" "$carry/build/kernels"
link() { # link PATH TARGET: PATH must either be free or already be TARGET.
  if [ ! -e "$1" ]; then
    mkdir -p "$(dirname "$1")" && ln -sfn "$2" "$1"
  elif [ "$(readlink -f "$1")" != "$(readlink -f "$2")" ]; then
    echo "device_ctest: $1 exists and is not $2; cannot run the packed tests here" >&2
    exit 2
  fi
}
link "$source_dir" "$PWD"
link "$build_dir" "$carry/build"
[ -d "$carry/data" ] && link "$(dirname "$source_dir")/shared/data" "$carry/data"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ctest --test-dir "$build_dir" -L gpu ${regex:+-R "$regex"} -j4 --output-on-failure \
  > "$out/ctest_gpu.log" 2>&1
status=$?
grep -E "tests passed|tests failed|Skipped|\(Failed\)|Not Run|Timeout" "$out/ctest_gpu.log" | tail -40
exit $status
