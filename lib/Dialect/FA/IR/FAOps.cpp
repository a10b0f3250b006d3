//===- FAOps.cpp - Verifiers and helpers of the fa ops --------------------===//
//
// Every rule an op must satisfy is checked here with a diagnostic that names
// the operand and states the rule; the kernels downstream may then assume
// them. Dynamic dimensions are accepted wherever a rule cannot be decided
// statically; the runtime re-checks those at launch.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

ArrayRef<int64_t> mlir::fa::getSupportedHeadDims() {
  static const int64_t dims[] = {32, 64, 96, 128, 256};
  return dims;
}

std::string mlir::fa::RowsLayout::whyInvalid() const {
  auto str = [](int64_t v) { return std::to_string(v); };
  if (rows < 1 || threads < kThreadsPerWarp || threads % kThreadsPerWarp != 0)
    return "needs rows >= 1 and a whole number of warps, got rows " +
           str(rows) + " and " + str(threads) + " threads";
  if (threads > kMaxThreadsPerBlock)
    return "needs at most " + str(kMaxThreadsPerBlock) +
           " threads (a CUDA block's limit), got " + str(threads);
  if (threads % rows != 0 || !llvm::isPowerOf2_64(threads / rows))
    return "rows (" + str(rows) + ") must divide the " + str(threads) +
           " threads into a power-of-two number of threads per row";
  if (cols < 1 || cols % (kRowChunk * threadsPerRow()) != 0)
    return "block_cols (" + str(cols) + ") must be a multiple of " +
           str(kRowChunk * threadsPerRow()) + " (" + str(kRowChunk) +
           " columns for each of the " + str(threadsPerRow()) +
           " threads of a row)";
  // Each thread's share is unrolled in registers: beyond the limit the
  // compile time grew without bound and the values would spill anyway.
  if (valuesPerThread() > kMaxRowValuesPerThread)
    return "block_cols (" + str(cols) + ") gives each of the " +
           str(threadsPerRow()) + " threads of a row " +
           str(valuesPerThread()) + " values to hold, more than " +
           str(kMaxRowValuesPerThread) +
           " (use more warps, or a shorter block_cols with resident = false)";
  // Per-row and per-column vectors are both 1-D; their sizes tell them apart.
  if (cols == rows)
    return "block_cols must differ from rows (both " + str(rows) + ")";
  return "";
}

