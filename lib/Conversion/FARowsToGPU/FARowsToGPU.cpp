//===- FARowsToGPU.cpp - Blocks of rows onto the threads of a block -------===//
//
// The thread-level lowering of row-wise kernels (LayerNorm): each op on a
// block of rows becomes code on each thread's share of it (RowLayout.h
// describes the distribution).
//
// Row reductions: a thread reduces its share, then the P threads of the row
// combine with xor shuffles (and through shared memory when a row spans
// several warps). Column reductions: the rows of a warp combine with xor
// shuffles, then the warps through shared memory.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "../ElementwiseConversion.h"
#include "../WarpReduce.h"
#include "RowLayout.h"

#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFAROWSTOGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Where the warps of a reduction that crosses warps meet: a shared buffer of
/// its own (memref<warps x f32> for rows, memref<warps x C x f32> for
/// columns), and whether a barrier must precede the writes (when nothing
/// else separates them from the previous execution's reads).
struct ReductionScratch {
  Value buffer;
  bool leadingBarrier = true;
};
using ScratchMap = DenseMap<Operation *, ReductionScratch>;

/// Patterns that need the layout (and the reductions' scratch buffers).
template <typename Op> struct RowsPattern : OpConversionPattern<Op> {
  RowsPattern(const TypeConverter &converter, MLIRContext *context,
              const RowsLayout &layout, const ScratchMap &scratch)
      : OpConversionPattern<Op>(converter, context), layout(layout),
        scratch(scratch) {}

  RowsLayout layout;
  const ScratchMap &scratch;
};

/// Broadcasts into per-row values or blocks. A per-column vector already has
/// its block share (every row's threads hold the same columns).
struct ConvertBroadcast : RowsPattern<vector::BroadcastOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(vector::BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type result = getTypeConverter()->convertType(op.getType());
    Value source = adaptor.getSource();
    if (source.getType() == result) {
      // scalar -> per-row, or per-column -> block
      rewriter.replaceOp(op, source);
      return success();
    }
    if (!isa<VectorType>(result) || isa<VectorType>(source.getType()))
      return rewriter.notifyMatchFailure(op, "unsupported broadcast");
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, result, source);
    return success();
  }
};

struct ConvertRowBroadcast : RowsPattern<RowBroadcastOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(RowBroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(
        op, getTypeConverter()->convertType(op.getType()), adaptor.getSource());
    return success();
  }
};

struct ConvertLoadBlock : RowsPattern<LoadBlockOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(LoadBlockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RowThread t = rowThreadOf(b, layout);
    Value source = adaptor.getSource();
    if (isPerRow(op.getType(), layout)) {
      rewriter.replaceOp(op,
                         loadRowValue(b, t, source, adaptor.getIndices()[0]));
      return success();
    }
    auto shareType =
        cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    Value share = splatConstant(b, shareType, 0.0);
    for (auto [k, chunk] : llvm::enumerate(
             shareChunks(b, layout, t, source, adaptor.getIndices())))
      share = insertChunk(b, chunk.load(b), share, k);
    rewriter.replaceOp(op, share);
    return success();
  }
};

