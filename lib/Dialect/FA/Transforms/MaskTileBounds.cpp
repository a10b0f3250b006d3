//===- MaskTileBounds.cpp - Which tiles a mask region keeps ---------------===//
//
// The keep bit is walked in negation normal form (not (a and b) is
// not a or not b, not (x < y) is x >= y, xor and select are written with
// and/or/not) down to atoms: comparisons of linear forms
// c_q*q_idx + c_kv*kv_idx + E, E free of q_idx and kv_idx (its ops are
// cloned at the builder). With l the loop's index (tile t holds
// l in [t*w, (t+1)*w)) and f the fixed one, every atom is d <= 0 with
// d = c_l*l + G(f), G(f) = c_f*f + E (slt is d + 1 <= 0, eq is d <= 0 and
// -d <= 0, ne is d + 1 <= 0 or -d + 1 <= 0), and over the block's range of
// f, G lies in [gMin, gMax]:
//   c_l = 0   every tile full when gMax <= 0, every tile visited when
//             gMin <= 0, else none;
//   c_l = 1   l <= -G(f): full t < floor((1 - gMax) / w),
//             visited t < floor(-gMin / w) + 1;
//   c_l = -1  l >= G(f): full t >= ceil(gMax / w),
//             visited t >= floor(gMin / w).
// An atom's two sets are exact. `and` intersects them: the full set stays
// exact; the visited set is exact when the atoms bound one linear form
// (causal, a non-empty window: the tile's values of kv_idx - q_idx are
// contiguous). `or` takes the hull of the visited sets and, of the full sets,
// their hull when they touch, else the longer (a subset of the union).
//
// Documents: with the caller's promise that the ids do not decrease along
// the sequence, ids[b, q_idx] == ids[b, kv_idx] keeps, for the fixed
// positions [f0, f1] (clamped into the table), exactly the loop positions
// whose ids lie in [ids[f0], ids[f1]]: [lowerBound(ids[f0]),
// upperBound(ids[f1])), two binary searches (scf.while) at run time; every
// one of them is kept by every fixed position only when ids[f0] == ids[f1].
//
// Any other condition is unknown: every tile visited, none full.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/MaskTileBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
using arith::CmpIPredicate;

/// Tile indices [begin, end), 0 <= begin <= end <= numTiles.
struct Interval {
  Value begin, end;
};

/// The tiles where a condition holds for every element (`full`, a subset of
/// the truly full tiles) and the tiles where it may hold for some element
/// (`visit`, a superset of the truly non-empty tiles).
struct TileSets {
  Interval full, visit;
};

/// `q*q_idx + kv*kv_idx + rest`, `rest` an index value built at the builder.
struct Linear {
  int64_t q = 0, kv = 0;
  Value rest;
};

/// `ids[batch, *]`, at the builder: the document id of each position.
struct DocumentTable {
  Value ids, batch;
};

/// Coefficients beyond this are not analysed (no overflow in the products).
constexpr int64_t kMaxCoefficient = int64_t(1) << 20;

class MaskTileBoundsBuilder {
public:
  MaskTileBoundsBuilder(ImplicitLocOpBuilder &b, Block &block,
                        MaskLoopDim loopDim, Value fixedBegin,
                        int64_t fixedExtent, int64_t width, Value numTiles,
                        Value batch, Value head, ValueRange captures,
                        bool documentIdsSorted)
      : b(b), loopDim(loopDim), fixedBegin(fixedBegin),
        fixedExtent(fixedExtent), width(width), numTiles(numTiles),
        documentIdsSorted(documentIdsSorted), qIdx(block.getArgument(2)),
        kvIdx(block.getArgument(3)) {
    mapping.map(block.getArgument(0), batch);
    mapping.map(block.getArgument(1), head);
    mapping.map(block.getArguments().drop_front(4), captures);
  }

  /// The tiles where `keep` (negated when `negated`) holds.
  TileSets keeps(Value keep, bool negated);

