//===- ExpandAttentionVariants.cpp - Named variants to regions ------------===//
//
// The named variants of fa.attention and fa.attention_grad are sugar over
// the mask and score regions: this pass writes each as the region code it
// means, so that the compiler has one path (the regions) for all of them.
// A variant's operands become captures, read by the regions as trailing
// block arguments, so that they stay run-time values (kernel parameters).
//
// The conditions are plain arith comparisons of q_idx and kv_idx against
// captured bounds, the form the tile classifier (issue 20 item 3) analyses:
//   causal (top-left)     kv_idx <= q_idx
//   causal_bottom_right   kv_idx <= q_idx + off
//   window(left, right)   q_idx + off - left <= kv_idx <= q_idx + off + right
//   document(ids)         ids[b, q_idx] == ids[b, kv_idx]
//   softcap(c)            c * tanh(s / c)
//   alibi(slopes)         s - slopes[h] * |q_idx + off - kv_idx|
// with off = seq_kv - seq_q (FlashAttention's bottom-right alignment).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAEXPANDATTENTIONVARIANTS
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Where each variant's value sits in the op's new capture list.
struct CaptureSlots {
  std::optional<unsigned> offset, left, right, docIds, softcap, slopes;
};

/// A region's arguments: the element's coordinates, then the captures.
struct ElementArgs {
  Value batch, head, qIdx, kvIdx;
  ValueRange captures;

  Value capture(std::optional<unsigned> slot) const { return captures[*slot]; }
};

/// The new block of `region`: `leading` arguments then one per capture.
Block *createRegionBlock(ImplicitLocOpBuilder &b, Region &region,
                         ArrayRef<Type> leading, ValueRange captures) {
  SmallVector<Type> types(leading);
  llvm::append_range(types, captures.getTypes());
  SmallVector<Location> locs(types.size(), b.getLoc());
  return b.createBlock(&region, region.end(), types, locs);
}

ElementArgs elementArgs(Block *block, unsigned first) {
  ValueRange args = block->getArguments().drop_front(first);
  return {args[0], args[1], args[2], args[3], args.drop_front(4)};
}

/// `q_idx + off`: the diagonal key of a query row under bottom-right
/// alignment.
Value diagonal(ImplicitLocOpBuilder &b, const ElementArgs &e,
               const CaptureSlots &slots) {
  return arith::AddIOp::create(b, e.qIdx, e.capture(slots.offset));
}

Value lessOrEqual(ImplicitLocOpBuilder &b, Value lhs, Value rhs) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::sle, lhs, rhs);
}

/// The keep bit of the mask variants present, `and`-ed.
Value buildKeep(ImplicitLocOpBuilder &b, const ElementArgs &e,
                const CaptureSlots &slots, bool causal,
                bool causalBottomRight) {
  SmallVector<Value> conditions;
  if (causal)
    conditions.push_back(lessOrEqual(b, e.kvIdx, e.qIdx));
  if (causalBottomRight)
    conditions.push_back(lessOrEqual(b, e.kvIdx, diagonal(b, e, slots)));
  if (slots.left) {
    Value diag = diagonal(b, e, slots);
    Value first = arith::SubIOp::create(b, diag, e.capture(slots.left));
    Value last = arith::AddIOp::create(b, diag, e.capture(slots.right));
    conditions.push_back(lessOrEqual(b, first, e.kvIdx));
    conditions.push_back(lessOrEqual(b, e.kvIdx, last));
  }
  if (slots.docIds) {
    Value ids = e.capture(slots.docIds);
    Value queryDoc = memref::LoadOp::create(b, ids, {e.batch, e.qIdx});
    Value keyDoc = memref::LoadOp::create(b, ids, {e.batch, e.kvIdx});
    conditions.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, queryDoc, keyDoc));
  }
  Value keep = conditions.front();
  for (Value condition : ArrayRef(conditions).drop_front())
    keep = arith::AndIOp::create(b, keep, condition);
  return keep;
}

/// The score after the score variants present: softcap, then ALiBi.
Value buildScore(ImplicitLocOpBuilder &b, Value score, const ElementArgs &e,
                 const CaptureSlots &slots) {
  if (slots.softcap) {
    Value cap = e.capture(slots.softcap);
    Value scaled = arith::DivFOp::create(b, score, cap);
    score = arith::MulFOp::create(b, cap, math::TanhOp::create(b, scaled));
  }
  if (slots.slopes) {
    Value slope =
        memref::LoadOp::create(b, e.capture(slots.slopes), ValueRange{e.head});
    Value distance = arith::SubIOp::create(b, diagonal(b, e, slots), e.kvIdx);
    Value asInt = arith::IndexCastOp::create(b, b.getI64Type(), distance);
    Value asFloat = arith::SIToFPOp::create(b, b.getF32Type(), asInt);
    Value bias =
        arith::MulFOp::create(b, slope, math::AbsFOp::create(b, asFloat));
    score = arith::SubFOp::create(b, score, bias);
  }
  return score;
}

/// `seq_kv - seq_q`, a constant when both lengths are static.
Value bottomRightOffset(ImplicitLocOpBuilder &b, Value query, Value key) {
  int64_t seqQ = cast<MemRefType>(query.getType()).getDimSize(2);
  int64_t seqKv = cast<MemRefType>(key.getType()).getDimSize(2);
  if (!ShapedType::isDynamic(seqQ) && !ShapedType::isDynamic(seqKv))
    return arith::ConstantIndexOp::create(b, seqKv - seqQ);
  auto length = [&](Value tensor, int64_t size) -> Value {
    if (ShapedType::isDynamic(size))
      return memref::DimOp::create(b, tensor, 2);
    return arith::ConstantIndexOp::create(b, size);
  };
  // Separate statements: the order of the ops must not be the compiler's.
  Value keyLength = length(key, seqKv);
  Value queryLength = length(query, seqQ);
  return arith::SubIOp::create(b, keyLength, queryLength);
}

