//===- TileLayerNorm.cpp - fa.layernorm(_grad) to row-wise GPU kernels ----===//
//
// Builds the tiled level of LayerNorm: an explicit grid mapping over blocks of
// rows, and the forward or backward math on whole blocks (`vector<R x C>`),
// per-row statistics (`vector<R>`) and per-column parameters (`vector<C>`).
// How a block is spread over threads is the lowering's business
// (convert-fa-rows-to-gpu), as the warp layout of attention tiles is.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"

#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FATILELAYERNORM
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// A function's fa.rows with the entries it leaves out taken from the pass
/// options.
struct RowsConfig {
  int64_t rows, blockCols, numWarps;
  /// The whole row stays in registers: one read of each input.
  bool resident;
  /// Forward only: a grid of resident blocks, each walking many row blocks
  /// and loading the next while it works on the current.
  bool persistent;
  /// The backward's second kernel, which sums the partial rows: many rows in
  /// flight per block, a few columns per thread.
  int64_t reduceRows, reduceCols, reduceWarps;

  RowsLayout layout() const {
    return {rows, blockCols, numWarps * kThreadsPerWarp};
  }
  RowsLayout reduceLayout() const {
    return {reduceRows, reduceCols, reduceWarps * kThreadsPerWarp};
  }
};

//===----------------------------------------------------------------------===//
// Building blocks of the math
//===----------------------------------------------------------------------===//

/// Types and shapes every body builder needs.
struct RowsKernel {
  ImplicitLocOpBuilder &b;
  RowsLayout layout;
  Value numRows, numCols, numColsF32;

  Type f32() { return b.getF32Type(); }
  VectorType blockType() {
    return VectorType::get({layout.rows, layout.cols}, f32());
  }
  VectorType rowsType() { return VectorType::get({layout.rows}, f32()); }
  VectorType colsType(Type element) {
    return VectorType::get({layout.cols}, element);
  }

  /// Values of any float type computed with in f32.
  Value toF32(Value value) {
    auto type = cast<VectorType>(value.getType());
    if (type.getElementType().isF32())
      return value;
    return arith::ExtFOp::create(b, type.clone(f32()), value);
  }
  Value fromF32(Value value, Type element) {
    if (element.isF32())
      return value;
    return arith::TruncFOp::create(
        b, cast<VectorType>(value.getType()).clone(element), value);
  }
  /// An f32 value rounded to `element` and back: what a buffer of
  /// `element`s holds once it is stored.
  Value roundedTo(Value value, Type element) {
    return toF32(fromF32(value, element));
  }

  /// The `R x C` block of a 2-D buffer at (row0, col0), in f32.
  Value loadBlock(Value buffer, Value row0, Value col0) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    return toF32(LoadBlockOp::create(
        b, VectorType::get({layout.rows, layout.cols}, element), buffer,
        ValueRange{row0, col0}));
  }
  void storeBlock(Value value, Value buffer, Value row0, Value col0) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    StoreBlockOp::create(b, fromF32(value, element), buffer,
                         ValueRange{row0, col0});
  }
  /// Per-column values (weight, bias) at col0, repeated for every row.
  Value loadColumns(Value buffer, Value col0) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    Value cols = toF32(
        LoadBlockOp::create(b, colsType(element), buffer, ValueRange{col0}));
    return vector::BroadcastOp::create(b, blockType(), cols);
  }
  Value loadRowStats(Value buffer, Value row0) {
    return LoadBlockOp::create(b, rowsType(), buffer, ValueRange{row0});
  }

  /// acc + the sum of each row of `block`.
  Value addRowSums(Value block, Value acc) {
    return vector::MultiDimReductionOp::create(
        b, block, acc, ArrayRef<bool>{false, true}, vector::CombiningKind::ADD);
  }
  Value rowMean(Value rowSums) {
    return arith::DivFOp::create(
        b, rowSums, vector::BroadcastOp::create(b, rowsType(), numColsF32));
  }
  Value perRow(Value rowValues) {
    return RowBroadcastOp::create(b, blockType(), rowValues);
  }

  /// A loop over the column blocks of the rows, carrying `inits`; `body`
  /// gets the first column and the carried values and returns the new ones.
  ValueRange
  forColumnBlocks(ValueRange inits,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, index(b, 0), numCols, index(b, layout.cols), inits,
        [&](OpBuilder &nested, Location loc, Value col0, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, body(col0, carried));
        });
    return loop.getResults();
  }
};

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// rstd = 1 / sqrt(mean((x - mean)^2) + eps), from the summed squares; eps
/// is the op's f32 operand (a kernel parameter), the same for every row.
Value reciprocalStd(RowsKernel &k, Value squareSums, Value eps) {
  Value variance = k.rowMean(squareSums);
  return math::RsqrtOp::create(
      k.b,
      arith::AddFOp::create(
          k.b, variance, vector::BroadcastOp::create(k.b, k.rowsType(), eps)));
}