  /// `tiles` as the result, the full interval moved inside the visited one.
  MaskTileIntervals intervals(const TileSets &tiles);

private:
  // Index arithmetic at the builder, folded where the operands are constant.
  Value constant(int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
  Value add(Value lhs, Value rhs) {
    return b.createOrFold<arith::AddIOp>(lhs, rhs);
  }
  Value sub(Value lhs, Value rhs) {
    return b.createOrFold<arith::SubIOp>(lhs, rhs);
  }
  Value scale(Value value, int64_t factor) {
    return b.createOrFold<arith::MulIOp>(value, constant(factor));
  }
  Value min(Value lhs, Value rhs) {
    return b.createOrFold<arith::MinSIOp>(lhs, rhs);
  }
  Value max(Value lhs, Value rhs) {
    return b.createOrFold<arith::MaxSIOp>(lhs, rhs);
  }
  Value cmp(CmpIPredicate predicate, Value lhs, Value rhs) {
    return b.createOrFold<arith::CmpIOp>(predicate, lhs, rhs);
  }
  Value select(Value condition, Value ifTrue, Value ifFalse) {
    return b.createOrFold<arith::SelectOp>(condition, ifTrue, ifFalse);
  }
  Value floorDiv(Value value) {
    return b.createOrFold<arith::FloorDivSIOp>(value, constant(width));
  }
  Value ceilDiv(Value value) {
    return b.createOrFold<arith::CeilDivSIOp>(value, constant(width));
  }

  // Intervals.
  Value clamp(Value value) { return min(max(value, constant(0)), numTiles); }
  Interval interval(Value begin, Value end) {
    Value first = clamp(begin);
    return {first, max(clamp(end), first)};
  }
  Interval whole() { return {constant(0), numTiles}; }
  Interval empty() { return {constant(0), constant(0)}; }
  Interval wholeIf(Value condition) {
    return {constant(0), select(condition, numTiles, constant(0))};
  }
  Interval intersect(const Interval &x, const Interval &y) {
    Value begin = max(x.begin, y.begin);
    return {begin, max(min(x.end, y.end), begin)};
  }
  /// The smallest interval holding both (an empty one adds nothing).
  Interval hull(const Interval &x, const Interval &y);
  /// An interval inside the union: the hull when they touch, else the longer.
  Interval unionSubset(const Interval &x, const Interval &y);

  // Sets of tiles.
  TileSets unknown() { return {empty(), whole()}; }
  TileSets uniform(Value condition) {
    Interval tiles = wholeIf(condition);
    return {tiles, tiles};
  }
  TileSets conjunction(const TileSets &x, const TileSets &y) {
    return {intersect(x.full, y.full), intersect(x.visit, y.visit)};
  }
  TileSets disjunction(const TileSets &x, const TileSets &y) {
    return {unionSubset(x.full, y.full), hull(x.visit, y.visit)};
  }
  TileSets comparison(CmpIPredicate predicate, Value lhs, Value rhs);
  std::optional<DocumentTable> matchDocument(arith::CmpIOp op);
  TileSets sameDocument(const DocumentTable &table);
  Value searchTable(const DocumentTable &table, Value id, CmpIPredicate before);
  TileSets atMostZero(const Linear &d);

  // The region's values.
  bool dependsOnIndex(Value value);
  FailureOr<Value> cloneInvariant(Value value);
  FailureOr<Value> invariantIndex(Value value);
  std::optional<Linear> linearize(Value value);
  Linear combine(const Linear &x, const Linear &y, int64_t sign);
  std::optional<Linear> scaled(const Linear &x, int64_t factor);

  ImplicitLocOpBuilder &b;
  MaskLoopDim loopDim;
  Value fixedBegin;
  int64_t fixedExtent, width;
  Value numTiles;
  bool documentIdsSorted;
  Value qIdx, kvIdx;
  /// Region values free of q_idx and kv_idx to their clones at the builder.
  IRMapping mapping;
  DenseMap<Value, bool> depends;
  DenseMap<Value, std::optional<Linear>> linear;
  DenseMap<std::pair<Value, int>, TileSets> sets;
};

Interval MaskTileBoundsBuilder::hull(const Interval &x, const Interval &y) {
  Value xEmpty = cmp(CmpIPredicate::eq, x.begin, x.end);
  Value yEmpty = cmp(CmpIPredicate::eq, y.begin, y.end);
  Value begin =
      select(xEmpty, y.begin, select(yEmpty, x.begin, min(x.begin, y.begin)));
  Value end = select(xEmpty, y.end, select(yEmpty, x.end, max(x.end, y.end)));
  return {begin, end};
}

Interval MaskTileBoundsBuilder::unionSubset(const Interval &x,
                                            const Interval &y) {
  // Touching: x.begin <= y.end and y.begin <= x.end. An empty interval that
  // touches the other lies at its ends or inside it, so adds nothing.
  Value touch =
      b.createOrFold<arith::AndIOp>(cmp(CmpIPredicate::sle, x.begin, y.end),
                                    cmp(CmpIPredicate::sle, y.begin, x.end));
  Value xLonger =
      cmp(CmpIPredicate::sge, sub(x.end, x.begin), sub(y.end, y.begin));
  Value begin =
      select(touch, min(x.begin, y.begin), select(xLonger, x.begin, y.begin));
  Value end = select(touch, max(x.end, y.end), select(xLonger, x.end, y.end));
  return {begin, end};
}

bool MaskTileBoundsBuilder::dependsOnIndex(Value value) {
  if (value == qIdx || value == kvIdx)
    return true;
  Operation *op = value.getDefiningOp();
  if (!op)
    return false;
  auto known = depends.find(value);
  if (known != depends.end())
    return known->second;
  // An op with regions may read the indices inside: count it as dependent
  // (hence not analysed).
  bool result = op->getNumRegions() != 0 ||
                llvm::any_of(op->getOperands(), [&](Value operand) {
                  return dependsOnIndex(operand);
                });
  depends[value] = result;
  return result;
}

FailureOr<Value> MaskTileBoundsBuilder::cloneInvariant(Value value) {
  if (Value cloned = mapping.lookupOrNull(value))
    return cloned;
  Operation *op = value.getDefiningOp();
  // Regions are pure but for reads of captured memrefs (see fa.attention).
  if (!op || op->getNumRegions() != 0 ||
      !(isPure(op) || isa<memref::LoadOp>(op)))
    return failure();
  for (Value operand : op->getOperands())
    if (failed(cloneInvariant(operand)))
      return failure();
  Operation *copy = b.clone(*op, mapping);
  SmallVector<Value> folded;
  if (succeeded(b.tryFold(copy, folded)) && !folded.empty()) {
    mapping.map(op->getResults(), folded);
    copy->erase();
  }
  return mapping.lookup(value);
}

FailureOr<Value> MaskTileBoundsBuilder::invariantIndex(Value value) {
  FailureOr<Value> cloned = cloneInvariant(value);
  if (failed(cloned))
    return failure();
  Type type = cloned->getType();
  if (type.isIndex())
    return *cloned;
  if (!type.isSignlessInteger() || type.getIntOrFloatBitWidth() < 2)
    return failure();
  return b.createOrFold<arith::IndexCastOp>(b.getIndexType(), *cloned);
}

Linear MaskTileBoundsBuilder::combine(const Linear &x, const Linear &y,
                                      int64_t sign) {
  return {x.q + sign * y.q, x.kv + sign * y.kv,
          sign > 0 ? add(x.rest, y.rest) : sub(x.rest, y.rest)};
}

std::optional<Linear> MaskTileBoundsBuilder::scaled(const Linear &x,
                                                    int64_t factor) {
  if (std::abs(factor) > kMaxCoefficient ||
      std::abs(x.q * factor) > kMaxCoefficient ||
      std::abs(x.kv * factor) > kMaxCoefficient)
    return std::nullopt;
  return Linear{x.q * factor, x.kv * factor, scale(x.rest, factor)};
}

std::optional<Linear> MaskTileBoundsBuilder::linearize(Value value) {
  if (value == qIdx)
    return Linear{1, 0, constant(0)};
  if (value == kvIdx)
    return Linear{0, 1, constant(0)};
  if (!dependsOnIndex(value)) {
    FailureOr<Value> rest = invariantIndex(value);
    if (failed(rest))
      return std::nullopt;
    return Linear{0, 0, *rest};
  }
  auto known = linear.find(value);
  if (known != linear.end())
    return known->second;

  auto both = [&](Value lhs, Value rhs, int64_t sign) -> std::optional<Linear> {
    std::optional<Linear> x = linearize(lhs), y = linearize(rhs);
    if (!x || !y)
      return std::nullopt;
    return combine(*x, *y, sign);
  };
  auto product = [&](Value lhs, Value rhs) -> std::optional<Linear> {
    APInt factor;
    if (matchPattern(rhs, m_ConstantInt(&factor)))
      std::swap(lhs, rhs);
    else if (!matchPattern(lhs, m_ConstantInt(&factor)))
      return std::nullopt;
    std::optional<Linear> x = linearize(rhs);
    if (!x || factor.getSignificantBits() > 64)
      return std::nullopt;
    return scaled(*x, factor.getSExtValue());
  };
  // Sign-preserving casts keep the value (no overflow assumed); unsigned
  // ones would not for a negative difference.
  std::optional<Linear> result =
      llvm::TypeSwitch<Operation *, std::optional<Linear>>(
          value.getDefiningOp())
          .Case([&](arith::AddIOp op) {
            return both(op.getLhs(), op.getRhs(), 1);
          })
          .Case([&](arith::SubIOp op) {
            return both(op.getLhs(), op.getRhs(), -1);
          })
          .Case([&](arith::MulIOp op) {
            return product(op.getLhs(), op.getRhs());
          })
          .Case<arith::IndexCastOp, arith::ExtSIOp>(
              [&](auto op) { return linearize(op.getIn()); })
          .Default([](Operation *) -> std::optional<Linear> {
            return std::nullopt;
          });
  linear[value] = result;
  return result;
}

TileSets MaskTileBoundsBuilder::atMostZero(const Linear &d) {
  bool kvLoop = loopDim == MaskLoopDim::KvIdx;
  int64_t loopCoefficient = kvLoop ? d.kv : d.q;
  int64_t fixedCoefficient = kvLoop ? d.q : d.kv;
  if (std::abs(loopCoefficient) > 1)
    return unknown();
  Value fixedLast = add(fixedBegin, constant(fixedExtent - 1));
  Value atBegin = add(scale(fixedBegin, fixedCoefficient), d.rest);
  Value atLast = add(scale(fixedLast, fixedCoefficient), d.rest);
  Value gMin = fixedCoefficient >= 0 ? atBegin : atLast;
  Value gMax = fixedCoefficient >= 0 ? atLast : atBegin;
  Value zero = constant(0);
  if (loopCoefficient == 0)
    return {wholeIf(cmp(CmpIPredicate::sle, gMax, zero)),
            wholeIf(cmp(CmpIPredicate::sle, gMin, zero))};
  if (loopCoefficient == 1) {
    Value fullEnd = floorDiv(sub(constant(1), gMax));
    Value visitEnd = add(floorDiv(sub(zero, gMin)), constant(1));
    return {interval(zero, fullEnd), interval(zero, visitEnd)};
  }
  return {interval(ceilDiv(gMax), numTiles),
          interval(floorDiv(gMin), numTiles)};
}

TileSets MaskTileBoundsBuilder::comparison(CmpIPredicate predicate, Value lhs,
                                           Value rhs) {
  std::optional<Linear> x = linearize(lhs), y = linearize(rhs);
  if (!x || !y)
    return unknown();
  // d = lhs - rhs, and its successor and negations.
  Linear d = combine(*x, *y, -1);
  Linear negated = *scaled(d, -1);
  Linear one{0, 0, constant(1)};
  switch (predicate) {
  case CmpIPredicate::sle:
    return atMostZero(d);
  case CmpIPredicate::slt:
    return atMostZero(combine(d, one, 1));
  case CmpIPredicate::sge:
    return atMostZero(negated);
  case CmpIPredicate::sgt:
    return atMostZero(combine(negated, one, 1));
  case CmpIPredicate::eq:
    return conjunction(atMostZero(d), atMostZero(negated));
  case CmpIPredicate::ne:
    return disjunction(atMostZero(combine(d, one, 1)),
                       atMostZero(combine(negated, one, 1)));
  default:
    // Unsigned: a negative side (a bottom-right offset) compares as huge.
    return unknown();
  }
}

std::optional<DocumentTable>
MaskTileBoundsBuilder::matchDocument(arith::CmpIOp op) {
  // Sign extensions are injective: equal after them means equal before.
  auto load = [](Value value) {
    while (isa_and_nonnull<arith::ExtSIOp, arith::IndexCastOp>(
        value.getDefiningOp()))
      value = value.getDefiningOp()->getOperand(0);
    return value.getDefiningOp<memref::LoadOp>();
  };
  memref::LoadOp x = load(op.getLhs()), y = load(op.getRhs());
  if (!x || !y || x.getMemref() != y.getMemref() ||
      x.getIndices().size() != 2 || y.getIndices().size() != 2 ||
      x.getIndices()[0] != y.getIndices()[0] ||
      dependsOnIndex(x.getIndices()[0]))
    return std::nullopt;
  Value xPos = x.getIndices()[1], yPos = y.getIndices()[1];
  if (!(xPos == qIdx && yPos == kvIdx) && !(xPos == kvIdx && yPos == qIdx))
    return std::nullopt;
  FailureOr<Value> ids = cloneInvariant(x.getMemref());
  FailureOr<Value> batch = cloneInvariant(x.getIndices()[0]);
  if (failed(ids) || failed(batch))
    return std::nullopt;
  return DocumentTable{*ids, *batch};
}

Value MaskTileBoundsBuilder::searchTable(const DocumentTable &table, Value id,
                                         CmpIPredicate before) {
  // The first position p in [0, length) where `ids[p] before id` fails
  // (length if none): a binary search, since the ids do not decrease.
  Value length = b.createOrFold<memref::DimOp>(table.ids, 1);
  Type index = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, TypeRange{index, index}, ValueRange{constant(0), length},
      [&](OpBuilder &nested, Location loc, ValueRange bounds) {
        Value more = arith::CmpIOp::create(nested, loc, CmpIPredicate::slt,
                                           bounds[0], bounds[1]);
        scf::ConditionOp::create(nested, loc, more, bounds);
      },
      [&](OpBuilder &nested, Location loc, ValueRange bounds) {
        ImplicitLocOpBuilder body(loc, nested);
        Value low = bounds[0], high = bounds[1];
        Value mid =
            arith::DivUIOp::create(body, arith::AddIOp::create(body, low, high),
                                   arith::ConstantIndexOp::create(body, 2));
        Value atMid = memref::LoadOp::create(body, table.ids,
                                             ValueRange{table.batch, mid});
        Value isBefore = arith::CmpIOp::create(body, before, atMid, id);
        Value next = arith::AddIOp::create(
            body, mid, arith::ConstantIndexOp::create(body, 1));
        scf::YieldOp::create(
            body,
            ValueRange{arith::SelectOp::create(body, isBefore, next, low),
                       arith::SelectOp::create(body, isBefore, high, mid)});
      });
  return loop.getResult(0);
}

