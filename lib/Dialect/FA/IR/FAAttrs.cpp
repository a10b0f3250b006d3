//===- FAAttrs.cpp - Attributes of the fa dialect -------------------------===//
//
// The configuration attributes' verifiers check what holds for any kernel
// (positive sizes, a CUDA block's warps, one or two stages); what a
// particular pass can build (tile shapes, shared memory) is that pass's
// check, since its options take part.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAAttrs.h"

#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fa;

FailureOr<int64_t> mlir::fa::parseSize(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword)))
    return parser.emitError(loc, "expected an integer, got '")
           << keyword << "'";
  int64_t value;
  if (parser.parseInteger(value))
    return failure();
  return value;
}

FailureOr<std::optional<int64_t>>
mlir::fa::parseOptionalSize(AsmParser &parser) {
  FailureOr<int64_t> size = parseSize(parser);
  if (failed(size))
    return failure();
  return std::optional<int64_t>(*size);
}

FailureOr<bool> mlir::fa::parseFlag(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected `true` or `false`");
}

FailureOr<std::optional<bool>> mlir::fa::parseOptionalFlag(AsmParser &parser) {
  FailureOr<bool> flag = parseFlag(parser);
  if (failed(flag))
    return failure();
  return std::optional<bool>(*flag);
}

/// Parses `[element, ...]`.
template <typename T>
FailureOr<SmallVector<T>> mlir::fa::parseSquareList(AsmParser &parser) {
  SmallVector<T> elements;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        FailureOr<T> element = FieldParser<T>::parse(parser);
        if (failed(element))
          return failure();
        elements.push_back(*element);
        return success();
      }))
    return failure();
  return elements;
}

template <typename T>
void mlir::fa::printSquareList(AsmPrinter &printer, ArrayRef<T> elements) {
  printer << '[';
  llvm::interleaveComma(elements, printer);
  printer << ']';
}

#include "fa/Dialect/FA/IR/FAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FA/IR/FAAttrs.cpp.inc"

namespace {
/// Checks that the size `name`, where given, lies in [`min`, `max`].
LogicalResult checkSize(function_ref<InFlightDiagnostic()> emitError,
                        StringRef name, std::optional<int64_t> value,
                        int64_t min = 1,
                        int64_t max = std::numeric_limits<int64_t>::max()) {
  if (!value || (*value >= min && *value <= max))
    return success();
  InFlightDiagnostic diag = emitError() << name << " must be ";
  if (max == std::numeric_limits<int64_t>::max())
    diag << "at least " << min;
  else
    diag << "from " << min << " to " << max;
  return diag << ", got " << *value;
}

/// The most warps of a thread block: a CUDA block's 1024 threads.
constexpr int64_t kMaxWarpsPerBlock = kMaxThreadsPerBlock / kThreadsPerWarp;
/// The most blocks resident on a multiprocessor (sm_80 to sm_90).
constexpr int64_t kMaxBlocksPerMultiprocessor = 32;
} // namespace

LogicalResult TileAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, std::optional<int64_t> blockM,
    std::optional<int64_t> blockN, std::optional<int64_t> numWarps,
    std::optional<int64_t> numStages, bool, bool, bool, bool, bool wgmma, bool,
    std::optional<int64_t> dqBlockM, std::optional<int64_t> dqBlockN,
    std::optional<int64_t> dqNumWarps, bool, bool warpSpecialize, bool,
    std::optional<int64_t> blocksPerSm, bool persistent, bool fuseDq) {
  // The tiles' loop lives in the roles fa-warp-specialize makes.
  if (persistent && !warpSpecialize)
    return emitError() << "persistent = true needs warp_specialize = true";
  // The fused dQ^T = K^T dS^T is a warpgroup MMA split over two warpgroups.
  if (fuseDq && !wgmma)
    return emitError() << "fuse_dq = true needs wgmma = true";
  return success(
      succeeded(checkSize(emitError, "block_m", blockM)) &&
      succeeded(checkSize(emitError, "block_n", blockN)) &&
      succeeded(
          checkSize(emitError, "num_warps", numWarps, 1, kMaxWarpsPerBlock)) &&
      succeeded(checkSize(emitError, "num_stages", numStages, 1, 2)) &&
      succeeded(checkSize(emitError, "dq_block_m", dqBlockM)) &&
      succeeded(checkSize(emitError, "dq_block_n", dqBlockN)) &&
      succeeded(checkSize(emitError, "dq_num_warps", dqNumWarps, 1,
                          kMaxWarpsPerBlock)) &&
      succeeded(checkSize(emitError, "blocks_per_sm", blocksPerSm, 1,
                          kMaxBlocksPerMultiprocessor)));
}