/// The weight and bias at column col0, repeated for every row.
struct Affine {
  Value weight, bias;
};

Affine loadAffine(RowsKernel &k, LayerNormOp op, Value col0) {
  Value weight = k.loadColumns(op.getWeight(), col0);
  return {weight, k.loadColumns(op.getBias(), col0)};
}

/// y = (x - mean) * rstd * w + b; `centred` is x - mean.
Value normalise(RowsKernel &k, const Affine &affine, Value centred,
                Value rstd) {
  Value scaled = arith::MulFOp::create(k.b, centred, k.perRow(rstd));
  return arith::AddFOp::create(
      k.b, arith::MulFOp::create(k.b, scaled, affine.weight), affine.bias);
}

/// (x - mean) on the block at col0, zero in the columns past the row's end.
Value centre(RowsKernel &k, Value x, Value mean, Value col0) {
  Value centred = arith::SubFOp::create(k.b, x, k.perRow(mean));
  return ZeroColumnsOp::create(k.b, centred.getType(), centred, col0,
                               k.numCols);
}

void storeStats(RowsKernel &k, LayerNormOp op, Value row0, Value mean,
                Value rstd) {
  if (Value meanBuffer = op.getMean()) {
    StoreBlockOp::create(k.b, mean, meanBuffer, ValueRange{row0});
    StoreBlockOp::create(k.b, rstd, op.getRstd(), ValueRange{row0});
  }
}

/// The residual add: s = x + r in f32 (`x` and `r` of any float type),
/// stored to `sum` rounded to its element type; returns s as stored, in f32,
/// which is what the norm then works on (and what the backward reads back).
Value addResidual(RowsKernel &k, LayerNormOp op, Value x, Value r, Value row0,
                  Value col0) {
  Value xF32 = k.toF32(x);
  Value sum = arith::AddFOp::create(k.b, xF32, k.toF32(r));
  Value sumBuffer = op.getSum();
  k.storeBlock(sum, sumBuffer, row0, col0);
  return k.roundedTo(sum,
                     cast<MemRefType>(sumBuffer.getType()).getElementType());
}

/// The rows the op normalises at (row0, col0), in f32: x, or x + residual
/// (stored to `sum` on the way).
Value loadNormalised(RowsKernel &k, LayerNormOp op, Value row0, Value col0) {
  Value x = k.loadBlock(op.getX(), row0, col0);
  if (!op.getResidual())
    return x;
  return addResidual(k, op, x, k.loadBlock(op.getResidual(), row0, col0), row0,
                     col0);
}

