//===- WarpgroupMma.cpp - Hopper warpgroup MMA (wgmma) helpers ------------===//
//
// MLIR's nvvm.wgmma.mma_async reads A only from shared memory, and a product
// issued as separate ops leaves LLVM free to read the accumulator between
// the asynchronous MMA and its wait. The products here are therefore inline
// asm in the form CUTLASS and FlashAttention-3 use: one block issues a whole
// product (fence, one wgmma per k step, commit), another waits for it with
// the accumulator as tied operands, so that every read of the results comes
// after the wait while other work (another product, the softmax) can run
// between the two.
//
// The second half lowers fa.tile_matmul onto those products: descriptors of
// the shared operands per k step, the issue where the op was, and the wait
// placed just before the product's first use.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupMma.h"
#include "TileLayout.h"
#include "TileMatmul.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Descriptor fields hold byte quantities in 16-byte units.
constexpr int64_t kDescriptorUnit = 16;
constexpr int64_t kAddressMask = (1 << 18) - 1;
constexpr int64_t kSwizzle128B = 1;
constexpr int64_t kSwizzle64B = 2;

Value constantI64(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), value);
}
} // namespace

int64_t mlir::fa::swizzleAtomRowBytes(MemRefType tile) {
  return swizzleRunChunks(tile) * kChunkBytes;
}

int64_t mlir::fa::swizzleAtomBytes(MemRefType tile) {
  return kSwizzleRows * swizzleAtomRowBytes(tile);
}

Value mlir::fa::sharedMatrixDescriptor(ImplicitLocOpBuilder &b, Value tile,
                                       Value byteOffset, int64_t leadingBytes,
                                       int64_t strideBytes) {
  auto type = cast<MemRefType>(tile.getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  // The tile's address: its buffer's aligned pointer plus its offset (slots
  // of multi-buffered tiles are subviews).
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tile);
  Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, tile);
  Value offsetBytes =
      arith::MulIOp::create(b, metadata.getOffset(), index(b, elementBytes));
  Value address = arith::AddIOp::create(
      b, arith::AddIOp::create(b, pointer, offsetBytes), byteOffset);
  Value address64 = arith::IndexCastUIOp::create(b, b.getI64Type(), address);
  Value start = arith::ShRUIOp::create(
      b, arith::AndIOp::create(b, address64, constantI64(b, kAddressMask)),
      constantI64(b, 4));
  int64_t swizzle =
      swizzleAtomRowBytes(type) == 128 ? kSwizzle128B : kSwizzle64B;
  int64_t fields = (leadingBytes / kDescriptorUnit) << 16 |
                   (strideBytes / kDescriptorUnit) << 32 | swizzle << 62;
  return arith::OrIOp::create(b, start, constantI64(b, fields));
}

namespace {
/// An inline asm block with side effects and a memory clobber, returning
/// `results` f32 values.
SmallVector<Value> f32Asm(ImplicitLocOpBuilder &b, int64_t results,
                          ValueRange operands, StringRef text,
                          SmallVector<std::string> constraints) {
  constraints.push_back("~{memory}");
  SmallVector<Type> resultTypes(results, b.getF32Type());
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), resultTypes);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, resultType, operands, text, llvm::join(constraints, ","),
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> values;
  for (int64_t i = 0; i < results; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, asmOp.getResult(0), i));
  return values;
}

/// Output constraints for `count` f32 values, each tied to the input of the
/// same number.
SmallVector<std::string> tiedF32(int64_t count) {
  SmallVector<std::string> constraints(count, "=f");
  for (int64_t i = 0; i < count; ++i)
    constraints.push_back(std::to_string(i));
  return constraints;
}
} // namespace