struct ConvertStoreBlock : RowsPattern<StoreBlockOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(StoreBlockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RowThread t = rowThreadOf(b, layout);
    Value dest = adaptor.getDest();
    VectorType type = op.getValue().getType();
    if (isPerRow(type, layout)) {
      storeRowValue(b, t, adaptor.getValue(), dest, adaptor.getIndices()[0]);
      rewriter.eraseOp(op);
      return success();
    }
    auto storeShare = [&](OpBuilder &nested, Location loc) {
      ImplicitLocOpBuilder nb(loc, nested);
      for (auto [k, chunk] : llvm::enumerate(
               shareChunks(nb, layout, t, dest, adaptor.getIndices())))
        chunk.store(nb, extractChunk(nb, adaptor.getValue(), k));
    };
    if (type.getRank() == 1) {
      // Every row's threads hold the same columns: the first row writes.
      Value firstRow = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             t.rowInBlock, index(b, 0));
      scf::IfOp::create(b, firstRow, [&](OpBuilder &nested, Location loc) {
        storeShare(nested, loc);
        scf::YieldOp::create(nested, loc);
      });
    } else {
      storeShare(b, b.getLoc());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// Zeroes the share's elements whose column (8(kP + p) + v past `col`) is at
/// or beyond `limit`: one i32 threshold per thread against constant offsets.
struct ConvertZeroColumns : RowsPattern<ZeroColumnsOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(ZeroColumnsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RowThread t = rowThreadOf(b, layout);
    auto shareType = cast<VectorType>(adaptor.getValue().getType());
    SmallVector<int32_t> offsets;
    for (int64_t e = 0; e < shareType.getNumElements(); ++e)
      offsets.push_back((e / kRowChunk) * layout.threadsPerRow() * kRowChunk +
                        e % kRowChunk);
    auto offsetType = VectorType::get(shareType.getShape(), b.getI32Type());
    Value offsetVector = arith::ConstantOp::create(
        b, offsetType, DenseElementsAttr::get(offsetType, ArrayRef(offsets)));
    Value threshold = arith::SubIOp::create(
        b, adaptor.getLimit(),
        arith::AddIOp::create(b, adaptor.getCol(), t.firstColumn));
    Value threshold32 =
        arith::IndexCastOp::create(b, b.getI32Type(), threshold);
    Value inside = arith::CmpIOp::create(
        b, arith::CmpIPredicate::slt, offsetVector,
        vector::BroadcastOp::create(b, offsetType, threshold32));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(
        op, inside, adaptor.getValue(), splatConstant(b, shareType, 0.0));
    return success();
  }
};