/// Rows held whole in registers (`x` in f32): mean, variance of the centred
/// values, y.
void normaliseResidentRows(RowsKernel &k, LayerNormOp op, Value row0, Value x,
                           const Affine &affine) {
  ImplicitLocOpBuilder &b = k.b;
  Value zero = index(k.b, 0);
  Value zeroRows = splatConstant(k.b, k.rowsType(), 0.0);
  Value mean = k.rowMean(k.addRowSums(x, zeroRows));
  Value centred = centre(k, x, mean, zero);
  Value rstd = reciprocalStd(
      k, k.addRowSums(arith::MulFOp::create(b, centred, centred), zeroRows),
      op.getEps());
  k.storeBlock(normalise(k, affine, centred, rstd), op.getY(), row0, zero);
  storeStats(k, op, row0, mean, rstd);
}

/// Rows of any length: a loop over column blocks for the sum, one for the
/// squares, one for y. With a residual, the first loop also writes `sum` and
/// the others read it back: each thread reads the elements it wrote (the
/// same layout in every loop), so no barrier is needed, and `sum` may be `x`.
void normaliseLoopedRows(RowsKernel &k, LayerNormOp op, Value row0) {
  ImplicitLocOpBuilder &b = k.b;
  Value zeroRows = splatConstant(k.b, k.rowsType(), 0.0);
  Value sums = k.forColumnBlocks(zeroRows, [&](Value col0, ValueRange acc) {
    return SmallVector<Value>{
        k.addRowSums(loadNormalised(k, op, row0, col0), acc[0])};
  })[0];
  Value mean = k.rowMean(sums);
  Value rows = op.getSum() ? op.getSum() : op.getX();
  Value squares = k.forColumnBlocks(zeroRows, [&](Value col0, ValueRange acc) {
    Value centred = centre(k, k.loadBlock(rows, row0, col0), mean, col0);
    return SmallVector<Value>{
        k.addRowSums(arith::MulFOp::create(b, centred, centred), acc[0])};
  })[0];
  Value rstd = reciprocalStd(k, squares, op.getEps());
  k.forColumnBlocks({}, [&](Value col0, ValueRange) {
    Value centred = centre(k, k.loadBlock(rows, row0, col0), mean, col0);
    k.storeBlock(normalise(k, loadAffine(k, op, col0), centred, rstd),
                 op.getY(), row0, col0);
    return SmallVector<Value>{};
  });
  storeStats(k, op, row0, mean, rstd);
}

void buildForward(RowsKernel &k, LayerNormOp op, const RowsConfig &config) {
  ImplicitLocOpBuilder &b = k.b;
  Value zero = index(k.b, 0);
  Value rowsPerBlock = index(k.b, config.rows);
  Value blockId = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (!config.resident) {
    normaliseLoopedRows(k, op, arith::MulIOp::create(b, blockId, rowsPerBlock));
    return;
  }
  if (!config.persistent) {
    // Every load first: the reductions' barriers would keep the weight and
    // bias loads from overlapping with the row's.
    Value row0 = arith::MulIOp::create(b, blockId, rowsPerBlock);
    Value x = k.loadBlock(op.getX(), row0, zero);
    Value r =
        op.getResidual() ? k.loadBlock(op.getResidual(), row0, zero) : Value();
    Affine affine = loadAffine(k, op, zero);
    if (r)
      x = addResidual(k, op, x, r, row0, zero);
    normaliseResidentRows(k, op, row0, x, affine);
    return;
  }
  // Persistent: each block walks row blocks blockId, blockId + grid, ... and
  // loads the next one's x (and residual) before working on the current one,
  // so a row's loads are in flight during the previous row's reductions and
  // stores.
  Affine affine = loadAffine(k, op, zero);
  Value step = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value numRowBlocks = arith::CeilDivUIOp::create(b, k.numRows, rowsPerBlock);
  SmallVector<Value> inputs = {op.getX()};
  if (Value residual = op.getResidual())
    inputs.push_back(residual);
  auto loadRaw = [&](Value rowBlock) -> SmallVector<Value> {
    Value row0 = arith::MulIOp::create(b, rowBlock, rowsPerBlock);
    SmallVector<Value> raw;
    for (Value input : inputs) {
      Type element = cast<MemRefType>(input.getType()).getElementType();
      raw.push_back(LoadBlockOp::create(
          b, VectorType::get({config.rows, config.blockCols}, element), input,
          ValueRange{row0, zero}));
    }
    return raw;
  };
  SmallVector<Value> first = loadRaw(blockId);
  scf::ForOp::create(
      b, blockId, numRowBlocks, step, first,
      [&](OpBuilder &nested, Location loc, Value rowBlock, ValueRange raw) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        SmallVector<Value> next =
            loadRaw(arith::AddIOp::create(b, rowBlock, step));
        Value row0 = arith::MulIOp::create(b, rowBlock, rowsPerBlock);
        Value x = raw.size() > 1
                      ? addResidual(k, op, raw[0], raw[1], row0, zero)
                      : k.toF32(raw[0]);
        normaliseResidentRows(k, op, row0, x, affine);
        scf::YieldOp::create(b, next);
      });
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// What one block of rows needs at column col0: x normalised, and g = dy * w.
struct GradTerms {
  Value dy, xhat, g;
};