/// The manifest's name of the named variants of `op` (kVariantAttr), in a
/// fixed order, '+'-joined: "window+softcap".
std::string variantName(bool causalBottomRight, bool window, bool document,
                        bool softcap, bool alibi, bool sinks, bool dropout) {
  std::string name;
  for (auto [present, word] :
       {std::pair{causalBottomRight, "causal_bottom_right"},
        {window, "window"},
        {document, "document"},
        {softcap, "softcap"},
        {alibi, "alibi"},
        {sinks, "sinks"},
        {dropout, "dropout"}})
    if (present)
      name += (name.empty() ? "" : "+") + std::string(word);
  return name;
}

/// Names the enclosing function's variant and the parameters the variant's
/// operands become (when they are its arguments), for the manifest: the
/// runtime binds them by these names. A name the user gave stays.
template <typename OpT> void nameVariant(OpT op) {
  auto func = dyn_cast<func::FuncOp>(op->getParentOp());
  if (!func)
    return;
  std::string variant = variantName(
      op.getCausalBottomRight(), bool(op.getWindowLeft()), bool(op.getDocIds()),
      bool(op.getSoftcap()), bool(op.getAlibiSlopes()), bool(op.getSinks()),
      bool(op.getDropoutP()));
  if (!variant.empty() && !func->hasAttr(kVariantAttr))
    func->setAttr(kVariantAttr, StringAttr::get(op.getContext(), variant));
  std::pair<Value, StringRef> params[] = {
      {op.getWindowLeft(), "window_left"},
      {op.getWindowRight(), "window_right"},
      {op.getDocIds(), "doc_ids"},
      {op.getSoftcap(), "softcap"},
      {op.getAlibiSlopes(), "alibi_slopes"}};
  for (auto [value, name] : params) {
    auto arg = dyn_cast_or_null<BlockArgument>(value);
    if (!arg || arg.getOwner() != &func.getBody().front() ||
        func.getArgAttr(arg.getArgNumber(), kParamNameAttr))
      continue;
    func.setArgAttr(arg.getArgNumber(), kParamNameAttr,
                    StringAttr::get(op.getContext(), name));
  }
}

/// Rewrites the named variants of `op` into its regions.
template <typename OpT> void expandVariants(OpT op, bool expandCausal) {
  bool causal = expandCausal && op.getCausal();
  bool causalBottomRight = op.getCausalBottomRight();
  bool hasMask =
      causal || causalBottomRight || op.getWindowLeft() || op.getDocIds();
  bool hasScore = op.getSoftcap() || op.getAlibiSlopes();
  // Sinks and dropout are not regions, but name the kernels' variant too.
  nameVariant(op);
  if (!hasMask && !hasScore)
    return;

  if (op.getDocIds())
    op->setAttr(kSortedDocumentIdsAttr, UnitAttr::get(op.getContext()));
  ImplicitLocOpBuilder b(op.getLoc(), op);
  SmallVector<Value> captures(op.getCaptures());
  unsigned numOld = captures.size();
  CaptureSlots slots;
  auto capture = [&](Value value) -> std::optional<unsigned> {
    if (!value)
      return std::nullopt;
    captures.push_back(value);
    return captures.size() - 1;
  };
  if (causalBottomRight || op.getWindowLeft() || op.getAlibiSlopes())
    slots.offset = capture(bottomRightOffset(b, op.getQuery(), op.getKey()));
  slots.left = capture(op.getWindowLeft());
  slots.right = capture(op.getWindowRight());
  slots.docIds = capture(op.getDocIds());
  slots.softcap = capture(op.getSoftcap());
  slots.slopes = capture(op.getAlibiSlopes());

  // A user's region of the other kind reads every capture too.
  ValueRange added = ValueRange(captures).drop_front(numOld);
  for (Region *region : {&op.getMask(), &op.getScore()})
    if (!region->empty())
      for (Value value : added)
        region->front().addArgument(value.getType(), op.getLoc());

  OpBuilder::InsertionGuard guard(b);
  Type index = b.getIndexType(), f32 = b.getF32Type();
  SmallVector<Type> indices(4, index);
  if (hasMask) {
    Block *block = createRegionBlock(b, op.getMask(), indices, captures);
    ElementArgs e = elementArgs(block, 0);
    YieldOp::create(b, buildKeep(b, e, slots, causal, causalBottomRight));
  }
  if (hasScore) {
    SmallVector<Type> leading = {f32};
    leading.append(indices);
    Block *block = createRegionBlock(b, op.getScore(), leading, captures);
    ElementArgs e = elementArgs(block, 1);
    YieldOp::create(b, buildScore(b, block->getArgument(0), e, slots));
  }

  // Each range is taken after the previous edit: a MutableOperandRange
  // holds its segment's position, which the edits before it move.
  op.getCapturesMutable().assign(captures);
  op.getWindowLeftMutable().clear();
  op.getWindowRightMutable().clear();
  op.getDocIdsMutable().clear();
  op.getSoftcapMutable().clear();
  op.getAlibiSlopesMutable().clear();
  op.setCausalBottomRight(false);
  if (causal)
    op.setCausal(false);
}

struct ExpandAttentionVariantsPass
    : public fa::impl::FAExpandAttentionVariantsBase<
          ExpandAttentionVariantsPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      if (auto forward = dyn_cast<AttentionOp>(op))
        expandVariants(forward, expandCausal);
      else if (auto backward = dyn_cast<AttentionGradOp>(op))
        expandVariants(backward, expandCausal);
    });
  }
};
} // namespace
