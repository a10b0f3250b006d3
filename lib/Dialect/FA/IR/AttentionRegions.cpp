//===- AttentionRegions.cpp - Mask/score regions and named variants -------===//
//
// The rules of fa.attention's and fa.attention_grad's mask and score
// regions, their captures, the named variants (window, document, softcap,
// ALiBi, bottom-right causal), sinks and dropout. They run as region verifiers,
// after the ops nested in the regions verified, so every nested op may be
// trusted to be well formed here. The forward and the backward share every
// rule: the backward must be able to recompute exactly what the forward
// computed.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Block arguments every mask region starts with; a score region has the
/// score (f32) before them.
constexpr int64_t kIndexArgs = 4;
constexpr const char *kIndexArgNames[] = {"batch", "head", "q_idx", "kv_idx"};

std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// What the two ops share, read once so that every rule is written once.
struct VariantView {
  Operation *op;
  MemRefType query, key;
  Value sinks, windowLeft, windowRight, docIds, softcap, alibiSlopes;
  Value dropoutP, dropoutSeed, dropoutOffset;
  OperandRange captures;
  bool causal, causalBottomRight;
  Region &mask, &score;

  bool hasMaskVariant() const {
    return causalBottomRight || windowLeft || windowRight || docIds;
  }
  bool hasScoreVariant() const { return softcap || alibiSlopes; }
  bool hasAny() const {
    return hasMaskVariant() || hasScoreVariant() || sinks || dropoutP ||
           !mask.empty() || !score.empty() || !captures.empty();
  }
};

template <typename OpT> VariantView viewOf(OpT op) {
  return VariantView{op.getOperation(),
                     op.getQuery().getType(),
                     op.getKey().getType(),
                     op.getSinks(),
                     op.getWindowLeft(),
                     op.getWindowRight(),
                     op.getDocIds(),
                     op.getSoftcap(),
                     op.getAlibiSlopes(),
                     op.getDropoutP(),
                     op.getDropoutSeed(),
                     op.getDropoutOffset(),
                     op.getCaptures(),
                     op.getCausal(),
                     op.getCausalBottomRight(),
                     op.getMask(),
                     op.getScore()};
}

/// Checks that a per-head table (`sinks`, `dsinks`, ALiBi slopes) has one
/// value per query head.
LogicalResult verifyPerHead(Operation *op, StringRef name, Value table,
                            MemRefType query) {
  int64_t length = cast<MemRefType>(table.getType()).getDimSize(0);
  int64_t heads = query.getDimSize(1);
  if (!dimsCompatible(length, heads))
    return op->emitOpError() << "expects " << name << " to hold one value per "
                             << "query head (" << formatDim(heads) << "), got "
                             << formatDim(length);
  return success();
}

/// Document ids are indexed `[batch, position]` by both the query and the
/// key position, so the two sequences must be the same tokens.
LogicalResult verifyDocIds(const VariantView &v) {
  auto ids = cast<MemRefType>(v.docIds.getType());
  int64_t seqQ = v.query.getDimSize(2), seqKv = v.key.getDimSize(2);
  if (!dimsCompatible(seqQ, seqKv))
    return v.op->emitOpError()
           << "expects document masking to have seq_q (" << formatDim(seqQ)
           << ") equal to seq_kv (" << formatDim(seqKv)
           << "): one id per packed token serves both";
  int64_t expected[] = {v.query.getDimSize(0),
                        ShapedType::isDynamic(seqQ) ? seqKv : seqQ};
  const char *names[] = {"batch", "seq"};
  for (int64_t dim : {0, 1})
    if (!dimsCompatible(ids.getDimSize(dim), expected[dim]))
      return v.op->emitOpError()
             << "expects document ids dimension " << dim << " ("
             << formatDim(ids.getDimSize(dim)) << ") to equal the "
             << names[dim] << " (" << formatDim(expected[dim]) << ")";
  return success();
}

/// Rules on the named variants' operands that constants can decide.
LogicalResult verifyVariantValues(const VariantView &v) {
  if (static_cast<bool>(v.windowLeft) != static_cast<bool>(v.windowRight))
    return v.op->emitOpError("expects window left and right given together");
  for (auto [name, value] : {std::pair{"window left", v.windowLeft},
                             std::pair{"window right", v.windowRight}}) {
    APInt bound;
    if (value && matchPattern(value, m_ConstantInt(&bound)) &&
        bound.isNegative())
      return v.op->emitOpError()
             << "expects " << name << " to be non-negative, got "
             << bound.getSExtValue();
  }
  if (static_cast<bool>(v.dropoutP) != static_cast<bool>(v.dropoutSeed) ||
      static_cast<bool>(v.dropoutP) != static_cast<bool>(v.dropoutOffset))
    return v.op->emitOpError(
        "expects dropout probability, seed and offset given together");
  FloatAttr probability;
  if (v.dropoutP && matchPattern(v.dropoutP, m_Constant(&probability))) {
    double value = probability.getValueAsDouble();
    if (!(value >= 0.0 && value < 1.0))
      return v.op->emitOpError()
             << "expects the dropout probability in [0, 1), got " << value;
  }
  FloatAttr cap;
  if (v.softcap && matchPattern(v.softcap, m_Constant(&cap))) {
    double value = cap.getValueAsDouble();
    if (!(value > 0.0) || !std::isfinite(value))
      return v.op->emitOpError()
             << "expects softcap to be positive and finite, got " << value;
  }
  if (v.causal && v.causalBottomRight)
    return v.op->emitOpError("expects at most one of causal (top-left) and "
                             "causal_bottom_right");
  return success();
}