GradTerms gradTerms(RowsKernel &k, LayerNormGradOp op, Value row0, Value col0,
                    Value mean, Value rstd, Value weight) {
  ImplicitLocOpBuilder &b = k.b;
  GradTerms t;
  t.dy = k.loadBlock(op.getDy(), row0, col0);
  Value x = k.loadBlock(op.getX(), row0, col0);
  t.xhat = arith::MulFOp::create(b, arith::SubFOp::create(b, x, k.perRow(mean)),
                                 k.perRow(rstd));
  t.g = arith::MulFOp::create(b, t.dy, weight);
  return t;
}

/// Stores the input gradient `dx` of the block at (row0, col0), plus
/// `dresidual` when the op has one (added in f32, rounded once). Each thread
/// reads the dresidual elements it then writes as dx: they may alias.
void storeInputGrad(RowsKernel &k, LayerNormGradOp op, Value dx, Value row0,
                    Value col0) {
  if (Value dresidual = op.getDresidual())
    dx = arith::AddFOp::create(k.b, dx, k.loadBlock(dresidual, row0, col0));
  k.storeBlock(dx, op.getDx(), row0, col0);
}

/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
Value inputGrad(RowsKernel &k, const GradTerms &t, Value meanG, Value meanGXhat,
                Value rstd) {
  ImplicitLocOpBuilder &b = k.b;
  Value centred = arith::SubFOp::create(
      b, arith::SubFOp::create(b, t.g, k.perRow(meanG)),
      arith::MulFOp::create(b, t.xhat, k.perRow(meanGXhat)));
  return arith::MulFOp::create(b, centred, k.perRow(rstd));
}

/// The partial rows of the parameter gradients a thread block owns.
struct PartialRows {
  Value dweight, dbias, row0;
};