namespace {
/// Names of the four dimensions of an attention tensor, for diagnostics.
constexpr const char *kAttentionDimNames[] = {"batch", "heads", "seq",
                                              "head_dim"};

std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that `actual` has the shape `expected` (dimension by dimension,
/// dynamic sizes matching anything) and the element type of `expected`.
LogicalResult verifySameShapeAndType(Operation *op, StringRef actualName,
                                     MemRefType actual, StringRef expectedName,
                                     MemRefType expected) {
  if (actual.getElementType() != expected.getElementType())
    return op->emitOpError()
           << "expects " << actualName << " element type "
           << actual.getElementType() << " to equal " << expectedName
           << " element type " << expected.getElementType();
  if (actual.getRank() != expected.getRank())
    return op->emitOpError()
           << "expects " << actualName << " rank " << actual.getRank()
           << " to equal " << expectedName << " rank " << expected.getRank();
  for (auto [index, dims] : llvm::enumerate(
           llvm::zip_equal(actual.getShape(), expected.getShape()))) {
    auto [actualDim, expectedDim] = dims;
    if (!dimsCompatible(actualDim, expectedDim))
      return op->emitOpError()
             << "expects " << actualName << " dimension " << index << " ("
             << formatDim(actualDim) << ") to equal " << expectedName
             << " dimension " << index << " (" << formatDim(expectedDim) << ")";
  }
  return success();
}

/// Checks that a per-row statistics buffer has the shape `rowShape`.
LogicalResult verifyRowStats(Operation *op, StringRef name, MemRefType stats,
                             ArrayRef<int64_t> rowShape, StringRef rowsOf) {
  if (stats.getRank() != static_cast<int64_t>(rowShape.size()))
    return op->emitOpError() << "expects " << name << " to have rank "
                             << rowShape.size() << " (one value per row of "
                             << rowsOf << "), got rank " << stats.getRank();
  for (auto [index, dims] :
       llvm::enumerate(llvm::zip_equal(stats.getShape(), rowShape))) {
    auto [statsDim, rowDim] = dims;
    if (!dimsCompatible(statsDim, rowDim))
      return op->emitOpError()
             << "expects " << name << " dimension " << index << " ("
             << formatDim(statsDim) << ") to equal " << rowsOf << " dimension "
             << index << " (" << formatDim(rowDim) << ")";
  }
  return success();
}

LogicalResult verifyPositiveFinite(Operation *op, StringRef attrName,
                                   float value) {
  if (!(value > 0.0f) || !std::isfinite(value))
    return op->emitOpError() << "expects " << attrName
                             << " to be positive and finite, got " << value;
  return success();
}

/// Whether `type` is a layout the attention kernels read in place: the
/// identity, or strided with a static innermost stride of 1 (the other
/// strides and the offset static or dynamic: a view of a larger buffer, e.g.
/// one head of a fused [batch, seq, 3 x heads x head_dim] projection).
bool isInnerContiguousStrided(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  auto strided = dyn_cast<StridedLayoutAttr>(type.getLayout());
  return strided && !strided.getStrides().empty() &&
         strided.getStrides().back() == 1;
}

/// Rules every fa op shares: buffers are contiguous row-major (the kernels
/// index them that way) in the default memory space (the device memory the
/// runtime passes; a buffer in another space made a kernel parameter of that
/// space, which the manifest cannot describe), and no stray attribute rides
/// along. A misspelt `causl` in the generic form would otherwise be silently
/// ignored; dialect-prefixed attributes (`fa.tuning = ...`) remain allowed.
/// The attention tensors (`strided`: their operand numbers) may instead be
/// strided views with a unit innermost stride (isInnerContiguousStrided).
LogicalResult verifyCommonRules(Operation *op,
                                ArrayRef<unsigned> strided = {}) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    if (llvm::is_contained(strided, operand.getOperandNumber())) {
      if (!isInnerContiguousStrided(type))
        return op->emitOpError()
               << "expects operand #" << operand.getOperandNumber()
               << " to have the identity layout or a strided layout with "
                  "innermost stride 1 (e.g. strided<[?, ?, ?, 1], offset: "
                  "?>), got "
               << type;
    } else if (!type.getLayout().isIdentity())
      return op->emitOpError()
             << "expects operand #" << operand.getOperandNumber()
             << " to have the identity (contiguous row-major) layout, got "
             << type;
    if (type.getMemorySpace())
      return op->emitOpError()
             << "expects operand #" << operand.getOperandNumber()
             << " in the default memory space (device memory), got " << type;
  }
  for (NamedAttribute attr : op->getDiscardableAttrs())
    if (!attr.getName().strref().contains('.'))
      return op->emitOpError() << "does not understand attribute '"
                               << attr.getName().strref() << "'";
  return success();
}

/// Checks that no static dimension of the attention tensor `type` is 0: the
/// kernels divide by the head counts, and a launch grid cannot be empty.
LogicalResult verifyNonEmptyAttentionDims(Operation *op, StringRef name,
                                          MemRefType type) {
  for (auto [index, dim] : llvm::enumerate(type.getShape()))
    if (dim == 0)
      return op->emitOpError()
             << "expects " << name << " " << kAttentionDimNames[index]
             << " to be at least 1, got 0";
  return success();
}