struct ConvertReduction : RowsPattern<vector::MultiDimReductionOp> {
  using RowsPattern::RowsPattern;
  LogicalResult
  matchAndRewrite(vector::MultiDimReductionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getSourceVectorType().getRank() != 2)
      return rewriter.notifyMatchFailure(op, "only blocks of rows");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ReductionScratch shared = scratch.lookup(op);
    Value result = op.getReductionMask() == ArrayRef<bool>{false, true}
                       ? reduceRow(b, op.getKind(), adaptor.getSource(),
                                   adaptor.getAcc(), shared)
                       : reduceColumns(b, op.getKind(), adaptor.getSource(),
                                       adaptor.getAcc(), shared);
    rewriter.replaceOp(op, result);
    return success();
  }

  Value combine(ImplicitLocOpBuilder &b, vector::CombiningKind kind, Value x,
                Value y) const {
    return vector::makeArithReduction(b, b.getLoc(), kind, x, y);
  }

  /// The row's value in every thread of the row.
  Value reduceRow(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                  Value share, Value acc,
                  const ReductionScratch &shared) const {
    RowThread t = rowThreadOf(b, layout);
    Value value = vector::ReductionOp::create(b, kind, share);
    int64_t perRow = layout.threadsPerRow();
    // The row's threads within the warp: t P + {0, ..., min(P, 32) - 1}.
    SmallVector<int32_t> xorOffsets;
    for (int64_t offset = std::min(perRow, kThreadsPerWarp) / 2; offset >= 1;
         offset /= 2)
      xorOffsets.push_back(offset);
    value = warpXorReduce(b, kind, value, xorOffsets);
    if (perRow > kThreadsPerWarp) {
      // Each warp holds its part of the row; lane 0 posts it, then every
      // thread combines its row's warps.
      if (shared.leadingBarrier)
        gpu::BarrierOp::create(b);
      Value firstLane = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              t.laneId, index(b, 0));
      scf::IfOp::create(b, firstLane, [&](OpBuilder &nested, Location loc) {
        memref::StoreOp::create(nested, loc, value, shared.buffer,
                                ValueRange{t.warpId});
        scf::YieldOp::create(nested, loc);
      });
      gpu::BarrierOp::create(b);
      int64_t warpsPerRow = perRow / kThreadsPerWarp;
      Value firstWarp =
          arith::MulIOp::create(b, t.rowInBlock, index(b, warpsPerRow));
      value = memref::LoadOp::create(b, shared.buffer, ValueRange{firstWarp});
      for (int64_t w = 1; w < warpsPerRow; ++w)
        value = combine(
            b, kind, value,
            memref::LoadOp::create(
                b, shared.buffer,
                ValueRange{arith::AddIOp::create(b, firstWarp, index(b, w))}));
    }
    return combine(b, kind, value, acc);
  }

  /// The columns' values in every row's threads. The threads of one column
  /// chunk are P apart, so xor shuffles by P, 2P, ... combine a warp's rows.
  Value reduceColumns(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                      Value share, Value acc,
                      const ReductionScratch &shared) const {
    RowThread t = rowThreadOf(b, layout);
    auto shareType = cast<VectorType>(share.getType());
    SmallVector<Value> values;
    for (int64_t e = 0; e < shareType.getNumElements(); ++e)
      values.push_back(vector::ExtractOp::create(b, share, ArrayRef{e}));
    SmallVector<int32_t> xorOffsets;
    for (int64_t offset = layout.threadsPerRow(); offset < kThreadsPerWarp;
         offset *= 2)
      xorOffsets.push_back(offset);
    warpXorReduce(b, kind, values, xorOffsets);
    Value sums = vector::FromElementsOp::create(b, shareType, values);
    int64_t warps = layout.threads / kThreadsPerWarp;
    if (warps > 1) {
      // The first row of each warp posts the warp's sums; then every thread
      // adds up the warps for its columns.
      if (shared.leadingBarrier)
        gpu::BarrierOp::create(b);
      Value firstRowOfWarp =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t.laneId,
                                index(b, layout.threadsPerRow()));
      scf::IfOp::create(
          b, firstRowOfWarp, [&](OpBuilder &nested, Location loc) {
            ImplicitLocOpBuilder nb(loc, nested);
            for (int64_t k = 0; k < layout.chunksPerThread(); ++k)
              vector::StoreOp::create(
                  nb, extractChunk(nb, sums, k), shared.buffer,
                  ValueRange{t.warpId, chunkColumn(nb, layout, t, k)},
                  /*nontemporal=*/false,
                  chunkAlignment(shareType.getElementType()));
            scf::YieldOp::create(nb);
          });
      gpu::BarrierOp::create(b);
      sums = splatConstant(b, shareType, 0.0);
      for (int64_t k = 0; k < layout.chunksPerThread(); ++k) {
        Value column = chunkColumn(b, layout, t, k);
        Value chunk;
        for (int64_t w = 0; w < warps; ++w) {
          Value part = vector::LoadOp::create(
              b, chunkType(shareType.getElementType()), shared.buffer,
              ValueRange{index(b, w), column}, /*nontemporal=*/false,
              chunkAlignment(shareType.getElementType()));
          chunk = chunk ? combine(b, kind, chunk, part) : part;
        }
        sums = insertChunk(b, chunk, sums, k);
      }
    }
    return combine(b, kind, sums, acc);
  }
};

