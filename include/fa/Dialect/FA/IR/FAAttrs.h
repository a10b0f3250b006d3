//===- FAAttrs.h - Attributes of the fa dialect -----------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FAATTRS_H
#define FA_DIALECT_FA_IR_FAATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

#include <optional>

#include "fa/Dialect/FA/IR/FAEnums.h.inc"

namespace mlir::fa {
/// Parses a list in square brackets, the elements with FieldParser<T>.
template <typename T>
FailureOr<SmallVector<T>> parseSquareList(AsmParser &parser);
/// Prints `[element, ...]`.
template <typename T>
void printSquareList(AsmPrinter &printer, ArrayRef<T> elements);
} // namespace mlir::fa

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FA/IR/FAAttrs.h.inc"

namespace mlir::fa {
/// Discardable attributes of the dialect, each of one type (checked by
/// FADialect::verifyOperationAttribute).
/// A function's (or kernel's) attention tile configuration: FATileAttr.
inline constexpr llvm::StringLiteral kTileConfigAttr = "fa.tile";
/// A function's (or kernel's) row-wise kernel configuration: FARowsAttr.
inline constexpr llvm::StringLiteral kRowsConfigAttr = "fa.rows";
/// Which phase of the softmax a key/value loop computes: SoftmaxPhaseAttr.
inline constexpr llvm::StringLiteral kSoftmaxPhaseAttr = "fa.softmax_phase";
/// Module attribute: kernel name -> the kernel's manifest entry.
inline constexpr llvm::StringLiteral kKernelsAttr = "fa.kernels";
/// On a warp-specialised kernel (fa-warp-specialize): the threads of its
/// producer warpgroup, which follow the computing threads (an i64).
inline constexpr llvm::StringLiteral kProducerThreadsAttr =
    "fa.producer_threads";
/// On the scf.if of a warp-specialised kernel that splits the block by role
/// (then: producer, else: the computing warpgroups): a unit attribute.
inline constexpr llvm::StringLiteral kWarpRolesAttr = "fa.warp_roles";
/// The named barriers of a warp-specialised kernel (0 is the block's): the
/// computing threads' own barrier, which convert-fa-to-nvgpu lowers their
/// block barriers to, and the first of the two ping-pong turns
/// (fa-warp-specialize), computing warpgroup w waiting on kTurnBarrierId + w;
/// and a dK/dV kernel's hand-over of each dQ tile to its writer warps
/// through one staging buffer: writer w's tile staged (kDqStagedBarrierId +
/// 2 w) and written out (kDqWrittenBarrierId + 2 w).
inline constexpr int32_t kComputingBarrierId = 1;
inline constexpr int32_t kTurnBarrierId = 2;
inline constexpr int32_t kDqStagedBarrierId = 4;
inline constexpr int32_t kDqWrittenBarrierId = 5;

/// The tile configuration of `kernel`, or the one without entries (every
/// flag at its default, no size) when it has none.
TileAttr getTileConfig(Operation *kernel);

/// The softmax phase `loop` is marked with, if any.
std::optional<SoftmaxPhase> getSoftmaxPhase(Operation *loop);

/// Parses a size of a configuration attribute: an integer.
FailureOr<int64_t> parseSize(AsmParser &parser);
/// The same, for a size a pass option supplies when absent.
FailureOr<std::optional<int64_t>> parseOptionalSize(AsmParser &parser);
/// Parses a flag of a configuration attribute: `true` or `false`.
FailureOr<bool> parseFlag(AsmParser &parser);
/// The same, for a flag a pass option supplies when absent.
FailureOr<std::optional<bool>> parseOptionalFlag(AsmParser &parser);
} // namespace mlir::fa

#endif // FA_DIALECT_FA_IR_FAATTRS_H
