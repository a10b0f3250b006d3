//===- MmaSync.cpp - fa.tile_matmul as mma.sync m16n8k16 ------------------===//
//
// f16/bf16 products as warp-synchronous tensor-core instructions, A from
// registers or read with ldmatrix, B read with ldmatrix (transposed where it
// is stored [K][N]); the pieces the other lowerings share: one mma.sync into
// an accumulator block, A operand registers from a lane's share.
//
//===----------------------------------------------------------------------===//

#include "TileLayout.h"
#include "TileMatmul.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fa {

Value mmaIntoBlock(ImplicitLocOpBuilder &b, NVVM::MMATypes ptxType,
                   int64_t kSize, ValueRange aRegs, ValueRange bRegs, Value acc,
                   int64_t block) {
  Type f32 = b.getF32Type();
  Value accBlock = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{block});
  SmallVector<Value> cRegs;
  for (int64_t v = 0; v < kValuesPerBlock; ++v)
    cRegs.push_back(
        vector::ExtractOp::create(b, accBlock, ArrayRef<int64_t>{v}));
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value result =
      NVVM::MmaOp::create(b, b.getLoc(), resultType, aRegs, bRegs, cRegs,
                          {16, 8, kSize}, std::nullopt, std::nullopt,
                          std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
                          std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                         NVVM::MMALayout::col});
  SmallVector<Value> values;
  for (int64_t v = 0; v < kValuesPerBlock; ++v)
    values.push_back(LLVM::ExtractValueOp::create(b, result, v));
  Value newBlock = vector::FromElementsOp::create(
      b, VectorType::get({kValuesPerBlock}, f32), values);
  return vector::InsertOp::create(b, newBlock, acc, ArrayRef<int64_t>{block});
}

Value packPair(ImplicitLocOpBuilder &b, Type element, Value pair) {
  if (element.isF16())
    return pair;
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
}

SmallVector<Value> operandRegisters(ImplicitLocOpBuilder &b, Type element,
                                    Value a, int64_t firstBlock,
                                    int64_t kStep) {
  Value low = vector::ExtractOp::create(
      b, a, ArrayRef<int64_t>{firstBlock + 2 * kStep});
  Value high = vector::ExtractOp::create(
      b, a, ArrayRef<int64_t>{firstBlock + 2 * kStep + 1});
  SmallVector<Value> regs;
  for (Value block : {low, high})
    for (int64_t h = 0; h < 2; ++h)
      regs.push_back(packPair(b, element,
                              vector::ExtractStridedSliceOp::create(
                                  b, block, ArrayRef<int64_t>{2 * h},
                                  ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1})));
  return regs;
}

namespace {
/// One product on mma.sync: the lane's ldmatrix addressing, set up once, then
/// per 16-wide k step the A operands of each row block and, per pair of
/// 8-column output blocks, one ldmatrix x4 of B feeding every row block.
class MmaSyncMatmul {
public:
  /// Emits the lane's ldmatrix addressing at the builder's insertion point.
  MmaSyncMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                TileMatmulOp::Adaptor adaptor);

  /// acc + a @ b.
  Value emit();

private:
  /// An ldmatrix x4 of `tile` at a lane part plus a constant part of the
  /// swizzled address (see splitSwizzledAddress).
  Value loadFragments(Value tile, Value rowLane, int64_t rowConst,
                      Value chunkLane, int64_t chunkConst, bool transpose);

  /// A staged in shared memory is read through a view of the warp's rows:
  /// the lane's addresses are then the view's base plus lane-dependent and
  /// constant parts, which LLVM folds into four address registers and
  /// immediates. Indexed at warpRow0 + row instead, every (k step, row
  /// block) kept its own address register. Null for a register A.
  Value warpRowsOfA();

  /// The four A registers of k step `kStep`, for each row block.
  SmallVector<SmallVector<Value>> aOperands(int64_t kStep);

  /// `acc` plus the products of k step `kStep` into output blocks
  /// 2 nPair and 2 nPair + 1 of every row block.
  Value accumulatePair(Value acc, ArrayRef<SmallVector<Value>> aRegs,
                       int64_t kStep, int64_t nPair);

  ImplicitLocOpBuilder &b;
  TileMatmulOp::Adaptor adaptor;
  Type element;
  int64_t k, n, rowBlocks, accBlocks;
  bool transposeB;
  NVVM::MMATypes ptxType;
  Lane lane;
  // Which row of an 8x8 matrix, and which of the four matrices (low and
  // high bit), this lane addresses for ldmatrix.
  Value rowInMatrix, matrixLow, matrixHigh;
  // The lane's row within a 16-row step when the four matrices are
  // stacked (low, high) = (rows +0/+8, chunks +0/+1), and the other way.
  Value rowsByLow, rowsByHigh;
  Value aWarpRows;
};
} // namespace

MmaSyncMatmul::MmaSyncMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                             TileMatmulOp::Adaptor adaptor)
    : b(b), adaptor(adaptor) {
  auto aType = cast<ShapedType>(op.getA().getType());
  element = aType.getElementType();
  k = aType.getDimSize(1);
  n = op.getAcc().getType().getDimSize(1);
  rowBlocks = rowBlocksOf(adaptor.getAcc().getType(), n);
  accBlocks = n / kColsPerBlock;
  transposeB = op.getTransposeB();
  ptxType = element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  lane = laneOf(b, rowBlocks);
  rowInMatrix = arith::RemUIOp::create(b, lane.laneId, index(b, 8));
  Value matrix = arith::DivUIOp::create(b, lane.laneId, index(b, 8));
  matrixLow = arith::RemUIOp::create(b, matrix, index(b, 2));
  matrixHigh = arith::DivUIOp::create(b, matrix, index(b, 2));
  rowsByLow = arith::AddIOp::create(
      b, rowInMatrix, arith::MulIOp::create(b, matrixLow, index(b, 8)));
  rowsByHigh = arith::AddIOp::create(
      b, rowInMatrix, arith::MulIOp::create(b, matrixHigh, index(b, 8)));
  aWarpRows = warpRowsOfA();
}

Value MmaSyncMatmul::emit() {
  Value acc = adaptor.getAcc();
  for (int64_t kStep = 0; kStep < k / 16; ++kStep) {
    SmallVector<SmallVector<Value>> aRegs = aOperands(kStep);
    for (int64_t nPair = 0; nPair < n / 16; ++nPair)
      acc = accumulatePair(acc, aRegs, kStep, nPair);
  }
  return acc;
}

Value MmaSyncMatmul::loadFragments(Value tile, Value rowLane, int64_t rowConst,
                                   Value chunkLane, int64_t chunkConst,
                                   bool transpose) {
  auto [row, col] =
      splitSwizzledAddress(b, rowLane, rowConst, chunkLane, chunkConst,
                           cast<MemRefType>(tile.getType()));
  return nvgpu::LdMatrixOp::create(b, VectorType::get({4, 2}, element), tile,
                                   ValueRange{row, col}, transpose,
                                   /*numTiles=*/4);
}

Value MmaSyncMatmul::warpRowsOfA() {
  auto aTile = dyn_cast<MemRefType>(adaptor.getA().getType());
  if (!aTile)
    return Value();
  SmallVector<OpFoldResult> offsets = {lane.warpRow0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rowBlocks * kMmaRows),
                                     b.getIndexAttr(aTile.getDimSize(1))};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return memref::SubViewOp::create(b, adaptor.getA(), offsets, sizes, strides);
}

SmallVector<SmallVector<Value>> MmaSyncMatmul::aOperands(int64_t kStep) {
  SmallVector<SmallVector<Value>> aRegs;
  for (int64_t m = 0; m < rowBlocks; ++m) {
    if (isa<VectorType>(adaptor.getA().getType())) {
      aRegs.push_back(
          operandRegisters(b, element, adaptor.getA(), m * (k / 8), kStep));
      continue;
    }
    // A staged [M][K]: matrices (m, k), (m+8, k), (m, k+8), (m+8, k+8)
    // are exactly the registers a0..a3 of m16n8k16.
    Value fragments = loadFragments(aWarpRows, rowsByLow, kMmaRows * m,
                                    matrixHigh, 2 * kStep, /*transpose=*/false);
    SmallVector<Value> regs;
    for (int64_t r = 0; r < 4; ++r)
      regs.push_back(packPair(
          b, element,
          vector::ExtractOp::create(b, fragments, ArrayRef<int64_t>{r})));
    aRegs.push_back(regs);
  }
  return aRegs;
}

Value MmaSyncMatmul::accumulatePair(Value acc,
                                    ArrayRef<SmallVector<Value>> aRegs,
                                    int64_t kStep, int64_t nPair) {
  // B stored [N][K] (transposed): matrices (n, k), (n, k+8), (n+8, k),
  // (n+8, k+8). Stored [K][N]: (k, n), (k+8, n), (k, n+8), (k+8, n+8),
  // read transposed. Either way registers 0-1 feed block 2*nPair and
  // registers 2-3 block 2*nPair + 1.
  Value fragments =
      transposeB ? loadFragments(adaptor.getB(), rowsByHigh, 16 * nPair,
                                 matrixLow, 2 * kStep, /*transpose=*/false)
                 : loadFragments(adaptor.getB(), rowsByLow, 16 * kStep,
                                 matrixHigh, 2 * nPair, /*transpose=*/true);
  for (int64_t half = 0; half < 2; ++half) {
    SmallVector<Value> bRegs;
    for (int64_t r = 0; r < 2; ++r)
      bRegs.push_back(
          packPair(b, element,
                   vector::ExtractOp::create(b, fragments,
                                             ArrayRef<int64_t>{2 * half + r})));
    for (int64_t m = 0; m < rowBlocks; ++m)
      acc = mmaIntoBlock(b, ptxType, 16, aRegs[m], bRegs, acc,
                         m * accBlocks + 2 * nPair + half);
  }
  return acc;
}

Value lowerMmaSyncMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                         TileMatmulOp::Adaptor adaptor) {
  return MmaSyncMatmul(b, op, adaptor).emit();
}

} // namespace mlir::fa