SmallVector<Value> mlir::fa::issueWarpgroupMma(
    ImplicitLocOpBuilder &b, StringRef elementType, int64_t n, bool mnMajorA,
    bool mnMajorB, ArrayRef<Value> acc, ArrayRef<WarpgroupMmaStep> steps) {
  int64_t accValues = n / 2;
  bool accumulate = !acc.empty();
  assert((!accumulate || static_cast<int64_t>(acc.size()) == accValues) &&
         "one accumulator value per output register");
  // Operands: the accumulator outputs $0.. (tied inputs when accumulating),
  // then per step the A descriptor or registers and the B descriptor, then
  // the scale of the first step (0: start from zero) and a constant 1.
  SmallVector<Value> operands(acc.begin(), acc.end());
  SmallVector<std::string> constraints =
      accumulate ? tiedF32(accValues)
                 : SmallVector<std::string>(accValues, "=f");
  // Inputs are numbered after all outputs, tied ones included.
  int64_t next = static_cast<int64_t>(constraints.size());
  auto operand = [&](Value value, StringRef constraint) {
    operands.push_back(value);
    constraints.push_back(constraint.str());
    return "$" + std::to_string(next++);
  };
  // Each descriptor base is one operand; a step's own descriptor is the base
  // plus its delta, added here into a register of the block. Passed as
  // operands, the descriptors of a tile that a loop does not change (K and
  // V in the dK/dV kernel, Q in the forward) were hoisted out of it by LLVM,
  // two registers each for every k step (32 at head_dim 128) held across
  // the whole loop; a base is two.
  llvm::DenseMap<Value, std::string> bases;
  std::string descriptorText;
  int64_t descriptors = 0;
  auto descriptor = [&](Value base, int64_t delta) {
    auto [known, inserted] = bases.try_emplace(base);
    if (inserted)
      known->second = operand(base, "l");
    if (delta == 0)
      return known->second;
    std::string name = "desc" + std::to_string(descriptors++);
    descriptorText += llvm::formatv(".reg .b64 {0};\nadd.s64 {0}, {1}, {2};\n",
                                    name, known->second, delta)
                          .str();
    return name;
  };
  SmallVector<std::string> stepText;
  for (const WarpgroupMmaStep &step : steps) {
    std::string a;
    if (step.aDescriptor) {
      a = descriptor(step.aDescriptor, step.aDelta);
    } else {
      SmallVector<std::string> regs;
      for (Value reg : step.aRegisters)
        regs.push_back(operand(reg, "r"));
      a = "{" + llvm::join(regs, ", ") + "}";
    }
    std::string bDesc = descriptor(step.bDescriptor, step.bDelta);
    stepText.push_back(a + ", " + bDesc);
  }
  std::string firstScale = operand(
      arith::ConstantIntOp::create(b, b.getI32Type(), accumulate ? 1 : 0), "r");
  std::string one =
      operand(arith::ConstantIntOp::create(b, b.getI32Type(), 1), "r");

  SmallVector<std::string> accRegs;
  for (int64_t i = 0; i < accValues; ++i)
    accRegs.push_back("$" + std::to_string(i));
  std::string accList = "{" + llvm::join(accRegs, ", ") + "}";
  // Immediates: scale-a, scale-b (1: no negation), then transpose-a (only
  // for a shared A; 1: MN-major) and transpose-b.
  std::string asmText = "{\n.reg .pred first, rest;\n" + descriptorText +
                        "setp.ne.b32 first, " + firstScale +
                        ", 0;\nsetp.ne.b32 rest, " + one +
                        ", 0;\nwgmma.fence.sync.aligned;\n";
  for (auto [i, text] : llvm::enumerate(stepText)) {
    bool sharedA = static_cast<bool>(steps[i].aDescriptor);
    assert((sharedA || !mnMajorA) && "only a shared A is read MN-major");
    StringRef transposeA = !sharedA ? "" : mnMajorA ? "1, " : "0, ";
    asmText += llvm::formatv(
        "wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{1}.{1} {2}, {3}, {4}, "
        "1, 1, {5}{6};\n",
        n, elementType, accList, text, i == 0 ? "first" : "rest", transposeA,
        mnMajorB ? 1 : 0);
  }
  asmText += "wgmma.commit_group.sync.aligned;\n}";
  return f32Asm(b, accValues, operands, asmText, constraints);
}

