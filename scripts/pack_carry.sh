#!/usr/bin/env bash
# Packs what a GPU machine without MLIR needs into .carry/ (git-ignored, a
# few tens of MB): the runtime binaries, the kernel library, and the ctest
# files with the fixture kernels, so that the GPU tests run there as ctest.
#   scripts/pack_carry.sh [BUILD_DIR]        # default: build
# Then on the GPU machine: bench/gpu_check.sh .carry OUT MODE, or
# scripts/device_ctest.sh .carry OUT for `ctest -L gpu`.
set -euo pipefail
build=${1:-build}
rm -rf .carry
mkdir -p .carry/bin .carry/build
for tool in fa-run fa-handwritten fa-runtime-gpu-tests fa-train-gpu-tests; do
  [ -x "$build/bin/$tool" ] || { echo "pack_carry: $build/bin/$tool is missing; build first" >&2; exit 1; }
  cp "$build/bin/$tool" .carry/bin/
done
# The C API library that the Python package (python/fa) loads, where the
# ctest entries of test/python expect it.
mkdir -p .carry/build/lib
cp "$build/lib/libfa_runtime.so" .carry/build/lib/ 2>/dev/null ||
  echo "pack_carry: no $build/lib/libfa_runtime.so; the Python tests will skip" >&2
# The kernel library compressed (its PTX is tens of MB, past what the device
# tool carries); device_ctest.sh and gpu_check.sh unpack it into kernels/.
tar -C "$build" -cJf .carry/kernels.tar.xz kernels
# No links here (the device tool may not carry them): device_ctest.sh makes
# .carry/build/bin and .carry/build/kernels point at these.
# ctest's own files: the test lists, gtest's discovered lists, fixtures.
(cd "$build" && find . \( -name CTestTestfile.cmake -o -name '*_include.cmake' \
   -o -name '*_tests.cmake' \) -print0 | xargs -0 cp --parents -t ../.carry/build)
mkdir -p .carry/build/test/runtime
cp -r "$build/test/runtime/fixture-kernels" .carry/build/test/runtime/
# Inputs the configure step writes for the tests (.npy files).
[ -d "$build/test/runtime/variant-npy" ] &&
  cp -r "$build/test/runtime/variant-npy" .carry/build/test/runtime/
# The training tests' corpus, next to the checkout (../shared/data).
if [ -d ../shared/data ]; then
  mkdir -p .carry/data && cp ../shared/data/*.txt .carry/data/
fi
# ctest's files name the build and source trees by absolute path.
(cd "$build" && pwd) > .carry/build-dir
pwd > .carry/source-dir
echo "packed $(du -sh .carry | cut -f1) into .carry (built in $(cat .carry/build-dir))"
