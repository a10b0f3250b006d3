//===- KernelFunctions.h - Functions that become kernels --------*- C++ -*-===//
//
// Every tiling pass turns a func.func holding one program-level op (and the
// return) into GPU kernels and records them in the module's fa.kernels for
// the manifest. This is the part they share.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H
#define FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H

#include "fa/Dialect/FA/IR/FAAttrs.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// Builds the kernels of `func` (whose body is `op`) before it, appending
/// their manifest entries to `kernels`.
using TileFunctionFn =
    function_ref<LogicalResult(func::FuncOp func, Operation *op,
                               SmallVectorImpl<NamedAttribute> &kernels)>;

/// Calls `tile` for every op of `module` that `isKernelOp` accepts, erases
/// its function, and adds the entries to the module's kKernelsAttr (marking
/// the module a GPU container). Fails, with a diagnostic, for such an op that
/// is not alone in a func.func, and when `tile` fails.
LogicalResult tileKernelFunctions(ModuleOp module,
                                  function_ref<bool(Operation *)> isKernelOp,
                                  TileFunctionFn tile);

/// Clones the ops before `op` in its function (the prelude
/// tileKernelFunctions accepts) at `b`, through `mapping` (which maps the
/// function's arguments to the kernel's), so that the kernel's copy of `op`
/// finds their values.
void clonePrelude(OpBuilder &b, Operation *op, IRMapping &mapping);

/// The manifest's variant of the kernels of `func`, whose attention op has
/// mask/score regions or not (`hasRegions`): the function's fa.variant
/// (fa-expand-attention-variants names the named variants), "custom" for an
/// unnamed region, empty without regions.
StringRef getKernelVariant(func::FuncOp func, bool hasRegions);
/// getKernelVariant of `func`, whose attention op (fa.attention or
/// fa.attention_grad) is `op`.
template <typename AttentionLikeOp>
StringRef getKernelVariant(func::FuncOp func, AttentionLikeOp op) {
  return getKernelVariant(func,
                          !op.getMask().empty() || !op.getScore().empty());
}

/// The manifest's name of the kernel parameter that argument `arg` of a
/// kernel function becomes when it is not one of the op's tensors: its
/// fa.name, else captureN when it is capture N of the op's `captures`,
/// else argN.
StringAttr getExtraParamName(func::FuncOp func, BlockArgument arg,
                             ValueRange captures);

/// The suffix of a tensor-map kernel parameter's name: `<t>_tma` maps the
/// kernel's memref parameter `<t>`, from which the runtime encodes it.
inline constexpr llvm::StringLiteral kTensorMapParamSuffix = "_tma";

/// The kernel parameter (memref<1xi32>) from which a persistent causal
/// forward takes its tiles (fa-warp-specialize); the runtime zeroes it
/// before each launch.
inline constexpr llvm::StringLiteral kTileCounterParam = "tile_counter";

/// The manifest's name of a kernel element type: "bf16", "f16", "f32", and
/// for tables a region reads, "i32" or "i64".
StringRef dtypeName(Type element);

/// A kernel parameter: the name the manifest gives it, its type, and the
/// function's value it stands for (null for a buffer the runtime adds).
struct KernelParam {
  StringRef name;
  Type type;
  Value value = {};
};

/// What the manifest records of an attention kernel beyond what every kernel
/// has.
struct AttentionEntry {
  int64_t headDim;
  bool causal;
  float scale;
  /// The variant its regions compute (kVariantAttr), empty for plain.
  StringRef variant = {};
};

/// The kernels the runtime launches before one (attention_bwd: delta and
/// dK/dV; layernorm_bwd: the reduction after it), by name.
struct KernelCompanions {
  StringRef deltaKernel, dkdvKernel, paramsKernel, dsinksKernel;
};

/// The manifest entry of a kernel computing `op` on `element`s with
/// configuration `config` (a TileAttr or RowsAttr), `threads` per block, the
/// `grid` and the `params` given; `attention` for an attention kernel.
KernelAttr getKernelEntry(MLIRContext *context, KernelOp op, Type element,
                          Attribute config, int64_t threads,
                          ArrayRef<GridDim> grid, ArrayRef<KernelParam> params,
                          std::optional<AttentionEntry> attention = {},
                          KernelCompanions companions = {});

/// Builds the kernel `entry` describes: gpu.func @name in a gpu.module
/// @name of its own before `before`, taking the entry's parameters and the
/// shared tiles `sharedTiles` (workgroup attributions, `sharedAlignment`
/// bytes aligned), marked with the entry's configuration (fa.tile or
/// fa.rows) and its block size. Records (name, entry) in `kernels`, the
/// module's fa.kernels to be; leaves `b` at the start of the kernel's body.
gpu::GPUFuncOp createKernel(ImplicitLocOpBuilder &b, Operation *before,
                            StringRef name, KernelAttr entry,
                            SmallVectorImpl<NamedAttribute> &kernels,
                            ArrayRef<Type> sharedTiles = {},
                            int64_t sharedAlignment = 0);

/// Checks the tile shape of a kernel whose tiles take the tensor-core
/// accumulator layout: `numWarps` a power of two up to kMaxAttentionWarps,
/// `blockM` rows (`rows` says of what) one or two 16-row blocks per warp,
/// `blockN` a multiple of 16 up to kMaxBlockN. Reports on `func`, prefixed
/// with `pass`.
LogicalResult checkMmaTileShape(func::FuncOp func, StringRef pass,
                                int64_t blockM, int64_t blockN,
                                int64_t numWarps, StringRef rows);

