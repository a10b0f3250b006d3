//===- KernelFunctions.cpp - Functions that become kernels ----------------===//

#include "fa/Dialect/FA/Transforms/KernelFunctions.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/IR/Swizzle.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Support/PassSupport.h"
#include "fa/Target/Chips.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

/// Whether `func` holds `op`, its return, and before `op` only a prelude:
/// memory-effect-free ops without regions (the bottom-right offset
/// `seq_kv - seq_q` that fa-expand-attention-variants computes from the
/// arguments' sizes), which each kernel recomputes (clonePrelude).
static bool isKernelFunctionBody(func::FuncOp func, Operation *op) {
  Block &body = func.getBody().front();
  if (op->getBlock() != &body || op->getNextNode() != body.getTerminator())
    return false;
  for (Operation &prelude : llvm::make_range(body.begin(), op->getIterator()))
    if (prelude.getNumRegions() != 0 || !isMemoryEffectFree(&prelude))
      return false;
  return true;
}

void mlir::fa::clonePrelude(OpBuilder &b, Operation *op, IRMapping &mapping) {
  for (Operation &prelude :
       llvm::make_range(op->getBlock()->begin(), op->getIterator()))
    b.clone(prelude, mapping);
}

LogicalResult
mlir::fa::tileKernelFunctions(ModuleOp module,
                              function_ref<bool(Operation *)> isKernelOp,
                              TileFunctionFn tile) {
  SmallVector<std::pair<func::FuncOp, Operation *>> work;
  WalkResult walk = module.walk([&](Operation *op) {
    if (!isKernelOp(op))
      return WalkResult::advance();
    auto func = dyn_cast<func::FuncOp>(op->getParentOp());
    if (!func || !isKernelFunctionBody(func, op)) {
      op->emitOpError("expects to be the only operation of a func.func (which "
                      "becomes the kernel) besides the return and pure "
                      "scalar computations of its arguments before it");
      return WalkResult::interrupt();
    }
    work.push_back({func, op});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (work.empty())
    return success();

  SmallVector<NamedAttribute> kernels;
  if (auto existing = module->getAttrOfType<DictionaryAttr>(kKernelsAttr))
    llvm::append_range(kernels, existing.getValue());
  for (auto [func, op] : work) {
    if (failed(tile(func, op, kernels)))
      return failure();
    func.erase();
  }
  MLIRContext *context = module.getContext();
  module->setAttr(kKernelsAttr, DictionaryAttr::get(context, kernels));
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(context));
  return success();
}

StringRef mlir::fa::getKernelVariant(func::FuncOp func, bool hasRegions) {
  if (auto name = func->getAttrOfType<StringAttr>(kVariantAttr))
    return name.getValue();
  return hasRegions ? "custom" : StringRef();
}

StringAttr mlir::fa::getExtraParamName(func::FuncOp func, BlockArgument arg,
                                       ValueRange captures) {
  if (auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
    return name;
  std::string fallback = "arg" + std::to_string(arg.getArgNumber());
  for (auto [index, capture] : llvm::enumerate(captures))
    if (capture == arg)
      fallback = "capture" + std::to_string(index);
  return StringAttr::get(func.getContext(), fallback);
}

StringRef mlir::fa::dtypeName(Type element) {
  if (element.isBF16())
    return "bf16";
  if (element.isF16())
    return "f16";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(64))
    return "i64";
  return "f32";
}

fa::KernelAttr mlir::fa::getKernelEntry(MLIRContext *context, KernelOp op,
                                        Type element, Attribute config,
                                        int64_t threads, ArrayRef<GridDim> grid,
                                        ArrayRef<KernelParam> params,
                                        std::optional<AttentionEntry> attention,
                                        KernelCompanions companions) {
  SmallVector<KernelParamAttr> paramAttrs;
  for (const KernelParam &param : params)
    paramAttrs.push_back(KernelParamAttr::get(context, param.name, param.type));
  auto name = [&](StringRef kernel) {
    return kernel.empty() ? StringAttr() : StringAttr::get(context, kernel);
  };
  std::optional<int64_t> headDim;
  std::optional<bool> causal;
  FloatAttr scale;
  StringAttr variant;
  if (attention) {
    headDim = attention->headDim;
    causal = attention->causal;
    scale = FloatAttr::get(Float32Type::get(context), attention->scale);
    if (!attention->variant.empty())
      variant = StringAttr::get(context, attention->variant);
  }
  return KernelAttr::get(
      context, op, element, headDim, causal, scale, config, {threads, 1, 1},
      grid, paramAttrs, name(companions.deltaKernel),
      name(companions.dkdvKernel), name(companions.paramsKernel),
      name(companions.dsinksKernel), variant);
}

gpu::GPUFuncOp mlir::fa::createKernel(ImplicitLocOpBuilder &b,
                                      Operation *before, StringRef name,
                                      KernelAttr entry,
                                      SmallVectorImpl<NamedAttribute> &kernels,
                                      ArrayRef<Type> sharedTiles,
                                      int64_t sharedAlignment) {
  b.setInsertionPoint(before);
  auto module = gpu::GPUModuleOp::create(b, name);
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Type> types;
  for (KernelParamAttr param : entry.getParams())
    types.push_back(param.getType());
  auto kernel = gpu::GPUFuncOp::create(b, name, b.getFunctionType(types, {}),
                                       sharedTiles);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Attribute config = entry.getConfig();
  kernel->setAttr(isa<TileAttr>(config) ? kTileConfigAttr : kRowsConfigAttr,
                  config);
  for (unsigned i = 0; i < kernel.getNumWorkgroupAttributions(); ++i)
    kernel.setWorkgroupAttributionAttr(i, "llvm.align",
                                       b.getI64IntegerAttr(sharedAlignment));
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      llvm::to_vector(llvm::map_range(entry.getBlock(), [](int64_t threads) {
        return static_cast<int32_t>(threads);
      }))));
  b.setInsertionPointToStart(&kernel.getBody().front());
  kernels.push_back(b.getNamedAttr(name, entry));
  return kernel;
}

