//===- Pipelines.cpp - Named pass pipelines of the fa compiler ------------===//

#include "fa/Pipelines/Pipelines.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Target/Chips.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The pipeline's name on the command line, which its errors start with.
constexpr StringLiteral kFAToPTXName = "fa-to-ptx";

/// The tiling options given to fa-to-ptx (and only those), in the textual
/// form of pass options: an option left out keeps each tiling pass's own
/// default (the backward's num-stages is 2, the forward's 1).
std::string givenTileOptions(const FAToPTXOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const mlir::detail::PassOptions::Option<int64_t> *option :
       {&options.blockM, &options.blockN, &options.numWarps,
        &options.numStages})
    if (option->hasValue())
      os << option->ArgStr << "=" << option->getValue() << " ";
  return text;
}
} // namespace

LogicalResult mlir::fa::buildFAToPTXPipeline(
    OpPassManager &pm, const FAToPTXOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  // The NVPTX backend crashes or aborts on a chip it does not know, or on
  // one that needs a newer PTX version than it is given.
  const ChipInfo *chip = lookupChip(options.chip);
  if (!chip)
    return errorHandler(Twine(kFAToPTXName) + ": unsupported chip '" +
                        options.chip +
                        "' (supported: " + getSupportedChipList() + ")");
  // Both attention passes take the tile options (the backward ignored them)
  // and the chip, whose shared memory bounds the tiles.
  std::string tileOptions =
      givenTileOptions(options) + "chip=" + options.chip.getValue();
  // Named variants become the regions the tiling compiles.
  pm.addPass(createFAExpandAttentionVariants());
  auto addTiling = [&](std::unique_ptr<Pass> pass, StringRef extra = "") {
    if (failed(
            pass->initializeOptions(tileOptions + extra.str(), errorHandler)))
      return failure();
    pm.addPass(std::move(pass));
    return success();
  };
  if (failed(addTiling(createFATileAttention())) ||
      failed(addTiling(createFATileAttentionGrad(),
                       options.fuseDq ? " fuse-dq=1" : "")))
    return failure();
  pm.addPass(createFATileLayerNorm());
  OpPassManager &tiles = pm.nest<gpu::GPUModuleOp>();
  tiles.addPass(createFAFuseOnlineSoftmax());
  tiles.addPass(createFAEliminateCausalTiles());
  tiles.addPass(createFAOverlapSoftmax());
  tiles.addPass(createFAPipelineKvCopies());
  // On the whole module, not nested per gpu.module: it rewrites the kernels'
  // entries in the module's fa.kernels (parameters, block, grid), which
  // passes running on the gpu.modules in parallel must not write (they lost
  // each other's updates: a kernel's manifest missed its tensor maps).
  pm.addPass(createFAWarpSpecialize());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertFARowsToGPU());
  kernels.addPass(createConvertFAToNVGPU({options.chip}));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = chip->ptxFeature.str();
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &gpuModule = pm.nest<gpu::GPUModuleOp>();
  gpuModule.addPass(createSCFToControlFlowPass());
  // Slots of multi-buffered shared tiles are subviews.
  gpuModule.addPass(memref::createExpandStridedMetadataPass());
  gpuModule.addPass(createLowerAffinePass());
  gpuModule.addPass(createConvertNVGPUToNVVMPass());
  // Before libdevice would take the exponentials (Passes.td says why).
  gpuModule.addPass(createFAFastExp2());
  gpuModule.addPass(createConvertGpuOpsToNVVMOps());
  // Tensor maps as by-value __grid_constant__ parameters, and the NVVM ops
  // that exist only as inline PTX (mbarrier.try_wait.parity): both for TMA
  // rings (lib/Conversion/FAToNVGPU/AsyncRing.cpp); no-ops for other kernels.
  gpuModule.addPass(createFAGridConstantParams());
  gpuModule.addPass(createConvertNVVMToLLVMPass());
  // n-D vector ops (broadcasts into a lane's share of a tile) that the
  // GPU-to-NVVM patterns leave; after it, so memory spaces are already mapped.
  gpuModule.addPass(createConvertVectorToLLVMPass());
  // Masked accesses become arith compares against a constant index vector.
  gpuModule.addPass(createArithToLLVMConversionPass());
  gpuModule.addPass(createCanonicalizerPass());
  gpuModule.addPass(createCSEPass());
  gpuModule.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = options.cudaPath;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (!options.exportDir.empty())
    pm.addPass(createFAExportKernels({options.exportDir}));
  return success();
}

void mlir::fa::registerFAPipelines() {
  // PassPipelineRegistration's builders cannot fail; this one refuses
  // options the lowering cannot honour, so it registers the parts itself.
  registerPassPipeline(
      kFAToPTXName,
      "Compile fa ops to PTX: tile attention and LayerNorm, fuse the online "
      "softmax, eliminate causal tiles, lower to tensor cores and threads, "
      "then NVVM and PTX (in gpu.binary ops; "
      "export-dir=DIR also writes the .ptx files and manifest.json)",
      [](OpPassManager &pm, StringRef optionsText,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        FAToPTXOptions options;
        if (failed(options.parseFromString(optionsText)))
          return failure();
        return buildFAToPTXPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(FAToPTXOptions());
      });
}
