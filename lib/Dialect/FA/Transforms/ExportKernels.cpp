//===- ExportKernels.cpp - PTX files and the kernel manifest --------------===//
//
// The bridge to the runtime, which has no MLIR: each compiled kernel's PTX
// goes to its own file, and manifest.json says how to launch it (parameters
// in the MLIR memref-descriptor ABI, grid, block, configuration).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAEXPORTKERNELS
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The manifest's configuration of an attention kernel: its fa.tile, every
/// entry an integer (flags 0 or 1). The forward's kernels give every size
/// and flag (blocks_per_sm where set); the backward's the entries the backward
/// takes (sizes, wgmma, split_dkdv where set: a dK/dV kernel whose grid z
/// is dkdv_parts, and fuse_dq where set: the kernels of a fused dQ) and
/// skip_unit_rescale, which their lowering reads.
llvm::json::Object tileConfig(TileAttr tile, KernelOp op) {
  llvm::json::Object config{{"block_m", *tile.getBlockM()},
                            {"block_n", *tile.getBlockN()},
                            {"num_warps", *tile.getNumWarps()},
                            {"num_stages", *tile.getNumStages()}};
  if (op == KernelOp::AttentionFwd) {
    config["q_in_shared"] = int64_t(tile.getQInShared());
    config["pipeline_copies"] = int64_t(tile.getPipelineCopies());
    config["stage_output"] = int64_t(tile.getStageOutput());
    config["overlap_softmax"] = int64_t(tile.getOverlapSoftmax());
    config["warp_specialize"] = int64_t(tile.getWarpSpecialize());
    config["ping_pong"] = int64_t(tile.getPingPong());
    config["persistent"] = int64_t(tile.getPersistent());
    if (std::optional<int64_t> blocks = tile.getBlocksPerSm())
      config["blocks_per_sm"] = *blocks;
  }
  config["skip_unit_rescale"] = int64_t(tile.getSkipUnitRescale());
  config["wgmma"] = int64_t(tile.getWgmma());
  if (tile.getSplitDkdv())
    config["split_dkdv"] = 1;
  if (tile.getFuseDq())
    config["fuse_dq"] = 1;
  return config;
}

/// The manifest's configuration of a row-wise kernel: its fa.rows layout
/// (resident where the kernel has it, persistent where set), as integers.
llvm::json::Object rowsConfig(RowsAttr rows) {
  llvm::json::Object config{{"rows", *rows.getRows()},
                            {"block_cols", *rows.getBlockCols()},
                            {"num_warps", *rows.getNumWarps()}};
  if (std::optional<bool> resident = rows.getResident())
    config["resident"] = int64_t(*resident);
  if (rows.getPersistent())
    config["persistent"] = 1;
  return config;
}

/// Whether a memref parameter reads its strides and offset from the
/// descriptor: strided<[?, ..., ?, 1], offset: ?> (the manifest's
/// "strided": true, for which the runtime passes a view's strides).
bool isDescriptorStrided(MemRefType type) {
  auto strided = dyn_cast<StridedLayoutAttr>(type.getLayout());
  if (!strided || !ShapedType::isDynamic(strided.getOffset()))
    return false;
  ArrayRef<int64_t> strides = strided.getStrides();
  return !strides.empty() && strides.back() == 1 &&
         llvm::all_of(strides.drop_back(), ShapedType::isDynamic);
}

/// The swizzle as the manifest (and the runtime's TensorMapSwizzle) names it.
StringRef swizzleName(nvgpu::TensorMapSwizzleKind swizzle) {
  switch (swizzle) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    return "none";
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    return "32b";
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    return "64b";
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    return "128b";
  }
  llvm_unreachable("unknown tensor map swizzle");
}

/// A tensor map parameter: the memref parameter it maps ("tensor"), the
/// element type, the box one load copies (the descriptor's shared-memory
/// tensor, outermost first) and the swizzle; tensorMapProblem has found
/// nothing wrong with it.
llvm::json::Object tensorMapEntry(KernelParamAttr param,
                                  nvgpu::TensorMapDescriptorType descriptor) {
  MemRefType box = descriptor.getTensor();
  llvm::json::Array boxSizes;
  llvm::append_range(boxSizes, box.getShape());
  return llvm::json::Object{
      {"name", param.getName()},
      {"kind", "tensormap"},
      {"tensor", param.getName().drop_back(kTensorMapParamSuffix.size())},
      {"dtype", dtypeName(box.getElementType())},
      {"box", std::move(boxSizes)},
      {"swizzle", swizzleName(descriptor.getSwizzle())}};
}