/// The rules shared by the forward and backward attention ops on q, k, v.
LogicalResult verifyAttentionInputs(Operation *op, MemRefType query,
                                    MemRefType key, MemRefType value,
                                    std::optional<float> scale) {
  int64_t headDim = query.getDimSize(3);
  if (ShapedType::isDynamic(headDim))
    return op->emitOpError("expects a static query head_dim");
  if (!llvm::is_contained(getSupportedHeadDims(), headDim)) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "expects query head_dim to be one of ";
    llvm::interleaveComma(getSupportedHeadDims(), diag);
    return diag << ", got " << headDim;
  }

  for (auto [name, type] : {std::pair{"key", key}, std::pair{"value", value}})
    if (type.getElementType() != query.getElementType())
      return op->emitOpError()
             << "expects " << name << " element type " << type.getElementType()
             << " to equal query element type " << query.getElementType();

  if (failed(verifySameShapeAndType(op, "value", value, "key", key)) ||
      failed(verifyNonEmptyAttentionDims(op, "query", query)) ||
      failed(verifyNonEmptyAttentionDims(op, "key", key)))
    return failure();

  for (int64_t dim : {0, 3})
    if (!dimsCompatible(key.getDimSize(dim), query.getDimSize(dim)))
      return op->emitOpError() << "expects key " << kAttentionDimNames[dim]
                               << " " << formatDim(key.getDimSize(dim))
                               << " to equal query " << kAttentionDimNames[dim]
                               << " " << formatDim(query.getDimSize(dim));

  int64_t heads = query.getDimSize(1), kvHeads = key.getDimSize(1);
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      heads % kvHeads != 0)
    return op->emitOpError()
           << "expects query heads " << heads
           << " to be a multiple of key/value heads " << kvHeads;

  if (scale)
    return verifyPositiveFinite(op, "scale", *scale);
  return success();
}

std::optional<float> optionalScale(FloatAttr attr) {
  if (!attr)
    return std::nullopt;
  return static_cast<float>(attr.getValueAsDouble());
}

float scaleOrDefault(FloatAttr attr, int64_t headDim) {
  if (std::optional<float> scale = optionalScale(attr))
    return *scale;
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}

ArrayRef<int64_t> allButLast(MemRefType type) {
  return type.getShape().drop_back();
}
} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

float AttentionOp::getScaleOrDefault() {
  return scaleOrDefault(getScaleAttr(), getHeadDim());
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyCommonRules(*this, {getQueryMutable().getOperandNumber(),
                                       getKeyMutable().getOperandNumber(),
                                       getValueMutable().getOperandNumber(),
                                       getOutMutable().getOperandNumber()})))
    return failure();
  MemRefType query = getQuery().getType();
  if (failed(verifyAttentionInputs(*this, query, getKey().getType(),
                                   getValue().getType(),
                                   optionalScale(getScaleAttr()))))
    return failure();
  if (failed(verifySameShapeAndType(*this, "out", getOut().getType(), "query",
                                    query)))
    return failure();
  if (Value lse = getLse())
    return verifyRowStats(*this, "lse", cast<MemRefType>(lse.getType()),
                          allButLast(query), "query");
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

float AttentionGradOp::getScaleOrDefault() {
  return scaleOrDefault(getScaleAttr(), getQuery().getType().getDimSize(3));
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyCommonRules(*this, {getQueryMutable().getOperandNumber(),
                                       getKeyMutable().getOperandNumber(),
                                       getValueMutable().getOperandNumber(),
                                       getOutMutable().getOperandNumber(),
                                       getDoutMutable().getOperandNumber(),
                                       getDqueryMutable().getOperandNumber(),
                                       getDkeyMutable().getOperandNumber(),
                                       getDvalueMutable().getOperandNumber()})))
    return failure();
  MemRefType query = getQuery().getType(), key = getKey().getType();
  if (failed(verifyAttentionInputs(*this, query, key, getValue().getType(),
                                   optionalScale(getScaleAttr()))))
    return failure();
  std::pair<StringRef, MemRefType> likeQuery[] = {
      {"out", getOut().getType()},
      {"dout", getDout().getType()},
      {"dquery", getDquery().getType()}};
  for (auto [name, type] : likeQuery)
    if (failed(verifySameShapeAndType(*this, name, type, "query", query)))
      return failure();
  std::pair<StringRef, MemRefType> likeKey[] = {
      {"dkey", getDkey().getType()}, {"dvalue", getDvalue().getType()}};
  for (auto [name, type] : likeKey)
    if (failed(verifySameShapeAndType(*this, name, type, "key", key)))
      return failure();
  return verifyRowStats(*this, "lse", getLse().getType(), allButLast(query),
                        "query");
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

