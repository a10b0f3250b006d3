//===- DefaultTiles.h - Default attention tile configurations ---*- C++ -*-===//
//
// The reader of DefaultTiles.def for the tiling passes: the configuration a
// kernel without fa.tile gets on a chip, the same one the kernel library
// ships as that group's default.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_DEFAULTTILES_H
#define FA_DIALECT_FA_TRANSFORMS_DEFAULTTILES_H

#include "fa/Dialect/FA/IR/FAAttrs.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace mlir::fa {

/// Which kernels of an attention a default configures: ForwardVariant and
/// BackwardVariant are those of an attention with a variant (mask or score
/// regions, dropout).
enum class AttentionDirection {
  Forward,
  ForwardVariant,
  Backward,
  BackwardVariant
};

/// The fa.tile DefaultTiles.def gives the attention kernels of `op`
/// (`direction`, operands of `element`, `headDim`, `causal`) on `chip`, or a
/// null attribute when it has none. A variant's kernels without an entry of
/// their own take the plain kernels', without the warp-specialisation flags
/// and the register cap (TileAttr::forVariants): fa-warp-specialize does
/// not split variants yet (the documented fallback), and their regions
/// spill under the plain kernel's cap. Fails, reporting on `op`, for an
/// entry that does not parse as a #fa.tile.
FailureOr<TileAttr> lookupDefaultTile(Operation *op, StringRef chip,
                                      AttentionDirection direction,
                                      Type element, int64_t headDim,
                                      bool causal);

/// The configuration the kernels of `func` are built from: its fa.tile; for
/// a function without one, the chip's default (lookupDefaultTile) when no
/// tile option was given (`tileOptionsGiven`), else the attribute without
/// entries (the pass options then supply every size).
FailureOr<TileAttr> getFunctionTileConfig(Operation *func, StringRef chip,
                                          bool tileOptionsGiven,
                                          AttentionDirection direction,
                                          Type element, int64_t headDim,
                                          bool causal);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_DEFAULTTILES_H