LogicalResult RowsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               std::optional<int64_t> rows,
                               std::optional<int64_t> blockCols,
                               std::optional<int64_t> numWarps,
                               std::optional<bool>, bool, int64_t reduceRows,
                               int64_t reduceCols, int64_t reduceWarps) {
  return success(succeeded(checkSize(emitError, "rows", rows)) &&
                 succeeded(checkSize(emitError, "block_cols", blockCols)) &&
                 succeeded(checkSize(emitError, "num_warps", numWarps, 1,
                                     kMaxWarpsPerBlock)) &&
                 succeeded(checkSize(emitError, "reduce_rows", reduceRows)) &&
                 succeeded(checkSize(emitError, "reduce_cols", reduceCols)) &&
                 succeeded(checkSize(emitError, "reduce_warps", reduceWarps, 1,
                                     kMaxWarpsPerBlock)));
}

LogicalResult
KernelParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef name, Type type) {
  if (name.empty())
    return emitError() << "a kernel parameter needs a name";
  auto memref = dyn_cast<MemRefType>(type);
  bool scalar = type.isF32() || type.isIndex() || type.isInteger(64) ||
                type.isInteger(32);
  if (scalar || isa<nvgpu::TensorMapDescriptorType>(type) ||
      (memref &&
       (isa<Float16Type, BFloat16Type, Float32Type>(memref.getElementType()) ||
        memref.getElementType().isInteger(32))))
    return success();
  return emitError() << "kernel parameter '" << name
                     << "' must be a memref of f16, bf16, f32 or i32, an f32, "
                        "i32, i64 or index scalar, or a tensor map, got "
                     << type;
}

namespace {
bool isAttentionKernel(KernelOp op) {
  return op == KernelOp::AttentionFwd || op == KernelOp::AttentionBwd ||
         op == KernelOp::AttentionBwdDelta || op == KernelOp::AttentionBwdDkdv;
}
} // namespace

LogicalResult KernelAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, KernelOp op, Type dtype,
    std::optional<int64_t> headDim, std::optional<bool> causal, FloatAttr scale,
    Attribute config, ArrayRef<int64_t> block, ArrayRef<GridDim> grid,
    ArrayRef<KernelParamAttr> params, StringAttr deltaKernel,
    StringAttr dkdvKernel, StringAttr paramsKernel, StringAttr dsinksKernel,
    StringAttr variant) {
  StringRef name = stringifyKernelOp(op);
  if (!isa<Float16Type, BFloat16Type, Float32Type>(dtype))
    return emitError() << "dtype must be f16, bf16 or f32, got " << dtype;
  bool attention = isAttentionKernel(op);
  if (attention != isa<TileAttr>(config) || !isa<TileAttr, RowsAttr>(config))
    return emitError() << "the config of a " << name << " kernel must be a "
                       << (attention ? "#fa.tile" : "#fa.rows") << ", got "
                       << config;
  if (attention != (headDim && causal && scale))
    return emitError() << "head_dim, causal and scale are "
                       << (attention ? "required for"
                                     : "only for attention, "
                                       "not for")
                       << " a " << name << " kernel";
  if (block.size() != 3 || grid.size() != 3 ||
      llvm::any_of(block, [](int64_t threads) { return threads < 1; }))
    return emitError() << "block must be 3 positive thread counts and grid 3 "
                          "dimensions";
  if ((deltaKernel || dkdvKernel) != (op == KernelOp::AttentionBwd) ||
      bool(deltaKernel) != bool(dkdvKernel))
    return emitError() << "delta_kernel and dkdv_kernel name the companions "
                          "of an attention_bwd kernel, which has both";
  if (dsinksKernel && op != KernelOp::AttentionBwd)
    return emitError() << "dsinks_kernel names a companion of an "
                          "attention_bwd kernel";
  if (bool(paramsKernel) != (op == KernelOp::LayerNormBwd))
    return emitError() << "params_kernel names the companion of a "
                          "layernorm_bwd kernel, which has one";
  auto tile = dyn_cast<TileAttr>(config);
  bool split = op == KernelOp::AttentionBwdDkdv && tile && tile.getSplitDkdv();
  auto parts = [](GridDim dim) { return dim == GridDim::DkdvParts; };
  if (split != parts(grid[2]) || parts(grid[0]) || parts(grid[1]))
    return emitError() << "a dK/dV kernel with split_dkdv has grid z "
                          "dkdv_parts (2: dV, then dK), and only it";
  if (variant && (!attention || variant.getValue().empty()))
    return emitError() << "variant names the regions of an attention kernel "
                          "and is not empty";
  return success();
}