LogicalResult mlir::fa::checkMmaTileShape(func::FuncOp func, StringRef pass,
                                          int64_t blockM, int64_t blockN,
                                          int64_t numWarps, StringRef rows) {
  // First, so that the products below cannot overflow.
  if (numWarps < 1 || numWarps > kMaxAttentionWarps ||
      !llvm::isPowerOf2_64(numWarps))
    return emitPassError(func, pass)
           << "num-warps (" << numWarps << ") must be a power of two from 1 to "
           << kMaxAttentionWarps;
  if (blockM != numWarps * kMmaRows && blockM != 2 * numWarps * kMmaRows)
    return emitPassError(func, pass)
           << "block-m (" << blockM << ") must be 16 or 32 x "
           << "num-warps (" << numWarps
           << "): each warp owns one or two 16-row blocks of " << rows;
  if (blockN < 16 || blockN % 16 != 0 || blockN > kMaxBlockN)
    return emitPassError(func, pass)
           << "block-n (" << blockN << ") must be a multiple of 16 from 16 to "
           << kMaxBlockN;
  return success();
}

LogicalResult mlir::fa::checkConfigRange(Operation *op, StringRef pass,
                                         StringRef name, int64_t value,
                                         int64_t min, int64_t max) {
  if (value >= min && value <= max)
    return success();
  return emitPassError(op, pass) << name << " must be from " << min << " to "
                                 << max << ", got " << value;
}

LogicalResult mlir::fa::checkTileValuesPerThread(Operation *op, StringRef pass,
                                                 StringRef tiles, Type element,
                                                 int64_t values,
                                                 int64_t numWarps) {
  int64_t threads = numWarps * kThreadsPerWarp;
  int64_t perThread = llvm::divideCeil(values, threads);
  int64_t limit =
      element.isF32() ? kMaxF32TileValuesPerThread : kMaxTileValuesPerThread;
  if (perThread <= limit)
    return success();
  return emitPassError(op, pass)
         << tiles << " give each of the " << threads << " threads " << perThread
         << " values to hold, more than " << limit << " for " << element
         << "; use more warps or smaller tiles";
}