/// Checks a per-column parameter (weight, bias or their gradients) against the
/// rows it applies to: one value per column, in `allowedTypes`.
static LogicalResult verifyColumnParam(Operation *op, StringRef name,
                                       MemRefType param, MemRefType rows,
                                       ArrayRef<Type> allowedTypes) {
  if (!llvm::is_contained(allowedTypes, param.getElementType())) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "expects " << name << " element type to be ";
    llvm::interleave(allowedTypes, diag, " or ");
    return diag << ", got " << param.getElementType();
  }
  int64_t cols = rows.getShape().back();
  if (!dimsCompatible(param.getDimSize(0), cols))
    return op->emitOpError()
           << "expects " << name << " length " << formatDim(param.getDimSize(0))
           << " to equal the row length (last dimension of x) "
           << formatDim(cols);
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyCommonRules(*this)))
    return failure();
  MemRefType x = getX().getType();
  if (x.getRank() < 1)
    return emitOpError("expects x to have rank >= 1");
  for (auto [name, value] :
       {std::pair{"weight", getWeight()}, std::pair{"bias", getBias()}})
    if (failed(verifyColumnParam(*this, name, cast<MemRefType>(value.getType()),
                                 x, {x.getElementType()})))
      return failure();
  if (failed(verifySameShapeAndType(*this, "y", getY().getType(), "x", x)))
    return failure();
  if (static_cast<bool>(getResidual()) != static_cast<bool>(getSum()))
    return emitOpError("expects residual and sum to be given together (sum "
                       "receives x + residual, the rows normalised)");
  if (Value residual = getResidual())
    if (failed(verifySameShapeAndType(
            *this, "residual", cast<MemRefType>(residual.getType()), "x", x)) ||
        failed(verifySameShapeAndType(
            *this, "sum", cast<MemRefType>(getSum().getType()), "x", x)))
      return failure();
  if (static_cast<bool>(getMean()) != static_cast<bool>(getRstd()))
    return emitOpError("expects mean and rstd to be given together");
  if (Value mean = getMean()) {
    if (failed(verifyRowStats(*this, "mean", cast<MemRefType>(mean.getType()),
                              allButLast(x), "x")) ||
        failed(verifyRowStats(*this, "rstd",
                              cast<MemRefType>(getRstd().getType()),
                              allButLast(x), "x")))
      return failure();
  }
  // A run-time eps is the caller's to check (the runtime does); one known
  // here must already be usable.
  FloatAttr eps;
  if (matchPattern(getEps(), m_Constant(&eps)))
    return verifyPositiveFinite(*this, "eps", eps.getValue().convertToFloat());
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyCommonRules(*this)))
    return failure();
  MemRefType x = getX().getType();
  if (x.getRank() < 1)
    return emitOpError("expects x to have rank >= 1");
  if (failed(verifySameShapeAndType(*this, "dy", getDy().getType(), "x", x)) ||
      failed(verifySameShapeAndType(*this, "dx", getDx().getType(), "x", x)))
    return failure();
  if (Value dresidual = getDresidual())
    if (failed(verifySameShapeAndType(
            *this, "dresidual", cast<MemRefType>(dresidual.getType()), "x", x)))
      return failure();
  MemRefType weight = getWeight().getType();
  if (failed(
          verifyColumnParam(*this, "weight", weight, x, {x.getElementType()})))
    return failure();
  Type f32 = Float32Type::get(getContext());
  for (auto [name, value] :
       {std::pair{"dweight", getDweight()}, std::pair{"dbias", getDbias()}})
    if (failed(verifyColumnParam(
            *this, name, cast<MemRefType>(value.getType()), x,
            weight.getElementType() == f32
                ? SmallVector<Type>{f32}
                : SmallVector<Type>{weight.getElementType(), f32})))
      return failure();
  if (failed(verifyRowStats(*this, "mean", getMean().getType(), allButLast(x),
                            "x")))
    return failure();
  return verifyRowStats(*this, "rstd", getRstd().getType(), allButLast(x), "x");
}

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.cpp.inc"
