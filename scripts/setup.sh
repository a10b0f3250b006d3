#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone; `apt-get update` runs once.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev googletest nlohmann-json3-dev libcli11-dev
  clang-format-22
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

if [ ! -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: warning: CUDA toolkit not found at /usr/local/cuda; PTX assembly checks and the runtime build are skipped" >&2
fi