/// One block of rows of the backward: dx, and this block's contribution to
/// the parameter gradients (returned when resident, added to the partial rows
/// in memory otherwise).
SmallVector<Value> buildGradRows(RowsKernel &k, LayerNormGradOp op, Value row0,
                                 bool resident, Value weight,
                                 ValueRange accumulators,
                                 const PartialRows &partial) {
  ImplicitLocOpBuilder &b = k.b;
  Value zero = index(k.b, 0);
  Value zeroRows = splatConstant(k.b, k.rowsType(), 0.0);
  Value mean = k.loadRowStats(op.getMean(), row0);
  Value rstd = k.loadRowStats(op.getRstd(), row0);
  auto gXhat = [&](const GradTerms &t) {
    return arith::MulFOp::create(b, t.g, t.xhat);
  };
  if (resident) {
    GradTerms t = gradTerms(k, op, row0, zero, mean, rstd, weight);
    Value meanG = k.rowMean(k.addRowSums(t.g, zeroRows));
    Value meanGXhat = k.rowMean(k.addRowSums(gXhat(t), zeroRows));
    storeInputGrad(k, op, inputGrad(k, t, meanG, meanGXhat, rstd), row0, zero);
    return {arith::AddFOp::create(b, accumulators[0],
                                  arith::MulFOp::create(b, t.dy, t.xhat)),
            arith::AddFOp::create(b, accumulators[1], t.dy)};
  }
  ValueRange sums =
      k.forColumnBlocks({zeroRows, zeroRows}, [&](Value col0, ValueRange acc) {
        GradTerms t = gradTerms(k, op, row0, col0, mean, rstd,
                                k.loadColumns(op.getWeight(), col0));
        return SmallVector<Value>{k.addRowSums(t.g, acc[0]),
                                  k.addRowSums(gXhat(t), acc[1])};
      });
  Value meanG = k.rowMean(sums[0]);
  Value meanGXhat = k.rowMean(sums[1]);
  k.forColumnBlocks({}, [&](Value col0, ValueRange) {
    GradTerms t = gradTerms(k, op, row0, col0, mean, rstd,
                            k.loadColumns(op.getWeight(), col0));
    storeInputGrad(k, op, inputGrad(k, t, meanG, meanGXhat, rstd), row0, col0);
    auto accumulate = [&](Value buffer, Value term) {
      Value sum = arith::AddFOp::create(
          b, k.loadBlock(buffer, partial.row0, col0), term);
      k.storeBlock(sum, buffer, partial.row0, col0);
    };
    accumulate(partial.dweight, arith::MulFOp::create(b, t.dy, t.xhat));
    accumulate(partial.dbias, t.dy);
    return SmallVector<Value>{};
  });
  return {};
}

void buildBackward(RowsKernel &k, LayerNormGradOp op, bool resident,
                   const PartialRows &partial) {
  ImplicitLocOpBuilder &b = k.b;
  Value zero = index(k.b, 0);
  Value zeroBlock = splatConstant(k.b, k.blockType(), 0.0);
  Value rowsPerBlock = index(k.b, k.layout.rows);
  Value numRowBlocks = arith::CeilDivUIOp::create(b, k.numRows, rowsPerBlock);
  Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value step = gpu::GridDimOp::create(b, gpu::Dimension::x);

  // Resident: the weight once, the parameter gradients in registers. Else the
  // partial rows accumulate in memory and start at zero.
  Value weight;
  SmallVector<Value> inits;
  if (resident) {
    weight = k.loadColumns(op.getWeight(), zero);
    inits = {zeroBlock, zeroBlock};
  } else {
    k.forColumnBlocks({}, [&](Value col0, ValueRange) {
      k.storeBlock(zeroBlock, partial.dweight, partial.row0, col0);
      k.storeBlock(zeroBlock, partial.dbias, partial.row0, col0);
      return SmallVector<Value>{};
    });
  }
  auto loop = scf::ForOp::create(
      b, first, numRowBlocks, step, inits,
      [&](OpBuilder &nested, Location loc, Value rowBlock, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value row0 = arith::MulIOp::create(b, rowBlock, rowsPerBlock);
        scf::YieldOp::create(
            b, buildGradRows(k, op, row0, resident, weight, acc, partial));
      });
  if (resident) {
    k.storeBlock(loop.getResult(0), partial.dweight, partial.row0, zero);
    k.storeBlock(loop.getResult(1), partial.dbias, partial.row0, zero);
  }
}