TileSets MaskTileBoundsBuilder::sameDocument(const DocumentTable &table) {
  // The fixed positions, clamped into the sequence: their ids run from
  // ids[first] to ids[last] with every id between, so the loop positions
  // they keep are those whose ids lie in that range; all of them are kept
  // by every fixed position only when ids[first] == ids[last].
  Value length = b.createOrFold<memref::DimOp>(table.ids, 1);
  Value lastPosition = sub(length, constant(1));
  Value fixedLast = add(fixedBegin, constant(fixedExtent - 1));
  auto inSequence = [&](Value position) {
    return max(min(position, lastPosition), constant(0));
  };
  auto idAt = [&](Value position) {
    return memref::LoadOp::create(b, table.ids,
                                  ValueRange{table.batch, inSequence(position)})
        .getResult();
  };
  Value firstId = idAt(fixedBegin), lastId = idAt(fixedLast);
  Value begin = searchTable(table, firstId, CmpIPredicate::slt);
  Value end = searchTable(table, lastId, CmpIPredicate::sle);
  // No fixed position in the sequence: nothing to keep.
  Value meets = b.createOrFold<arith::AndIOp>(
      cmp(CmpIPredicate::sge, fixedLast, constant(0)),
      cmp(CmpIPredicate::slt, fixedBegin, length));
  Value oneDocument = b.createOrFold<arith::AndIOp>(
      meets, cmp(CmpIPredicate::eq, firstId, lastId));
  Interval visit = interval(floorDiv(begin), ceilDiv(end));
  Interval full = interval(ceilDiv(begin), floorDiv(end));
  return {{full.begin, select(oneDocument, full.end, full.begin)},
          {visit.begin, select(meets, visit.end, visit.begin)}};
}