struct ConvertFARowsToGPUPass
    : public mlir::fa::impl::ConvertFARowsToGPUBase<ConvertFARowsToGPUPass> {
  void runOnOperation() override {
    // Tile kernels have a lowering of their own (convert-fa-to-nvgpu).
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp func) {
          return func->hasAttr(kRowsConfigAttr) ? convertKernel(func)
                                                : success();
        })))
      signalPassFailure();
  }

  FailureOr<RowsLayout> layoutOf(gpu::GPUFuncOp func) {
    std::optional<ArrayRef<int32_t>> blockSize = func.getKnownBlockSize();
    if (!blockSize || (*blockSize)[1] != 1 || (*blockSize)[2] != 1)
      return emitPassError(func, getArgument())
                 << "expects known_block_size = [threads, 1, 1]",
             failure();
    // The dialect verified that fa.rows, which the kernel has, is a RowsAttr.
    auto config = func->getAttrOfType<RowsAttr>(kRowsConfigAttr);
    RowsLayout layout{config.getRows().value_or(1),
                      config.getBlockCols().value_or(0), (*blockSize)[0]};
    if (std::string why = layout.whyInvalid(); !why.empty())
      return emitPassError(func, getArgument()) << why, failure();
    return layout;
  }

  /// A shared buffer for every reduction that crosses warps. The warps'
  /// partial results meet there: write, barrier, read. A second barrier
  /// before the writes is needed only where the same reduction may run again
  /// with no other reduction's barrier in between: inside a loop whose body
  /// has no other such reduction.
  ScratchMap addScratch(gpu::GPUFuncOp func, const RowsLayout &layout) {
    SmallVector<vector::MultiDimReductionOp> crossing;
    func.walk([&](vector::MultiDimReductionOp op) {
      bool rowWise = op.getReductionMask() == ArrayRef<bool>{false, true};
      if (rowWise ? layout.threadsPerRow() > kThreadsPerWarp
                  : layout.threads > kThreadsPerWarp)
        crossing.push_back(op);
    });
    MLIRContext *context = func.getContext();
    auto shared = gpu::AddressSpaceAttr::get(
        context, gpu::GPUDialect::getWorkgroupAddressSpace());
    int64_t warps = layout.threads / kThreadsPerWarp;
    auto f32 = Float32Type::get(context);
    ScratchMap scratch;
    for (vector::MultiDimReductionOp op : crossing) {
      bool rowWise = op.getReductionMask() == ArrayRef<bool>{false, true};
      SmallVector<int64_t> shape = {warps};
      if (!rowWise)
        shape.push_back(layout.cols);
      Value buffer = func.addWorkgroupAttribution(
          MemRefType::get(shape, f32, MemRefLayoutAttrInterface{}, shared),
          op.getLoc());
      // Column sums move as whole 32-byte chunks.
      func.setWorkgroupAttributionAttr(
          func.getNumWorkgroupAttributions() - 1, "llvm.align",
          IntegerAttr::get(IntegerType::get(context, 64), 32));
      bool inLoop = op->getParentOfType<scf::ForOp>() != nullptr;
      bool separatedInBody = llvm::count_if(crossing, [&](auto other) {
                               return other->getBlock() == op->getBlock();
                             }) > 1;
      scratch[op] = {buffer, inLoop && !separatedInBody};
    }
    return scratch;
  }

  LogicalResult convertKernel(gpu::GPUFuncOp func) {
    FailureOr<RowsLayout> layout = layoutOf(func);
    if (failed(layout))
      return failure();
    bool columnReductionTooWide = false;
    func.walk([&](vector::MultiDimReductionOp op) {
      columnReductionTooWide |=
          op.getReductionMask() != ArrayRef<bool>{false, true} &&
          layout->threadsPerRow() > kThreadsPerWarp;
    });
    if (columnReductionTooWide)
      return emitPassError(func, getArgument())
             << "a column reduction needs at most " << kThreadsPerWarp
             << " threads per row, got " << layout->threadsPerRow();
    ScratchMap scratch = addScratch(func, *layout);

    MLIRContext *context = &getContext();
    RowsTypeConverter converter(*layout);
    ConversionTarget target(*context);
    target.addIllegalDialect<FADialect>();
    // Only the kernel's own ops are judged by their types: what the patterns
    // create is already per thread, and a chunk or a share may happen to
    // have as many elements as the block has rows.
    DenseSet<Operation *> original;
    func.walk([&](Operation *op) { original.insert(op); });
    auto isLegal = [&](Operation *op) {
      return !original.contains(op) || converter.isLegal(op);
    };
    RewritePatternSet patterns(context);
    patterns.add<ConvertElementwise, ConvertSplatConstant>(converter, context);
    patterns.add<ConvertBroadcast, ConvertRowBroadcast, ConvertLoadBlock,
                 ConvertStoreBlock, ConvertZeroColumns, ConvertReduction>(
        converter, context, *layout, scratch);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    target.markUnknownOpDynamicallyLegal(isLegal);
    target.addDynamicallyLegalOp<scf::ForOp, scf::IfOp, scf::WhileOp,
                                 scf::ConditionOp, scf::YieldOp>(isLegal);
    return applyPartialConversion(func, target, std::move(patterns));
  }
};
} // namespace