TileAttr mlir::fa::getTileConfig(Operation *kernel) {
  if (auto config = kernel->getAttrOfType<TileAttr>(kTileConfigAttr))
    return config;
  return TileAttr::get(kernel->getContext());
}

TileAttr TileAttr::withDefaultSizes(int64_t blockM, int64_t blockN,
                                    int64_t numWarps, int64_t numStages) const {
  return get(getContext(), getBlockM().value_or(blockM),
             getBlockN().value_or(blockN), getNumWarps().value_or(numWarps),
             getNumStages().value_or(numStages), getQInShared(),
             getPipelineCopies(), getSkipUnitRescale(), getStageOutput(),
             getWgmma(), getOverlapSoftmax(), getDqBlockM(), getDqBlockN(),
             getDqNumWarps(), getSplitDkdv(), getWarpSpecialize(),
             getPingPong(), getBlocksPerSm(), getPersistent(), getFuseDq());
}

TileAttr TileAttr::forVariants() const {
  return get(getContext(), getBlockM(), getBlockN(), getNumWarps(),
             getNumStages(), getQInShared(), getPipelineCopies(),
             getSkipUnitRescale(), getStageOutput(), getWgmma(),
             getOverlapSoftmax(), getDqBlockM(), getDqBlockN(), getDqNumWarps(),
             getSplitDkdv(), /*warp_specialize=*/false, /*ping_pong=*/false,
             /*blocks_per_sm=*/std::nullopt, /*persistent=*/false,
             /*fuse_dq=*/false);
}

std::optional<SoftmaxPhase> mlir::fa::getSoftmaxPhase(Operation *loop) {
  if (auto phase = loop->getAttrOfType<SoftmaxPhaseAttr>(kSoftmaxPhaseAttr))
    return phase.getValue();
  return std::nullopt;
}

void FADialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fa/Dialect/FA/IR/FAAttrs.cpp.inc"
      >();
}

LogicalResult FADialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  Attribute value = attribute.getValue();
  auto expect = [&](bool holds, StringRef what) -> LogicalResult {
    if (holds)
      return success();
    return op->emitError() << "attribute '" << name << "' must be " << what
                           << ", got " << value;
  };
  if (name == kTileConfigAttr)
    return expect(isa<TileAttr>(value), "a tile configuration #fa.tile<...>");
  if (name == kRowsConfigAttr)
    return expect(isa<RowsAttr>(value), "a rows configuration #fa.rows<...>");
  if (name == kSoftmaxPhaseAttr)
    return expect(isa<SoftmaxPhaseAttr>(value),
                  "a softmax phase #fa<phase max|sum|accumulate|online>");
  if (name == kKernelsAttr) {
    auto kernels = dyn_cast<DictionaryAttr>(value);
    return expect(kernels &&
                      llvm::all_of(kernels,
                                   [](NamedAttribute entry) {
                                     return isa<KernelAttr>(entry.getValue());
                                   }),
                  "a dictionary of kernel entries (name = #fa.kernel<...>)");
  }
  return success();
}