TileSets MaskTileBoundsBuilder::keeps(Value keep, bool negated) {
  if (!dependsOnIndex(keep)) {
    FailureOr<Value> condition = cloneInvariant(keep);
    if (failed(condition))
      return unknown();
    Value holds = *condition;
    if (negated)
      holds = b.createOrFold<arith::XOrIOp>(
          holds, arith::ConstantIntOp::create(b, 1, 1));
    return uniform(holds);
  }
  auto key = std::make_pair(keep, int(negated));
  auto known = sets.find(key);
  if (known != sets.end())
    return known->second;

  auto both = [&](Value lhs, Value rhs, bool conjunctive) {
    TileSets x = keeps(lhs, negated), y = keeps(rhs, negated);
    // not (a and b) = not a or not b, and the other way round.
    return conjunctive != negated ? conjunction(x, y) : disjunction(x, y);
  };
  // `c ? x : y` is (c and x) or (not c and y); under a negation, x and y
  // are negated and c is not.
  auto choice = [&](Value c, Value x, Value y) {
    return disjunction(conjunction(keeps(c, false), keeps(x, negated)),
                       conjunction(keeps(c, true), keeps(y, negated)));
  };
  TileSets result =
      llvm::TypeSwitch<Operation *, TileSets>(keep.getDefiningOp())
          .Case([&](arith::AndIOp op) {
            return both(op.getLhs(), op.getRhs(), true);
          })
          .Case([&](arith::OrIOp op) {
            return both(op.getLhs(), op.getRhs(), false);
          })
          .Case([&](arith::XOrIOp op) {
            // a xor b = a ? not b : b.
            Value a = op.getLhs(), other = op.getRhs();
            TileSets whenA = keeps(other, !negated);
            TileSets otherwise = keeps(other, negated);
            return disjunction(conjunction(keeps(a, false), whenA),
                               conjunction(keeps(a, true), otherwise));
          })
          .Case([&](arith::SelectOp op) {
            return choice(op.getCondition(), op.getTrueValue(),
                          op.getFalseValue());
          })
          .Case([&](arith::CmpIOp op) {
            CmpIPredicate predicate = op.getPredicate();
            if (negated)
              predicate = arith::invertPredicate(predicate);
            if (documentIdsSorted && predicate == CmpIPredicate::eq)
              if (std::optional<DocumentTable> table = matchDocument(op))
                return sameDocument(*table);
            return comparison(predicate, op.getLhs(), op.getRhs());
          })
          .Default([&](Operation *) { return unknown(); });
  sets[key] = result;
  return result;
}