/// Checks a kernel whose products run as Hopper warpgroup MMAs (fa.tile
/// wgmma = true), after checkMmaTileShape (whose block_n limit is wgmma's N):
/// f16 or bf16 operands, whole 4-warp groups of 64 rows each (`blockM` = 16 x
/// `numWarps`, `numWarps` a multiple of 4). Reports on `func`, prefixed with
/// `pass`.
LogicalResult checkWarpgroupTileShape(func::FuncOp func, StringRef pass,
                                      Type element, int64_t blockM,
                                      int64_t numWarps, StringRef rows);

/// Checks that configuration entry `name` lies in [`min`, `max`] (before it
/// goes into any product). Reports on `op`, prefixed with `pass`.
LogicalResult checkConfigRange(Operation *op, StringRef pass, StringRef name,
                               int64_t value, int64_t min, int64_t max);

/// The f32 values of the register tiles (scores, accumulators) one thread of
/// an attention kernel may hold. The lowering unrolls each thread's share and
/// every product on it, so these bound its compile time (the worst cases
/// within them take a few seconds; past them it grew without bound): 1.6x
/// the library's
/// largest f16/bf16 kernel (160 values, the D=128 dK/dV kernel), and for f32,
/// whose products run as three TF32 products each, its largest f32 kernel
/// (144) with a little room.
inline constexpr int64_t kMaxTileValuesPerThread = 256;
inline constexpr int64_t kMaxF32TileValuesPerThread = 160;

/// Checks that `values` f32 register-tile values (of the tiles `tiles`
/// names) of a kernel on `element` operands, spread over `numWarps` warps,
/// stay within kMaxTileValuesPerThread (kMaxF32TileValuesPerThread for f32)
/// per thread. Reports on `op`, prefixed with `pass`.
LogicalResult checkTileValuesPerThread(Operation *op, StringRef pass,
                                       StringRef tiles, Type element,
                                       int64_t values, int64_t numWarps);

/// Checks that the `numWarps` warps of a kernel can copy its `tile` (`rows` x
/// `headDim` of `element`) into shared memory: the lowering gives every thread
/// the same number of the tile's 16-byte chunks. Reports on `op`, prefixed
/// with `pass`.
LogicalResult checkTileCopy(Operation *op, StringRef pass, StringRef tile,
                            int64_t rows, int64_t headDim, Type element,
                            int64_t numWarps);

/// The static shared memory a kernel for `chip` may use (ptxas's limit), the
/// largest of any supported chip when `chip` is empty. Fails, reporting on
/// `op` prefixed with `pass`, for an unsupported chip.
FailureOr<int64_t> getSharedMemoryBudget(Operation *op, StringRef pass,
                                         StringRef chip);

/// Checks that `bytes` of shared tiles of `kernel` (its configuration
/// summarised by `config`) fit `budget` (from getSharedMemoryBudget for
/// `chip`). Reports on `op`, prefixed with `pass`: past the budget ptxas
/// refuses the PTX, long after the compiler said nothing.
LogicalResult checkSharedMemory(Operation *op, StringRef pass, StringRef kernel,
                                StringRef config, int64_t bytes, StringRef chip,
                                int64_t budget);

/// Why the tiling cannot compile `op` as it is, if it cannot: named variants
/// not yet expanded into regions, sinks, and (for now) the backward's
/// regions.
std::optional<std::string> unsupportedVariantOf(AttentionOp op);
std::optional<std::string> unsupportedVariantOf(AttentionGradOp op);

/// The driver of the attention tiling passes: reads `chip`'s shared-memory
/// budget into `sharedBudget` (for `tile` to check against), then tiles each
/// function holding an `OpT` with `tile(func, op, kernels)`, refusing an op
/// with what the tiling does not compile (unsupportedVariantOf): ignoring it
/// would compute the wrong attention.
template <typename OpT, typename TileFn>
LogicalResult tileKernelFunctionsOf(ModuleOp module, StringRef pass,
                                    StringRef chip, int64_t &sharedBudget,
                                    TileFn &&tile) {
  FailureOr<int64_t> budget = getSharedMemoryBudget(module, pass, chip);
  if (failed(budget))
    return failure();
  sharedBudget = *budget;
  return tileKernelFunctions(
      module, [](Operation *op) { return isa<OpT>(op); },
      [&](func::FuncOp func, Operation *op,
          SmallVectorImpl<NamedAttribute> &kernels) -> LogicalResult {
        auto attention = cast<OpT>(op);
        if (std::optional<std::string> why = unsupportedVariantOf(attention))
          return emitPassError(attention, pass) << *why;
        return tile(func, attention, kernels);
      });
}

/// Checks what fa-overlap-softmax relies on in a kernel with
/// overlap_softmax = true: wgmma products (which run while the warps work) and
/// two asynchronously filled slots per tile. Reports on `op`, prefixed with
/// `pass`.
LogicalResult checkOverlapSoftmaxConfig(Operation *op, StringRef pass,
                                        bool warpgroupMma, int64_t numStages,
                                        bool pipelineCopies);

/// The alignment of a kernel's shared tiles. 128 bytes: cp.async, ldmatrix
/// and 16-byte accesses need 16, and the swizzle assumes each 8-row group of
/// chunks starts on the same bank (the default alignment is the element
/// size). wgmma applies the 128-byte swizzle to address bits 4-9 itself, so
/// there every 8-row group must start 1024-byte aligned.
int64_t sharedTileAlignment(bool warpgroupMma);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H