/// A region must not change memory or do anything the compiler cannot see:
/// it is evaluated any number of times, in any order, for any element (and
/// again by the backward). Reading a captured table is allowed.
LogicalResult verifyPure(Operation *op, StringRef regionName, Region &region) {
  WalkResult result = region.walk([&](Operation *nested) {
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
        getEffectsRecursively(nested);
    if (!effects) {
      nested->emitOpError()
          << "has unknown memory effects, not allowed in "
          << "the " << regionName << " region of " << op->getName();
      return WalkResult::interrupt();
    }
    for (const MemoryEffects::EffectInstance &effect : *effects)
      if (!isa<MemoryEffects::Read>(effect.getEffect())) {
        nested->emitOpError()
            << "writes, allocates or frees memory, not allowed in the "
            << regionName << " region of " << op->getName()
            << " (regions may only read captured memrefs)";
        return WalkResult::interrupt();
      }
    return WalkResult::skip();
  });
  return failure(result.wasInterrupted());
}

/// Checks a region's block arguments (`leading` then one per capture) and
/// that it yields exactly one value of type `yielded`.
LogicalResult verifyRegionSignature(const VariantView &v, StringRef name,
                                    Region &region, ArrayRef<Type> leading,
                                    ArrayRef<StringRef> leadingNames,
                                    Type yielded) {
  Block &block = region.front();
  size_t expected = leading.size() + v.captures.size();
  if (block.getNumArguments() != expected)
    return v.op->emitOpError()
           << "expects the " << name << " region to have " << expected
           << " block arguments (" << leading.size() << " then one per "
           << "capture), got " << block.getNumArguments();
  for (auto [index, arg] : llvm::enumerate(block.getArguments())) {
    bool isCapture = index >= leading.size();
    Type type = isCapture ? v.captures[index - leading.size()].getType()
                          : leading[index];
    if (arg.getType() == type)
      continue;
    InFlightDiagnostic diag = v.op->emitOpError()
                              << "expects " << name << " region argument #"
                              << index << " (";
    if (isCapture)
      diag << "capture #" << index - leading.size();
    else
      diag << leadingNames[index];
    return diag << ") to have type " << type << ", got " << arg.getType();
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return v.op->emitOpError()
           << "expects the " << name << " region to end in fa.yield";
  if (yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != yielded)
    return yield.emitOpError()
           << "expects the " << name << " region to yield one " << yielded
           << ", got " << yield.getValues().size() << " value(s) of type(s) ("
           << yield.getValues().getTypes() << ")";
  return verifyPure(v.op, name, region);
}

LogicalResult verifyRegions(const VariantView &v) {
  if (v.hasMaskVariant() && !v.mask.empty())
    return v.op->emitOpError("expects either named mask variants "
                             "(causal_bottom_right, window, document) or a "
                             "mask region, not both");
  if (v.hasScoreVariant() && !v.score.empty())
    return v.op->emitOpError("expects either named score variants (softcap, "
                             "alibi) or a score region, not both");
  if (!v.captures.empty() && v.mask.empty() && v.score.empty())
    return v.op->emitOpError("expects captures only with a mask or score "
                             "region to read them");
  Builder b(v.op->getContext());
  Type index = b.getIndexType(), f32 = b.getF32Type();
  SmallVector<Type> maskArgs(kIndexArgs, index);
  SmallVector<StringRef> names(std::begin(kIndexArgNames),
                               std::end(kIndexArgNames));
  if (!v.mask.empty() &&
      failed(verifyRegionSignature(v, "mask", v.mask, maskArgs, names,
                                   b.getI1Type())))
    return failure();
  if (v.score.empty())
    return success();
  SmallVector<Type> scoreArgs = {f32};
  scoreArgs.append(maskArgs);
  names.insert(names.begin(), "score");
  return verifyRegionSignature(v, "score", v.score, scoreArgs, names, f32);
}

LogicalResult verifyVariants(const VariantView &v) {
  if (failed(verifyVariantValues(v)) || failed(verifyRegions(v)))
    return failure();
  if (v.sinks && failed(verifyPerHead(v.op, "sinks", v.sinks, v.query)))
    return failure();
  if (v.alibiSlopes &&
      failed(verifyPerHead(v.op, "alibi slopes", v.alibiSlopes, v.query)))
    return failure();
  if (v.docIds)
    return verifyDocIds(v);
  return success();
}
} // namespace

bool AttentionOp::hasVariants() { return viewOf(*this).hasAny(); }

LogicalResult AttentionOp::verifyRegions() {
  return ::verifyVariants(viewOf(*this));
}

bool AttentionGradOp::hasVariants() {
  return viewOf(*this).hasAny() || getDsinks();
}

LogicalResult AttentionGradOp::verifyRegions() {
  if (getDsinks()) {
    if (!getSinks())
      return emitOpError("expects dsinks only with the sinks they are the "
                         "gradient of");
    if (failed(
            verifyPerHead(*this, "dsinks", getDsinks(), getQuery().getType())))
      return failure();
  }
  return ::verifyVariants(viewOf(*this));
}