/// The second stage: column `c` of dweight (dbias) is the sum of column `c`
/// of every partial row.
void buildParamsReduction(RowsKernel &k, Value partialDweight,
                          Value partialDbias, Value dweight, Value dbias) {
  ImplicitLocOpBuilder &b = k.b;
  Value col0 =
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            index(k.b, k.layout.cols));
  Value zeroBlock = splatConstant(k.b, k.blockType(), 0.0);
  Value numPartialRows = memref::DimOp::create(b, partialDweight, 0);
  auto loop = scf::ForOp::create(
      b, index(k.b, 0), numPartialRows, index(k.b, k.layout.rows),
      ValueRange{zeroBlock, zeroBlock},
      [&](OpBuilder &nested, Location loc, Value row0, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(
            b,
            ValueRange{arith::AddFOp::create(
                           b, acc[0], k.loadBlock(partialDweight, row0, col0)),
                       arith::AddFOp::create(
                           b, acc[1], k.loadBlock(partialDbias, row0, col0))});
      });
  auto storeColumnSums = [&](Value block, Value dest) {
    Value sums = vector::MultiDimReductionOp::create(
        b, block, splatConstant(k.b, k.colsType(k.f32()), 0.0),
        ArrayRef<bool>{true, false}, vector::CombiningKind::ADD);
    Type element = cast<MemRefType>(dest.getType()).getElementType();
    StoreBlockOp::create(b, k.fromF32(sums, element), dest, ValueRange{col0});
  };
  storeColumnSums(loop.getResult(0), dweight);
  storeColumnSums(loop.getResult(1), dbias);
}

//===----------------------------------------------------------------------===//
// Kernels and their manifest entries
//===----------------------------------------------------------------------===//

/// The configuration a kernel records (kRowsConfigAttr) for its `layout`.
RowsAttr kernelConfigAttr(MLIRContext *context, const RowsLayout &layout,
                          std::optional<bool> resident, bool persistent) {
  return RowsAttr::get(context, layout.rows, layout.cols,
                       layout.threads / kThreadsPerWarp, resident, persistent);
}

/// Builds kernel `name` computing `kernelOp` on `element`s, its `params`,
/// block and configuration from `layout` (recorded as fa.rows with
/// `resident` and `persistent`), over `grid` rows of blocks; records its
/// manifest entry in `kernels`. The builder is left in its body.
gpu::GPUFuncOp createRowsKernel(ImplicitLocOpBuilder &b, func::FuncOp func,
                                StringRef name, KernelOp kernelOp, Type element,
                                const RowsLayout &layout,
                                std::optional<bool> resident, bool persistent,
                                GridDim grid, ArrayRef<KernelParam> params,
                                SmallVectorImpl<NamedAttribute> &kernels,
                                KernelCompanions companions = {}) {
  KernelAttr entry = getKernelEntry(
      b.getContext(), kernelOp, element,
      kernelConfigAttr(b.getContext(), layout, resident, persistent),
      layout.threads, {grid, GridDim::One, GridDim::One}, params,
      /*attention=*/std::nullopt, companions);
  return createKernel(b, func, name, entry, kernels);
}

/// Maps each function-level parameter to the kernel argument at its position.
void mapParams(IRMapping &mapping, gpu::GPUFuncOp kernel,
               ArrayRef<KernelParam> params) {
  for (auto [param, arg] : llvm::zip_equal(params, kernel.getArguments()))
    if (param.value)
      mapping.map(param.value, arg);
}

/// The number of columns as an f32, for means.
Value colsAsF32(ImplicitLocOpBuilder &b, Value cols) {
  Value asInt = arith::IndexCastUIOp::create(b, b.getI64Type(), cols);
  return arith::UIToFPOp::create(b, b.getF32Type(), asInt);
}

