//===- Chips.h - The GPUs the fa compiler generates code for ----*- C++ -*-===//
//
// One table of the chips `chip=` may name (fa-to-ptx, the tiling passes,
// convert-fa-to-nvgpu) and what the lowering needs to know about each: the
// PTX ISA version its PTX must declare, the static shared memory a block may
// use, and whether it has Hopper's warpgroup MMAs. A chip outside the table
// is refused with a diagnostic listing the table, before it reaches the NVPTX
// backend (where an empty, unknown or too new chip crashed or aborted).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TARGET_CHIPS_H
#define FA_TARGET_CHIPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::fa {

/// A GPU the kernels can be compiled for (an NVPTX processor name).
struct ChipInfo {
  llvm::StringLiteral name;
  /// The NVPTX feature selecting the PTX ISA version: at least the first that
  /// knows the chip (PTX 8.0 for every chip up to sm_90a).
  llvm::StringLiteral ptxFeature;
  /// ptxas's limit on one block's static shared memory (the kernels declare
  /// their tiles statically): 48 KiB, except on architecture-specific targets
  /// (sm_90a, sm_100a, ...), which may use the whole opt-in size.
  int64_t staticSharedBytes;
  /// wgmma.mma_async exists only in sm_90a's instruction set.
  bool warpgroupMma;
};

/// Every supported chip, oldest first.
llvm::ArrayRef<ChipInfo> getSupportedChips();

/// The entry of chip `name`, or null when it is not supported.
const ChipInfo *lookupChip(llvm::StringRef name);

/// "sm_80, sm_86, ..." for diagnostics.
std::string getSupportedChipList();

/// The largest static shared memory of any supported chip: the budget of a
/// kernel compiled without a particular chip in mind.
int64_t getLargestStaticSharedBytes();

} // namespace mlir::fa

#endif // FA_TARGET_CHIPS_H
