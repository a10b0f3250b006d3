#!/usr/bin/env bash
# Checks that every C++/CUDA file git tracks is formatted as .clang-format
# says (LLVM style), with the clang-format that scripts/setup.sh installs.
#   scripts/check_format.sh          lists the files that differ, exits 1 if any
#   scripts/check_format.sh --fix    formats them in place
# Exits 77 (ctest: SKIPPED) when clang-format-22 is not installed, since
# another version formats some constructs differently.
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-$(command -v clang-format-22 || true)}
if [ -z "$clang_format" ]; then
  echo "check_format: clang-format-22 not found (scripts/setup.sh installs it); skipping" >&2
  exit 77
fi

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_format: not a git checkout, so no list of tracked files; skipping" >&2
  exit 77
fi

mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi

unformatted=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
  printf 'check_format: not formatted: %s\n' "${unformatted[@]}" >&2
  echo "check_format: ${#unformatted[@]} of ${#files[@]} files differ from .clang-format; run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} files formatted"