struct FATileLayerNormPass
    : public mlir::fa::impl::FATileLayerNormBase<FATileLayerNormPass> {
  using Base::Base;

  /// The function's fa.rows, the entries it leaves out from the options.
  FailureOr<RowsConfig> configFor(func::FuncOp func) {
    auto attr = func->getAttrOfType<RowsAttr>(kRowsConfigAttr);
    if (!attr)
      attr = RowsAttr::get(func.getContext());
    RowsConfig config{attr.getRows().value_or(rows),
                      attr.getBlockCols().value_or(blockCols),
                      attr.getNumWarps().value_or(numWarps),
                      attr.getResident().value_or(resident),
                      attr.getPersistent(),
                      attr.getReduceRows(),
                      attr.getReduceCols(),
                      attr.getReduceWarps()};
    if (config.persistent && !config.resident)
      return emitPassError(func, getArgument())
                 << "persistent needs resident (the next rows are prefetched "
                    "into registers)",
             failure();
    for (auto [name, warps] : {std::pair{"num_warps", config.numWarps},
                               std::pair{"reduce_warps", config.reduceWarps}})
      if (failed(checkConfigRange(func, getArgument(), name, warps, 1,
                                  kMaxThreadsPerBlock / kThreadsPerWarp)))
        return failure();
    if (std::string why = config.layout().whyInvalid(); !why.empty())
      return emitPassError(func, getArgument()) << why, failure();
    if (std::string why = config.reduceLayout().whyInvalid(); !why.empty())
      return emitPassError(func, getArgument())
                 << "the reduction kernel's " << why,
             failure();
    if (config.reduceLayout().threadsPerRow() > kThreadsPerWarp)
      return emitPassError(func, getArgument())
                 << "the reduction kernel needs at most " << kThreadsPerWarp
                 << " threads per row (reduce_rows >= " << config.reduceWarps
                 << ")",
             failure();
    return config;
  }

  /// Checks that every function argument is an operand of `op` and every
  /// operand a function argument.
  LogicalResult checkOperandsAreArguments(func::FuncOp func, Operation *op) {
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &func.getBody().front())
        return op->emitOpError(
            "expects every operand to be an argument of the enclosing "
            "function");
    }
    for (BlockArgument arg : func.getArguments())
      if (arg.use_empty())
        return func.emitError() << "argument #" << arg.getArgNumber()
                                << " is not used by the layernorm op";
    return success();
  }

  LogicalResult checkRank2(Operation *op, MemRefType x) {
    if (x.getRank() != 2)
      return op->emitOpError()
             << getArgument() << " expects x of rank 2 (rows x cols), got rank "
             << x.getRank() << "; collapse the leading dimensions first";
    return success();
  }

  RowsKernel kernelContext(ImplicitLocOpBuilder &b, const RowsLayout &layout,
                           Value x) {
    Value cols = memref::DimOp::create(b, x, 1);
    return RowsKernel{b, layout, memref::DimOp::create(b, x, 0), cols,
                      colsAsF32(b, cols)};
  }

  LogicalResult tileForward(func::FuncOp func, LayerNormOp op,
                            SmallVectorImpl<NamedAttribute> &kernels) {
    FailureOr<RowsConfig> config = configFor(func);
    if (failed(config) || failed(checkRank2(op, op.getX().getType())))
      return failure();
    SmallVector<KernelParam> params = {
        {"x", op.getX().getType(), op.getX()},
        {"weight", op.getWeight().getType(), op.getWeight()},
        {"bias", op.getBias().getType(), op.getBias()},
        {"y", op.getY().getType(), op.getY()}};
    if (op.getMean()) {
      params.push_back({"mean", op.getMean().getType(), op.getMean()});
      params.push_back({"rstd", op.getRstd().getType(), op.getRstd()});
    }
    if (Value residual = op.getResidual()) {
      params.push_back({"residual", residual.getType(), residual});
      params.push_back({"sum", op.getSum().getType(), op.getSum()});
    }
    // Last, so that the memrefs' parameters keep their positions.
    params.push_back({"eps", op.getEps().getType(), op.getEps()});
    ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
    gpu::GPUFuncOp kernel = createRowsKernel(
        b, func, func.getName(), KernelOp::LayerNormFwd,
        op.getX().getType().getElementType(), config->layout(),
        config->resident, config->persistent,
        config->persistent ? GridDim::PersistentRowTiles : GridDim::RowTiles,
        params, kernels);
    IRMapping mapping;
    mapParams(mapping, kernel, params);
    auto kernelOp = cast<LayerNormOp>(b.clone(*op, mapping));
    RowsKernel k = kernelContext(b, config->layout(), kernelOp.getX());
    buildForward(k, kernelOp, *config);
    gpu::ReturnOp::create(b);
    kernelOp.erase();
    return success();
  }

  LogicalResult tileBackward(func::FuncOp func, LayerNormGradOp op,
                             SmallVectorImpl<NamedAttribute> &kernels) {
    FailureOr<RowsConfig> config = configFor(func);
    if (failed(config) || failed(checkRank2(op, op.getX().getType())))
      return failure();
    MLIRContext *context = func.getContext();
    Type partialType =
        MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                        Float32Type::get(context));
    SmallVector<KernelParam> params = {
        {"x", op.getX().getType(), op.getX()},
        {"weight", op.getWeight().getType(), op.getWeight()},
        {"mean", op.getMean().getType(), op.getMean()},
        {"rstd", op.getRstd().getType(), op.getRstd()},
        {"dy", op.getDy().getType(), op.getDy()},
        {"dx", op.getDx().getType(), op.getDx()},
        {"partial_dweight", partialType},
        {"partial_dbias", partialType}};
    // After the partial sums, which the builder finds by position.
    if (Value dresidual = op.getDresidual())
      params.push_back({"dresidual", dresidual.getType(), dresidual});
    ImplicitLocOpBuilder b(func.getLoc(), context);
    std::string paramsName = (func.getName() + "_params").str();
    Type element = op.getX().getType().getElementType();
    gpu::GPUFuncOp kernel = createRowsKernel(
        b, func, func.getName(), KernelOp::LayerNormBwd, element,
        config->layout(), config->resident, /*persistent=*/false,
        GridDim::PersistentRowTiles, params, kernels,
        KernelCompanions{/*deltaKernel=*/"", /*dkdvKernel=*/"", paramsName});
    IRMapping mapping;
    mapParams(mapping, kernel, params);
    auto kernelOp = cast<LayerNormGradOp>(b.clone(*op, mapping));
    RowsKernel k = kernelContext(b, config->layout(), kernelOp.getX());
    PartialRows partial{
        kernel.getArgument(6), kernel.getArgument(7),
        arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                              index(k.b, config->rows))};
    buildBackward(k, kernelOp, config->resident, partial);
    gpu::ReturnOp::create(b);
    kernelOp.erase();

    SmallVector<KernelParam> reduceParams = {
        {"partial_dweight", partialType},
        {"partial_dbias", partialType},
        {"dweight", op.getDweight().getType(), op.getDweight()},
        {"dbias", op.getDbias().getType(), op.getDbias()}};
    gpu::GPUFuncOp reduce = createRowsKernel(
        b, func, paramsName, KernelOp::LayerNormBwdParams, element,
        config->reduceLayout(), /*resident=*/std::nullopt,
        /*persistent=*/false, GridDim::ColumnTiles, reduceParams, kernels);
    RowsKernel r{b, config->reduceLayout(), Value(), Value(), Value()};
    buildParamsReduction(r, reduce.getArgument(0), reduce.getArgument(1),
                         reduce.getArgument(2), reduce.getArgument(3));
    gpu::ReturnOp::create(b);
    return success();
  }

  void runOnOperation() override {
    if (failed(tileKernelFunctions(
            getOperation(),
            [](Operation *op) { return isa<LayerNormOp, LayerNormGradOp>(op); },
            [&](func::FuncOp func, Operation *op,
                SmallVectorImpl<NamedAttribute> &kernels) -> LogicalResult {
              if (failed(checkOperandsAreArguments(func, op)))
                return failure();
              if (auto forward = dyn_cast<LayerNormOp>(op))
                return tileForward(func, forward, kernels);
              return tileBackward(func, cast<LayerNormGradOp>(op), kernels);
            })))
      signalPassFailure();
  }
};
} // namespace