MaskTileIntervals MaskTileBoundsBuilder::intervals(const TileSets &tiles) {
  // A truly full tile is non-empty, so the full set lies in the visited one;
  // this only moves an empty full interval inside.
  Value visitBegin = tiles.visit.begin, visitEnd = tiles.visit.end;
  Value fullBegin = min(max(tiles.full.begin, visitBegin), visitEnd);
  Value fullEnd = max(min(tiles.full.end, visitEnd), fullBegin);
  return {visitBegin, fullBegin, fullEnd, visitEnd};
}
} // namespace

MaskTileIntervals mlir::fa::buildMaskTileIntervals(
    ImplicitLocOpBuilder &b, Region &mask, MaskLoopDim loopDim,
    Value fixedBegin, int64_t fixedExtent, int64_t width, Value numTiles,
    Value batch, Value head, ValueRange captures, bool documentIdsSorted) {
  assert(width > 0 && fixedExtent > 0 && "expects non-empty tiles");
  // No mask region: every key is kept.
  if (mask.empty()) {
    Value zero = arith::ConstantIndexOp::create(b, 0);
    return {zero, zero, numTiles, numTiles};
  }
  Block &block = mask.front();
  assert(block.getNumArguments() == 4 + captures.size() &&
         "expects one value per capture");
  MaskTileBoundsBuilder builder(b, block, loopDim, fixedBegin, fixedExtent,
                                width, numTiles, batch, head, captures,
                                documentIdsSorted);
  Value keep = block.getTerminator()->getOperand(0);
  return builder.intervals(builder.keeps(keep, /*negated=*/false));
}
