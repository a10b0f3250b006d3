//===- Passes.h - Transformations of the fa dialect -------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_TRANSFORMS_PASSES_H
#define FA_DIALECT_FA_TRANSFORMS_PASSES_H

#include "fa/Dialect/FA/IR/FAAttrs.h"
#include "fa/Dialect/FA/IR/FADialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fa {

/// Discardable attributes the passes use to hand structure to each other.
/// A key/value sweep (`scf.for` over key tiles), for causal-tile elimination.
inline constexpr llvm::StringLiteral kKvLoopAttr = "fa.kv_loop";
/// A loop over tiles whose body stages two tiles (fa.stage_tile into
/// loop-invariant buffers) that it may read anywhere in the body, as the
/// backward's loops do: fa-pipeline-kv-copies double-buffers it when the
/// kernel's num_stages is 2 or more, and leaves it synchronous otherwise.
inline constexpr llvm::StringLiteral kCopyLoopAttr = "fa.copy_loop";
/// A key loop made by fa-eliminate-causal-tiles, with the kind of its
/// tiles: "full", "partial" (masked) or "visited" (a region mask's).
inline constexpr llvm::StringLiteral kKvTilesAttr = "fa.kv_tiles";
/// A key loop whose tile copies are already asynchronous (by
/// fa-overlap-softmax or fa-pipeline-kv-copies), which the others leave.
inline constexpr llvm::StringLiteral kPipelinedAttr = "fa.pipelined";
/// On a kernel function: the name of the variant its attention op's regions
/// compute (the manifest's "variant"), set by fa-expand-attention-variants
/// for named variants ("window+softcap") or by the user for a region.
inline constexpr llvm::StringLiteral kVariantAttr = "fa.variant";
/// On a kernel function's argument: the name the manifest gives the kernel
/// parameter it becomes ("window_left", or a user's "prefix").
inline constexpr llvm::StringLiteral kParamNameAttr = "fa.name";
/// On fa.attention / fa.attention_grad: the document ids its mask region
/// compares are non-decreasing along each sequence (the `document` variant
/// requires it), so the tile classifier may search them.
inline constexpr llvm::StringLiteral kSortedDocumentIdsAttr =
    "fa.sorted_document_ids";

#define GEN_PASS_DECL
#include "fa/Dialect/FA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Dialect/FA/Transforms/Passes.h.inc"

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_PASSES_H
