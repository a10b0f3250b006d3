#!/usr/bin/env bash
# Checks that a compiler change leaves the kernel library's PTX unchanged:
# export the library before and after, then compare the two exports.
#   scripts/compare_library_ptx.sh snapshot DIR [BUILD_DIR]
#       compiles BUILD_DIR/kernel-build/library.mlir (the library source that
#       kernels/CMakeLists.txt generates; default BUILD_DIR: build) with
#       BUILD_DIR/bin/fa-opt into DIR: one .ptx per kernel plus manifest.json.
#       DIR must not exist yet.
#   scripts/compare_library_ptx.sh compare DIR_A DIR_B
#       byte-compares the .ptx files and manifest.json of two snapshots; prints
#       each that differs or is missing on one side, exits 1 if any does, 0 if
#       they are identical. The copy of library.mlir a snapshot keeps (for
#       reference) is not compared: the library's source may be written
#       differently (a new attribute syntax) and still compile to the same
#       kernels, which is what this checks.
# Snapshot the old build's fa-opt before the change and the new one after, on
# the same library.mlir, so that only the compiler differs.
set -euo pipefail

usage() {
  echo "usage: $0 snapshot DIR [BUILD_DIR] | compare DIR_A DIR_B" >&2
  exit 2
}

snapshot() {
  local dir=$1 build=${2:-build}
  local fa_opt=$build/bin/fa-opt source=$build/kernel-build/library.mlir
  [ -x "$fa_opt" ] || { echo "compare_library_ptx: $fa_opt is missing; build fa-opt first" >&2; exit 1; }
  [ -f "$source" ] || { echo "compare_library_ptx: $source is missing; configure the build first" >&2; exit 1; }
  [ -e "$dir" ] && { echo "compare_library_ptx: $dir exists; snapshot into a new directory" >&2; exit 1; }
  "$fa_opt" "$source" "--fa-to-ptx=export-dir=$dir" -o /dev/null ||
    { echo "compare_library_ptx: fa-opt failed to compile $source" >&2; exit 1; }
  cp "$source" "$dir/library.mlir"
  echo "compare_library_ptx: $(ls "$dir"/*.ptx | wc -l) kernels and manifest.json in $dir"
}

compare() {
  local a=$1 b=$2
  for d in "$a" "$b"; do
    [ -f "$d/manifest.json" ] || { echo "compare_library_ptx: $d has no manifest.json; not a snapshot" >&2; exit 1; }
  done
  # -q: one line per differing or one-sided file, not the PTX diff itself.
  if diff -rq -x library.mlir "$a" "$b"; then
    echo "compare_library_ptx: identical ($(ls "$a"/*.ptx | wc -l) kernels and manifest.json)"
  else
    echo "compare_library_ptx: $a and $b differ (files above)" >&2
    exit 1
  fi
}

case ${1:-} in
  snapshot) [ $# -ge 2 ] && [ $# -le 3 ] || usage; snapshot "$2" "${3:-build}" ;;
  compare) [ $# -eq 3 ] || usage; compare "$2" "$3" ;;
  *) usage ;;
esac
