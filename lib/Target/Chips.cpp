//===- Chips.cpp - The GPUs the fa compiler generates code for ------------===//
//
// PTX versions from the PTX ISA's target table; shared-memory limits as
// ptxas 13.0 reports them ("uses too much shared data (..., 0x38c00 max)").
// Every chip here assembles the kernels of examples/ and the library's
// configurations that fit it (mma.sync, ldmatrix and cp.async exist from
// sm_80 on).
//
//===----------------------------------------------------------------------===//

#include "fa/Target/Chips.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir::fa;

namespace {
constexpr int64_t kKiB = 1024;
/// Static shared memory without an architecture-specific target.
constexpr int64_t kPortableShared = 48 * kKiB;

const ChipInfo kChips[] = {
    {"sm_80", "+ptx80", kPortableShared, false},
    {"sm_86", "+ptx80", kPortableShared, false},
    {"sm_87", "+ptx80", kPortableShared, false},
    {"sm_89", "+ptx80", kPortableShared, false},
    {"sm_90", "+ptx80", kPortableShared, false},
    {"sm_90a", "+ptx80", 227 * kKiB, true},
    {"sm_100", "+ptx86", kPortableShared, false},
    {"sm_100a", "+ptx86", 227 * kKiB, false},
    {"sm_103", "+ptx88", kPortableShared, false},
    {"sm_103a", "+ptx88", 227 * kKiB, false},
    {"sm_120", "+ptx87", kPortableShared, false},
    {"sm_120a", "+ptx87", 99 * kKiB, false},
    {"sm_121", "+ptx88", kPortableShared, false},
    {"sm_121a", "+ptx88", 99 * kKiB, false},
};
} // namespace

llvm::ArrayRef<ChipInfo> mlir::fa::getSupportedChips() { return kChips; }

const ChipInfo *mlir::fa::lookupChip(llvm::StringRef name) {
  const ChipInfo *chip = llvm::find_if(
      kChips, [&](const ChipInfo &info) { return info.name == name; });
  return chip == std::end(kChips) ? nullptr : chip;
}

std::string mlir::fa::getSupportedChipList() {
  std::string list;
  llvm::raw_string_ostream os(list);
  llvm::interleaveComma(kChips, os,
                        [&](const ChipInfo &info) { os << info.name; });
  return list;
}

int64_t mlir::fa::getLargestStaticSharedBytes() {
  int64_t largest = 0;
  for (const ChipInfo &chip : kChips)
    largest = std::max(largest, chip.staticSharedBytes);
  return largest;
}