/// A kernel parameter: a memref (passed as its descriptor) with its dtype
/// and rank (and "strided": true where it takes a view), a TMA tensor map
/// (tensorMapEntry), or a scalar passed by value: f32, i32, or i64 (an
/// index: the kernels use 64-bit indices).
llvm::json::Object paramEntry(KernelParamAttr param) {
  Type type = param.getType();
  if (auto descriptor = dyn_cast<nvgpu::TensorMapDescriptorType>(type))
    return tensorMapEntry(param, descriptor);
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref) {
    StringRef kind = type.isIndex() || type.isInteger(64) ? "i64"
                     : type.isInteger(32)                 ? "i32"
                                                          : "f32";
    return llvm::json::Object{{"name", param.getName()}, {"kind", kind}};
  }
  llvm::json::Object entry{{"name", param.getName()},
                           {"kind", "memref"},
                           {"dtype", dtypeName(memref.getElementType())},
                           {"rank", memref.getRank()}};
  if (isDescriptorStrided(memref))
    entry["strided"] = true;
  return entry;
}

/// The manifest entry of a kernel, from its #fa.kernel.
llvm::json::Object manifestEntry(KernelAttr kernel) {
  llvm::json::Array block, grid, params;
  llvm::append_range(block, kernel.getBlock());
  for (GridDim dim : kernel.getGrid())
    grid.push_back(stringifyGridDim(dim));
  for (KernelParamAttr param : kernel.getParams())
    params.push_back(paramEntry(param));
  llvm::json::Object entry{{"op", stringifyKernelOp(kernel.getOp())},
                           {"dtype", dtypeName(kernel.getDtype())},
                           {"block", std::move(block)},
                           {"grid", std::move(grid)},
                           {"params", std::move(params)}};
  if (auto tile = dyn_cast<TileAttr>(kernel.getConfig()))
    entry["config"] = tileConfig(tile, kernel.getOp());
  else
    entry["config"] = rowsConfig(cast<RowsAttr>(kernel.getConfig()));
  if (std::optional<int64_t> headDim = kernel.getHeadDim())
    entry["head_dim"] = *headDim;
  if (std::optional<bool> causal = kernel.getCausal())
    entry["causal"] = *causal;
  if (FloatAttr scale = kernel.getScale())
    entry["scale"] = scale.getValueAsDouble();
  if (StringAttr variant = kernel.getVariant())
    entry["variant"] = variant.getValue();
  for (auto [key, companion] :
       {std::pair{"delta_kernel", kernel.getDeltaKernel()},
        std::pair{"dkdv_kernel", kernel.getDkdvKernel()},
        std::pair{"params_kernel", kernel.getParamsKernel()},
        std::pair{"dsinks_kernel", kernel.getDsinksKernel()}})
    if (companion)
      entry[key] = companion.getValue();
  return entry;
}

/// Why the runtime cannot encode tensor map parameter `param` of `kernel`
/// (empty when it can): the name must be `<t>_tma` for a memref parameter
/// `<t>` of the kernel of the box's element type (one the runtime's tensor
/// maps hold) and rank, and the map must be one encodeTiledTensorMap makes
/// (zero fill out of bounds, no interleave, no L2 promotion).
std::string tensorMapProblem(KernelAttr kernel, KernelParamAttr param,
                             nvgpu::TensorMapDescriptorType descriptor) {
  std::string problem;
  llvm::raw_string_ostream os(problem);
  StringRef name = param.getName();
  if (!name.ends_with(kTensorMapParamSuffix) || name == kTensorMapParamSuffix) {
    os << "is a tensor map, whose name must be <tensor>_tma after the memref "
          "parameter it maps";
    return problem;
  }
  StringRef tensorName = name.drop_back(kTensorMapParamSuffix.size());
  const KernelParamAttr *tensor =
      llvm::find_if(kernel.getParams(), [&](KernelParamAttr other) {
        return other.getName() == tensorName;
      });
  auto memref = tensor == kernel.getParams().end()
                    ? MemRefType()
                    : dyn_cast<MemRefType>(tensor->getType());
  MemRefType box = descriptor.getTensor();
  if (!memref)
    os << "maps '" << tensorName
       << "', which is not a memref parameter of the kernel";
  else if (!isa<Float16Type, BFloat16Type, Float32Type>(box.getElementType()))
    os << "has a box of " << box.getElementType()
       << "; the runtime's tensor maps hold f16, bf16 or f32";
  else if (memref.getElementType() != box.getElementType())
    os << "has a box of " << box.getElementType() << " but '" << tensorName
       << "' holds " << memref.getElementType();
  else if (memref.getRank() != box.getRank())
    os << "has a rank-" << box.getRank() << " box but '" << tensorName
       << "' is a rank-" << memref.getRank() << " memref";
  else if (descriptor.getOob() != nvgpu::TensorMapOOBKind::OOB_ZERO ||
           descriptor.getInterleave() !=
               nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE ||
           descriptor.getL2promo() != nvgpu::TensorMapL2PromoKind::L2PROMO_NONE)
    os << "has oob = " << nvgpu::stringifyTensorMapOOBKind(descriptor.getOob())
       << ", interleave = "
       << nvgpu::stringifyTensorMapInterleaveKind(descriptor.getInterleave())
       << ", l2promo = "
       << nvgpu::stringifyTensorMapL2PromoKind(descriptor.getL2promo())
       << "; the runtime encodes only oob = zero, interleave = none, "
          "l2promo = none";
  return problem;
}

/// Writes `contents` to `path` atomically enough for a build: to a temporary
/// file kept only when the write succeeded. Errors name `pass`.
LogicalResult writeFile(Operation *op, StringRef pass, StringRef path,
                        StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return emitPassError(op, pass) << "cannot write " << path << ": " << error;
  file->os() << contents;
  file->keep();
  return success();
}

struct FAExportKernelsPass
    : public mlir::fa::impl::FAExportKernelsBase<FAExportKernelsPass> {
  using Base::Base;

  /// The PTX of `binary`, checked: assembly for an NVVM target, the same
  /// chip as the kernels before it (`target`, set by the first), every
  /// function it calls defined.
  FailureOr<StringRef> checkedPtx(gpu::BinaryOp binary, std::string &target) {
    auto object = dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
      return emitPassError(binary, getArgument())
                 << "expects PTX (run gpu-module-to-binary with format=isa)",
             failure();
    auto nvvmTarget = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
    if (!nvvmTarget)
      return emitPassError(binary, getArgument())
                 << "expects a kernel compiled for an NVVM target",
             failure();
    if (target.empty())
      target = nvvmTarget.getChip().str();
    if (nvvmTarget.getChip() != target)
      return emitPassError(binary, getArgument())
                 << binary.getName() << " is compiled for "
                 << nvvmTarget.getChip() << ", the kernels before it for "
                 << target << ": one manifest holds kernels of one chip",
             failure();
    // An unresolved call (libdevice not linked) would only fail when the
    // driver loads the module, on another machine; refuse it here.
    StringRef ptx = object.getObject().getValue();
    if (ptx.contains(".extern .func"))
      return emitPassError(binary, getArgument())
                 << "the PTX of " << binary.getName()
                 << " calls functions it does not define (is libdevice "
                    "missing? set fa-to-ptx cuda-path)",
             failure();
    return ptx;
  }

  /// Writes the PTX of `binary` and appends its manifest entry (from
  /// `kernels`, the module's fa.kernels) to `manifestKernels`.
  LogicalResult exportKernel(gpu::BinaryOp binary, DictionaryAttr kernels,
                             std::string &target,
                             llvm::json::Array &manifestKernels) {
    FailureOr<StringRef> ptx = checkedPtx(binary, target);
    if (failed(ptx))
      return failure();
    StringRef name = binary.getName();
    std::string ptxFile = (name + ".ptx").str();
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, ptxFile);
    if (failed(writeFile(binary, getArgument(), path, *ptx)))
      return failure();
    auto kernel = kernels ? kernels.getAs<KernelAttr>(name) : KernelAttr();
    if (!kernel)
      return emitPassError(binary, getArgument())
             << "no fa.kernels entry for " << name
             << " (was it made by fa-tile-attention?)";
    // The runtime passes row-major strides, or a view's strides to a
    // "strided" parameter; a kernel with other strides (or an offset) of its
    // own would read memory the runtime did not describe.
    for (KernelParamAttr param : kernel.getParams()) {
      if (auto descriptor =
              dyn_cast<nvgpu::TensorMapDescriptorType>(param.getType())) {
        std::string problem = tensorMapProblem(kernel, param, descriptor);
        if (!problem.empty())
          return emitPassError(binary, getArgument())
                 << "parameter '" << param.getName() << "' of " << name << " "
                 << problem;
        continue;
      }
      auto memref = dyn_cast<MemRefType>(param.getType());
      if (memref && !memref.getLayout().isIdentity() &&
          !isDescriptorStrided(memref))
        return emitPassError(binary, getArgument())
               << "parameter '" << param.getName() << "' of " << name
               << " has the type " << memref
               << ", which the manifest cannot describe: a memref parameter "
                  "has the identity layout or strided<[?, ..., ?, 1], "
                  "offset: ?>";
    }
    llvm::json::Object entry = manifestEntry(kernel);
    entry["name"] = name.str();
    entry["entry"] = name.str();
    entry["ptx"] = ptxFile;
    entry["dynamic_shared_bytes"] = 0;
    manifestKernels.push_back(std::move(entry));
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module->getAttrOfType<DictionaryAttr>(kKernelsAttr);
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      emitPassError(module, getArgument())
          << "cannot create directory " << outputDir << ": " << ec.message();
      return signalPassFailure();
    }
    llvm::json::Array manifestKernels;
    // The chip every kernel was compiled for; the runtime checks it against
    // the device.
    std::string target;
    WalkResult walk = module.walk([&](gpu::BinaryOp binary) {
      return failed(exportKernel(binary, kernels, target, manifestKernels))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    llvm::json::Object manifest{{"format", "fa-kernel-library"},
                                {"version", 1},
                                {"target", target},
                                {"kernels", std::move(manifestKernels)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
       << "\n";
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, "manifest.json");
    if (failed(writeFile(module, getArgument(), path, text)))
      return signalPassFailure();
  }
};
} // namespace
