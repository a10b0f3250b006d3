//===- Pipelines.h - Named pass pipelines of the fa compiler ----*- C++ -*-===//

#ifndef FA_PIPELINES_PIPELINES_H
#define FA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::fa {

struct FAToPTXOptions : public PassPipelineOptions<FAToPTXOptions> {
  PassOptions::Option<int64_t> blockM{
      *this, "block-m",
      llvm::cl::desc("Rows of each attention kernel's tiles (queries; keys in "
                     "the backward's dK/dV kernel)"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("Length of the tiles the attention kernels' loops walk"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> numWarps{
      *this, "num-warps", llvm::cl::desc("Warps per attention thread block"),
      llvm::cl::init(4)};
  PassOptions::Option<int64_t> numStages{
      *this, "num-stages",
      llvm::cl::desc("Buffers per tile the attention loops copy into (left "
                     "out: 1 forward, 2 backward)"),
      llvm::cl::init(1)};
  PassOptions::Option<bool> fuseDq{
      *this, "fuse-dq",
      llvm::cl::desc("Compute dQ in every backward's dK/dV kernel where it "
                     "can (fa-tile-attention-grad fuse-dq); fa.tile fuse_dq "
                     "asks for it per function"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU, sm_80 and later (an unsupported one is "
                     "refused with the list); it selects the default tile "
                     "configurations, and wgmma kernels need sm_90a"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit whose libdevice is linked into the PTX"),
      llvm::cl::init("/usr/local/cuda")};
  PassOptions::Option<std::string> exportDir{
      *this, "export-dir",
      llvm::cl::desc("If set, write <kernel>.ptx and manifest.json here"),
      llvm::cl::init("")};
};

/// fa ops -> tiled kernels -> online softmax -> causal tile elimination ->
/// warps and tensor cores -> NVVM -> PTX held in gpu.binary ops. Options the
/// lowering cannot honour (an unsupported chip) go to `errorHandler`.
LogicalResult
buildFAToPTXPipeline(OpPassManager &pm, const FAToPTXOptions &options,
                     function_ref<LogicalResult(const Twine &)> errorHandler);

void registerFAPipelines();

} // namespace mlir::fa

#endif // FA_PIPELINES_PIPELINES_H