SmallVector<Value> mlir::fa::waitForWarpgroupMma(ImplicitLocOpBuilder &b,
                                                 ArrayRef<Value> issued,
                                                 int64_t pending) {
  std::string text =
      llvm::formatv("wgmma.wait_group.sync.aligned {0};", pending).str();
  return f32Asm(b, issued.size(), issued, text, tiedF32(issued.size()));
}

//===----------------------------------------------------------------------===//
// fa.tile_matmul as wgmma
//===----------------------------------------------------------------------===//

namespace {
/// be in flight there: before the first op of its block that uses the
/// result (or holds a use), leaving pending the products issued directly
/// in the block in between, which were committed after it (commit groups
/// complete in order). Issued early, a product then runs while the warps
/// work on something else: the backward issues its two score-like
/// products back to back and waits for the second only when it needs it.
/// Products in nested regions are not counted, which only makes the wait
/// stricter.
std::pair<Operation *, int64_t> warpgroupWaitPoint(TileMatmulOp op) {
  Operation *firstUse = op.getFirstUseInBlock();
  if (!firstUse)
    return {op->getNextNode(), 0};
  int64_t pending = 0;
  for (Operation *between = op->getNextNode(); between != firstUse;
       between = between->getNextNode())
    if (auto product = dyn_cast<TileMatmulOp>(between))
      pending += !getElementTypeOrSelf(product.getA().getType()).isF32();
  return {firstUse, pending};
}

/// A register pair as the i32 an asm operand takes.
Value asI32(ImplicitLocOpBuilder &b, Value pair) {
  if (pair.getType().isInteger(32))
    return pair;
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
}

/// Bytes of one panel of a shared tile: all its rows, one swizzle atom wide
/// (see sharedChunkPosition).
int64_t panelBytes(MemRefType tile) {
  return tile.getDimSize(0) * swizzleAtomRowBytes(tile);
}

/// The byte offset of k step `kStep` of shared operand `tile` stored K-major
/// ([M or N][K], K contiguous): 16 elements (32 bytes) along the rows; past
/// a panel's width the step moves to the next panel.
int64_t kMajorStepOffset(MemRefType tile, int64_t kStep) {
  int64_t atomRowBytes = swizzleAtomRowBytes(tile);
  int64_t bytes = kStep * 16 * tile.getElementTypeBitWidth() / 8;
  return bytes / atomRowBytes * panelBytes(tile) + bytes % atomRowBytes;
}

/// The byte offset of k step `kStep` of shared operand `tile` stored
/// MN-major ([K][M or N], M or N contiguous): 16 rows down.
int64_t mnMajorStepOffset(MemRefType tile, int64_t kStep) {
  return 16 * kStep * swizzleAtomRowBytes(tile);
}

/// The byte offset of k step `kStep` of shared operand `tile`.
int64_t stepOffset(MemRefType tile, int64_t kStep, bool mnMajor) {
  return mnMajor ? mnMajorStepOffset(tile, kStep)
                 : kMajorStepOffset(tile, kStep);
}

/// The descriptor of k step `kStep` of shared operand `tile`, read from
/// `base` bytes in (the warpgroup's share of A; null for B), K-major or
/// MN-major.
///
/// The leading (LBO) and stride (SBO) byte offsets, after CUTLASS's
/// make_gmma_desc (cute/atom/mma_traits_sm90_gmma.hpp), which describes a
/// swizzled operand in 16-byte units as:
///   K-major  SW128: ((8,n),2) : ((8,SBO),1)
///   MN-major SW128: ((8,n),(8,k)) : ((1,LBO),(8,SBO))
///   MN-major SW64:  ((4,n),(8,k)) : ((1,LBO),(4,SBO))
/// K-major: the core matrices' 8 rows are one atom row apart, the next 8
/// rows (of M or N) SBO = one atom (8 rows) further; the k step stays
/// within one atom row, so LBO is not read (one 16-byte unit).
/// MN-major: mode 0 runs along M or N, one atom row (128 or 64 bytes: 64
/// or 32 f16/bf16 columns) contiguous, the next atom of columns LBO away:
/// the tile's next panel, LBO = panelBytes. Mode 1 runs along K: 8 rows one
/// atom row apart inside the swizzle atom, then the step's rows 8-15 SBO
/// away: the next atom of the same panel, SBO = swizzleAtomBytes. The roles
/// are thus swapped from K-major, where SBO steps along M or N. E.g. the
/// bf16 key tile stored [128 keys][128 head_dim], read as a transposed A:
/// two panels of 128 x 128 = 16384 bytes, warpgroup w reads panel w (its 64
/// head_dim columns, one atom wide: LBO 16384 is not stepped over), k step
/// s starts 16 rows = 2048 s bytes further, SBO 1024.
Value stepDescriptor(ImplicitLocOpBuilder &b, Value tile, Value base,
                     int64_t kStep, bool mnMajor) {
  auto type = cast<MemRefType>(tile.getType());
  Value byteOffset = index(b, stepOffset(type, kStep, mnMajor));
  if (base)
    byteOffset = arith::AddIOp::create(b, base, byteOffset);
  return sharedMatrixDescriptor(
      b, tile, byteOffset, mnMajor ? panelBytes(type) : kDescriptorUnitBytes,
      swizzleAtomBytes(type));
}

/// How far k step `kStep`'s descriptor is from the first step's, in the
/// descriptor's 16-byte units: its start address field (bits 0-13, the
/// shared address >> 4) grows by the step's byte offset / 16 without
/// carrying out (shared addresses stay below 2^18 bytes).
int64_t stepDelta(Value tile, int64_t kStep, bool mnMajor) {
  auto type = cast<MemRefType>(tile.getType());
  return (stepOffset(type, kStep, mnMajor) - stepOffset(type, 0, mnMajor)) /
         kDescriptorUnit;
}

/// Where this warpgroup's 64 rows of the product start in shared A: rows
/// [64w, 64w + 64) of an A stored [M][K] (64 atom rows further down each
/// panel), or columns [64w, 64w + 64) of an A stored [K][M] (transposed):
/// panel w with 128-byte atoms (64 f16/bf16 columns), panels 2w and 2w + 1
/// with 64-byte atoms, which LBO (one panel) steps between. (An f16/bf16
/// tile 64 columns per warpgroup wide has rows of a multiple of 128 bytes,
/// hence 128-byte atoms: the 64-byte case is not reached today.)
Value warpgroupShareOfA(ImplicitLocOpBuilder &b, MemRefType aTile,
                        bool transposeA) {
  Value warpgroup =
      arith::DivUIOp::create(b, gpu::ThreadIdOp::create(b, gpu::Dimension::x),
                             index(b, kThreadsPerWarpgroup));
  int64_t atomRowBytes = swizzleAtomRowBytes(aTile);
  int64_t shareBytes = kWarpgroupRows * atomRowBytes;
  if (transposeA) {
    int64_t atomColumns = atomRowBytes * 8 / aTile.getElementTypeBitWidth();
    shareBytes = kWarpgroupRows / atomColumns * panelBytes(aTile);
  }
  return arith::MulIOp::create(b, warpgroup, index(b, shareBytes));
}

/// The operands of each 16-wide k step: descriptors of the shared A (the
/// warpgroup's 64 rows, or with transpose_a its 64 columns) and B, or a
/// register A's fragments.
SmallVector<WarpgroupMmaStep> warpgroupMmaSteps(ImplicitLocOpBuilder &b,
                                                TileMatmulOp op,
                                                TileMatmulOp::Adaptor adaptor) {
  auto aType = cast<ShapedType>(op.getA().getType());
  Type element = aType.getElementType();
  bool transposeA = op.getTransposeA();
  int64_t k = aType.getDimSize(transposeA ? 0 : 1);
  Value aShare;
  if (auto aTile = dyn_cast<MemRefType>(adaptor.getA().getType()))
    aShare = warpgroupShareOfA(b, aTile, transposeA);
  // B stored [K][N] (not transpose_b) is MN-major.
  bool mnMajorB = !op.getTransposeB();
  // In a warp-specialised kernel (its computing warpgroups at setmaxnreg's
  // cap), a tile a loop does not change (a workgroup buffer of the kernel)
  // gets one descriptor, each step's `+ delta` added in the asm block: LLVM
  // hoisted the per-step descriptors out of the loop, two registers each
  // held across it (32 for K and V at head_dim 128 in the dK/dV kernel,
  // whose 128 x 64 tile then spilled). A slot that changes per iteration
  // keeps its per-step descriptors, which the loop computes anyway. Other
  // kernels keep them all: with deltas the dK/dV kernel without a producer
  // took 239 -> 221 registers but ran 1-4% slower (H100,
  // bench/results/2026-11-28-h100-bwd-warp-specialize), the forward the same.
  auto kernel = op->getParentOfType<gpu::GPUFuncOp>();
  bool warpSpecialized = kernel && kernel->hasAttr(kProducerThreadsAttr);
  auto isLoopInvariantTile = [&](Value tile) {
    auto arg = dyn_cast<BlockArgument>(tile);
    return warpSpecialized && arg &&
           isa<gpu::GPUFuncOp>(arg.getOwner()->getParentOp());
  };
  auto descriptorOf = [&](Value tile, Value share, int64_t kStep,
                          bool mnMajor) -> std::pair<Value, int64_t> {
    if (!isLoopInvariantTile(tile))
      return {stepDescriptor(b, tile, share, kStep, mnMajor), 0};
    return {stepDescriptor(b, tile, share, 0, mnMajor),
            stepDelta(tile, kStep, mnMajor)};
  };
  SmallVector<WarpgroupMmaStep> steps;
  for (int64_t kStep = 0; kStep < k / 16; ++kStep) {
    WarpgroupMmaStep step;
    if (aShare) {
      std::tie(step.aDescriptor, step.aDelta) =
          descriptorOf(adaptor.getA(), aShare, kStep, transposeA);
    } else {
      step.aRegisters = operandRegisters(b, element, adaptor.getA(), 0, kStep);
      for (Value &reg : step.aRegisters)
        reg = asI32(b, reg);
    }
    std::tie(step.bDescriptor, step.bDelta) =
        descriptorOf(adaptor.getB(), Value(), kStep, mnMajorB);
    steps.push_back(step);
  }
  return steps;
}

/// The accumulator in wgmma's order (block by block, 4 values each); none
/// when it starts as zeros.
SmallVector<Value> accumulatorValues(ImplicitLocOpBuilder &b, TileMatmulOp op,
                                     TileMatmulOp::Adaptor adaptor) {
  int64_t accBlocks = op.getAcc().getType().getDimSize(1) / kColsPerBlock;
  SmallVector<Value> accValues;
  if (!matchPattern(op.getAcc(), m_AnyZeroFloat()))
    for (int64_t block = 0; block < accBlocks; ++block)
      for (int64_t v = 0; v < kValuesPerBlock; ++v)
        accValues.push_back(vector::ExtractOp::create(
            b, adaptor.getAcc(), ArrayRef<int64_t>{block, v}));
  return accValues;
}
} // namespace

Value mlir::fa::lowerWarpgroupMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                                     TileMatmulOp::Adaptor adaptor) {
  SmallVector<WarpgroupMmaStep> steps = warpgroupMmaSteps(b, op, adaptor);
  SmallVector<Value> accValues = accumulatorValues(b, op, adaptor);
  Type element = getElementTypeOrSelf(op.getA().getType());
  SmallVector<Value> issued = issueWarpgroupMma(
      b, element.isF16() ? "f16" : "bf16", op.getAcc().getType().getDimSize(1),
      /*mnMajorA=*/op.getTransposeA(), /*mnMajorB=*/!op.getTransposeB(),
      accValues, steps);
  auto [waitBefore, pending] = warpgroupWaitPoint(op);
  b.setInsertionPoint(waitBefore);
  SmallVector<Value> results = waitForWarpgroupMma(b, issued, pending);
  return vector::FromElementsOp::create(
      b, cast<VectorType>(adaptor.getAcc().getType()), results);
}
