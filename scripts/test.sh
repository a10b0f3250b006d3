#!/usr/bin/env bash
# The whole test suite: set up, build, then every ctest test (lit, unit, and
# the GPU tests, which report SKIPPED where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure
