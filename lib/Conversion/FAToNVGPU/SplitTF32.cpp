//===- SplitTF32.cpp - f32 products as three TF32 ones --------------------===//
//
// f32 with m16n8k8 on TF32 tensor cores, in three products for close to
// f32 accuracy: x = big + small with big = x rounded to TF32, and
// a @ b ~ small_a @ big_b + big_a @ small_b + big_a @ big_b.
//
//===----------------------------------------------------------------------===//

#include "TileLayout.h"
#include "TileMatmul.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The lane's four A values of 8-column block `kBlock` of row block `m`,
/// in slot order: entries 0, 2, 1, 3 of the accumulator layout, read from
/// the register tile or from the (swizzled) shared-memory tile.
SmallVector<Value> tf32OperandValues(ImplicitLocOpBuilder &b, const Lane &lane,
                                     Value a, int64_t m, int64_t k,
                                     int64_t kBlock) {
  SmallVector<Value> values;
  if (isa<VectorType>(a.getType())) {
    Value block = vector::ExtractOp::create(
        b, a, ArrayRef<int64_t>{m * (k / kColsPerBlock) + kBlock});
    for (int64_t entry : {0, 2, 1, 3})
      values.push_back(
          vector::ExtractOp::create(b, block, ArrayRef<int64_t>{entry}));
    return values;
  }
  Type f32 = b.getF32Type();
  Value col = arith::AddIOp::create(b, lane.pairColumn,
                                    index(b, kColsPerBlock * kBlock));
  Value pairs[2];
  for (int h = 0; h < 2; ++h) {
    Value row = arith::AddIOp::create(b, lane.rowInTile,
                                      index(b, kMmaRows * m + 8 * h));
    pairs[h] = vector::LoadOp::create(
        b, VectorType::get({2}, f32), a,
        ValueRange{row, swizzledElementColumn(b, row, col,
                                              cast<MemRefType>(a.getType()))});
  }
  for (auto [h, e] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}})
    values.push_back(
        vector::ExtractOp::create(b, pairs[h], ArrayRef<int64_t>{e}));
  return values;
}

/// Rounds f32 bits to the nearest TF32 (10 mantissa bits; ties away from
/// zero): add half of the dropped unit, then clear the dropped bits. A carry
/// out of the mantissa correctly bumps the exponent.
Value roundToTF32Bits(ImplicitLocOpBuilder &b, Value bits) {
  Type i32 = b.getI32Type();
  Value half = arith::ConstantIntOp::create(b, i32, 0x1000);
  Value keep = arith::ConstantIntOp::create(b, i32, 0xFFFFE000);
  return arith::AndIOp::create(b, arith::AddIOp::create(b, bits, half), keep);
}

/// Splits f32 values into TF32 high parts and TF32 remainders, both as the
/// 32-bit registers mma.sync takes. Both parts rounded, x - big - small is
/// below 2^-22 |x|.
std::pair<SmallVector<Value>, SmallVector<Value>>
splitTF32(ImplicitLocOpBuilder &b, ArrayRef<Value> values) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  SmallVector<Value> bigs, smalls;
  for (Value value : values) {
    Value bigBits = roundToTF32Bits(b, arith::BitcastOp::create(b, i32, value));
    Value small = arith::SubFOp::create(
        b, value, arith::BitcastOp::create(b, f32, bigBits));
    bigs.push_back(bigBits);
    smalls.push_back(
        roundToTF32Bits(b, arith::BitcastOp::create(b, i32, small)));
  }
  return {bigs, smalls};
}
} // namespace

Value mlir::fa::lowerSplitTF32Matmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                                     TileMatmulOp::Adaptor adaptor) {
  Type element = b.getF32Type();
  int64_t k = cast<ShapedType>(op.getA().getType()).getDimSize(1);
  int64_t n = op.getAcc().getType().getDimSize(1);
  int64_t rowBlocks = rowBlocksOf(adaptor.getAcc().getType(), n);
  int64_t accBlocks = n / kColsPerBlock;
  bool transposeB = op.getTransposeB();
  Lane lane = laneOf(b, rowBlocks);
  Value group = arith::DivUIOp::create(b, lane.laneId, index(b, 4));
  Value bTile = adaptor.getB();

  // B element (kk, nn) of the logical [K][N] operand.
  auto loadB = [&](Value kk, Value nn) -> Value {
    Value row = transposeB ? nn : kk, col = transposeB ? kk : nn;
    return memref::LoadOp::create(
        b, bTile,
        ValueRange{row, swizzledElementColumn(
                            b, row, col, cast<MemRefType>(bTile.getType()))});
  };

  // The tensor cores truncate while they accumulate; a long chain of
  // mma.sync into one accumulator drifts (the error grew with K and with
  // the number of key tiles). So each k block's three products start from
  // zero and reach the accumulator through one rounded f32 add.
  Value acc = adaptor.getAcc();
  auto partialType = VectorType::get({1, kValuesPerBlock}, b.getF32Type());
  Value zero = splatConstant(b, partialType, 0.0);
  for (int64_t nBlock = 0; nBlock < accBlocks; ++nBlock) {
    Value nn =
        arith::AddIOp::create(b, group, index(b, kColsPerBlock * nBlock));
    SmallVector<Value> sums;
    for (int64_t m = 0; m < rowBlocks; ++m)
      sums.push_back(vector::ExtractOp::create(
          b, acc, ArrayRef<int64_t>{m * accBlocks + nBlock}));
    for (int64_t kBlock = 0; kBlock < k / kColsPerBlock; ++kBlock) {
      Value k0 = arith::AddIOp::create(b, lane.pairColumn,
                                       index(b, kColsPerBlock * kBlock));
      Value k1 = arith::AddIOp::create(b, k0, index(b, 1));
      auto [bBig, bSmall] = splitTF32(b, {loadB(k0, nn), loadB(k1, nn)});
      for (int64_t m = 0; m < rowBlocks; ++m) {
        auto [aBig, aSmall] = splitTF32(
            b, tf32OperandValues(b, lane, adaptor.getA(), m, k, kBlock));
        Value partial =
            mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aSmall, bBig, zero, 0);
        partial =
            mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aBig, bSmall, partial, 0);
        partial =
            mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aBig, bBig, partial, 0);
        sums[m] = arith::AddFOp::create(
            b, sums[m],
            vector::ExtractOp::create(b, partial, ArrayRef<int64_t>{0}));
      }
    }
    for (int64_t m = 0; m < rowBlocks; ++m)
      acc = vector::InsertOp::create(b, sums[m], acc,
                                     ArrayRef<int64_t>{m * accBlocks + nBlock});
  }
  return acc;
}
