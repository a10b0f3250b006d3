#!/usr/bin/env bash
# Configures and builds the project in build/ (compiler, kernel library,
# runtime, fa-run, tests). Parts whose dependencies are missing are skipped
# by CMake with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
ninja -C build