LogicalResult mlir::fa::checkTileCopy(Operation *op, StringRef pass,
                                      StringRef tile, int64_t rows,
                                      int64_t headDim, Type element,
                                      int64_t numWarps) {
  int64_t chunks =
      rows * headDim * element.getIntOrFloatBitWidth() / 8 / kChunkBytes;
  int64_t threads = numWarps * kThreadsPerWarp;
  if (chunks % threads == 0)
    return success();
  return emitPassError(op, pass)
         << "the " << tile << " tile (" << rows << " x " << headDim << ") is "
         << chunks << " 16-byte chunks, which the " << threads << " threads of "
         << numWarps
         << " warps cannot copy in equal shares; use fewer "
            "warps or longer tiles";
}

LogicalResult mlir::fa::checkWarpgroupTileShape(func::FuncOp func,
                                                StringRef pass, Type element,
                                                int64_t blockM,
                                                int64_t numWarps,
                                                StringRef rows) {
  if (!element.isF16() && !element.isBF16())
    return emitPassError(func, pass) << "wgmma needs f16 or bf16 operands";
  if (numWarps % 4 != 0 || blockM != 4 * kMmaRows * (numWarps / 4))
    return emitPassError(func, pass)
           << "wgmma needs whole warpgroups with 64 " << rows
           << " each (block_m = 16 x num_warps, num_warps a multiple of 4); "
           << "got block_m " << blockM << " on " << numWarps << " warps";
  return success();
}

FailureOr<int64_t>
mlir::fa::getSharedMemoryBudget(Operation *op, StringRef pass, StringRef chip) {
  if (chip.empty())
    return getLargestStaticSharedBytes();
  if (const ChipInfo *info = lookupChip(chip))
    return info->staticSharedBytes;
  return emitPassError(op->getLoc(), pass)
             << "unsupported chip '" << chip
             << "' (supported: " << getSupportedChipList() << ")",
         failure();
}

LogicalResult mlir::fa::checkSharedMemory(Operation *op, StringRef pass,
                                          StringRef kernel, StringRef config,
                                          int64_t bytes, StringRef chip,
                                          int64_t budget) {
  if (bytes <= budget)
    return success();
  InFlightDiagnostic diag = emitPassError(op, pass)
                            << "the " << kernel << "'s shared tiles take "
                            << bytes << " bytes of static shared memory ("
                            << config << "), more than the " << budget
                            << " bytes a block ";
  if (chip.empty())
    diag << "of any supported chip";
  else
    diag << "of " << chip;
  return diag << " may use; use smaller tiles or fewer stages";
}

LogicalResult mlir::fa::checkOverlapSoftmaxConfig(Operation *op, StringRef pass,
                                                  bool warpgroupMma,
                                                  int64_t numStages,
                                                  bool pipelineCopies) {
  if (warpgroupMma && numStages == 2 && pipelineCopies)
    return success();
  return emitPassError(op, pass)
         << "overlap_softmax needs wgmma = true (products that run while the "
            "warps work) and num_stages = 2 (two slots per tile)";
}

int64_t mlir::fa::sharedTileAlignment(bool warpgroupMma) {
  return warpgroupMma ? 1024 : 128;
}

namespace {
/// What the tiling of either attention op refuses: named variants are sugar
/// that fa-expand-attention-variants must first write as regions.
template <typename OpT> std::optional<std::string> unexpandedVariant(OpT op) {
  if (op.getCausalBottomRight() || op.getWindowLeft() || op.getDocIds() ||
      op.getSoftcap() || op.getAlibiSlopes())
    return std::string(
        "named variants (causal_bottom_right, window, document, softcap, "
        "alibi) are compiled as regions: run --fa-expand-attention-variants "
        "first (fa-to-ptx does)");
  return std::nullopt;
}
} // namespace

std::optional<std::string> mlir::fa::unsupportedVariantOf(AttentionOp op) {
  return unexpandedVariant(op);
}

std::optional<std::string> mlir::fa::unsupportedVariantOf(AttentionGradOp op) {
  return unexpandedVariant(op);
}
