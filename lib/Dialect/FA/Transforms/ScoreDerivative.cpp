//===- ScoreDerivative.cpp - Derivative of a score region -----------------===//
//
// Forward-mode differentiation of a score region with respect to its score
// argument, one op at a time in block order:
//   1. every op is cloned into the new block (the derivative rules read the
//      primal values: tanh's derivative is 1 - tanh^2);
//   2. an op that reads a value with a tangent (a value that depends on the
//      score) gets the tangent of its result from its rule below; an op that
//      reads none has tangent 0 and costs nothing more;
//   3. the new block yields the tangent of the yielded value (0.0 if none).
// A tangent of 0 is represented by no value, so that independent branches
// (ALiBi's bias) add no ops.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/ScoreDerivative.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Builds the derivative block op by op. Tangents are keyed by the values of
/// the source region; a null tangent is 0.
class ScoreDifferentiator {
public:
  ScoreDifferentiator(OpBuilder &b, Block &source, Block &target)
      : b(b), loc(source.getParentOp() ? source.getParentOp()->getLoc()
                                       : b.getUnknownLoc()),
        target(target) {
    for (auto [from, to] :
         llvm::zip(source.getArguments(), target.getArguments()))
      primals.map(from, to);
    scoreArg = source.getArgument(0);
  }

  /// Clones `op` and records the tangent of its result.
  LogicalResult differentiate(Operation &op);

  /// The tangent of `value` of the source block (null for 0).
  Value tangentOf(Value value);

  /// `value`'s tangent, or 0.0 of the value's type.
  Value tangentOrZero(Value value);

private:
  bool dependsOnScore(Operation &op);
  FailureOr<Value> tangentRule(Operation &op, Operation &clone);

  Value constant(Type type, double value) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  }
  Value orZero(Value tangent, Type type) {
    return tangent ? tangent : constant(type, 0.0);
  }
  // Sums and products where null stands for 0.
  Value add(Value x, Value y) {
    if (!x || !y)
      return x ? x : y;
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) {
    if (!y)
      return x;
    if (!x)
      return arith::NegFOp::create(b, loc, y);
    return arith::SubFOp::create(b, loc, x, y);
  }
  Value mul(Value tangent, Value factor) {
    return tangent ? arith::MulFOp::create(b, loc, tangent, factor) : Value();
  }
  Value div(Value tangent, Value divisor) {
    return tangent ? arith::DivFOp::create(b, loc, tangent, divisor) : Value();
  }
  /// The tangent of the operand `pick` chooses (min, max, select).
  Value choose(Value pick, Value tangentTrue, Value tangentFalse, Type type) {
    if (!tangentTrue && !tangentFalse)
      return Value();
    return arith::SelectOp::create(b, loc, pick, orZero(tangentTrue, type),
                                   orZero(tangentFalse, type));
  }
  Value cmp(arith::CmpFPredicate predicate, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, predicate, x, y);
  }

  OpBuilder &b;
  Location loc;
  Block &target;
  IRMapping primals;
  DenseMap<Value, Value> tangents;
  Value scoreArg, one;
};
} // namespace

Value ScoreDifferentiator::tangentOf(Value value) {
  if (value != scoreArg)
    return tangents.lookup(value);
  // d score / d score, made once at the top where every op may use it.
  if (!one) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&target);
    one = constant(value.getType(), 1.0);
  }
  return one;
}

Value ScoreDifferentiator::tangentOrZero(Value value) {
  return orZero(tangentOf(value), value.getType());
}

/// Whether `op` reads a score-dependent value, itself or in a nested op.
bool ScoreDifferentiator::dependsOnScore(Operation &op) {
  WalkResult walk = op.walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (tangentOf(operand))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

LogicalResult ScoreDifferentiator::differentiate(Operation &op) {
  Operation *clone = b.clone(op, primals);
  if (!dependsOnScore(op))
    return success();
  if (op.getNumRegions() != 0)
    return op.emitOpError()
           << "has regions and depends on the score: the score region's "
           << "derivative (for the attention backward) is built for "
           << "straight-line code only";
  for (Type type : op.getResultTypes())
    if (!isa<FloatType, IntegerType, IndexType>(type))
      return op.emitOpError()
             << "yields " << type << " from the score: the score region's "
             << "derivative (for the attention backward) is built for scalar "
             << "values only";
  FailureOr<Value> tangent = tangentRule(op, *clone);
  if (failed(tangent))
    return failure();
  if (*tangent)
    tangents[op.getResult(0)] = *tangent;
  return success();
}

/// The tangent of `op`'s result (null for 0), built after `clone`, whose
/// operands and result are the primal values in the new block.
FailureOr<Value> ScoreDifferentiator::tangentRule(Operation &op,
                                                  Operation &clone) {
  SmallVector<Value> dx = llvm::map_to_vector(
      op.getOperands(), [&](Value operand) { return tangentOf(operand); });
  ValueRange x = clone.getOperands();
  Value y = clone.getNumResults() == 1 ? clone.getResult(0) : Value();
  Type type = y ? y.getType() : Type();
  const double ln2 = llvm::numbers::ln2;
  using Result = FailureOr<Value>;
  return llvm::TypeSwitch<Operation *, Result>(&op)
      // Piecewise constant: derivative 0 almost everywhere.
      .Case<arith::CmpFOp, arith::FPToSIOp, arith::FPToUIOp>(
          [&](auto) { return Value(); })
      .Case([&](arith::AddFOp) { return add(dx[0], dx[1]); })
      .Case([&](arith::SubFOp) { return sub(dx[0], dx[1]); })
      .Case([&](arith::NegFOp) { return sub(Value(), dx[0]); })
      .Case([&](arith::MulFOp) {
        return add(mul(dx[0], x[1]), mul(dx[1], x[0]));
      })
      // (x0 / x1)' = (dx0 - y dx1) / x1
      .Case([&](arith::DivFOp) { return div(sub(dx[0], mul(dx[1], y)), x[1]); })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>([&](auto) {
        return choose(cmp(arith::CmpFPredicate::OGT, x[1], x[0]), dx[1], dx[0],
                      type);
      })
      .Case<arith::MinimumFOp, arith::MinNumFOp>([&](auto) {
        return choose(cmp(arith::CmpFPredicate::OLT, x[1], x[0]), dx[1], dx[0],
                      type);
      })
      .Case([&](arith::SelectOp) -> Result {
        if (!isa<FloatType>(type))
          return Value();
        return choose(x[0], dx[1], dx[2], type);
      })
      .Case([&](arith::ExtFOp) -> Value {
        return arith::ExtFOp::create(b, loc, type, dx[0]);
      })
      .Case([&](arith::TruncFOp) -> Value {
        return arith::TruncFOp::create(b, loc, type, dx[0]);
      })
      .Case([&](math::TanhOp) {
        Value square = arith::MulFOp::create(b, loc, y, y);
        return mul(dx[0], sub(constant(type, 1.0), square));
      })
      .Case([&](math::ExpOp) { return mul(dx[0], y); })
      .Case([&](math::Exp2Op) {
        return mul(dx[0],
                   arith::MulFOp::create(b, loc, y, constant(type, ln2)));
      })
      .Case([&](math::ExpM1Op) {
        return mul(dx[0], add(y, constant(type, 1.0)));
      })
      .Case([&](math::LogOp) { return div(dx[0], x[0]); })
      .Case([&](math::Log2Op) {
        return div(dx[0],
                   arith::MulFOp::create(b, loc, x[0], constant(type, ln2)));
      })
      .Case([&](math::Log1pOp) {
        return div(dx[0], add(x[0], constant(type, 1.0)));
      })
      // sqrt' = 1 / (2 sqrt), rsqrt' = -rsqrt^3 / 2
      .Case([&](math::SqrtOp) {
        return div(dx[0],
                   arith::MulFOp::create(b, loc, y, constant(type, 2.0)));
      })
      .Case([&](math::RsqrtOp) {
        Value cube = arith::MulFOp::create(
            b, loc, arith::MulFOp::create(b, loc, y, y), y);
        return mul(dx[0],
                   arith::MulFOp::create(b, loc, cube, constant(type, -0.5)));
      })
      .Case([&](math::AbsFOp) {
        Value negative =
            cmp(arith::CmpFPredicate::OLT, x[0], constant(type, 0.0));
        return choose(negative, sub(Value(), dx[0]), dx[0], type);
      })
      // fma(a, b, c) = a * b + c
      .Case([&](math::FmaOp) {
        return add(add(mul(dx[0], x[1]), mul(dx[1], x[0])), dx[2]);
      })
      .Case([&](math::PowFOp) -> Result {
        if (dx[1])
          return op.emitOpError()
                 << "has an exponent that depends on the score: the score "
                 << "region's derivative (for the attention backward) "
                 << "supports powf with a score-independent exponent only";
        // (x^p)' = p x^(p - 1)
        Value lower = arith::SubFOp::create(b, loc, x[1], constant(type, 1.0));
        Value power = math::PowFOp::create(b, loc, x[0], lower);
        return mul(dx[0], arith::MulFOp::create(b, loc, x[1], power));
      })
      .Default([&](Operation *) -> Result {
        return op.emitOpError()
               << "has no derivative rule: the score region's derivative "
               << "with respect to the score (for the attention backward) "
               << "cannot be built through it";
      });
}

LogicalResult mlir::fa::buildScoreDerivative(OpBuilder &b, Region &score,
                                             Region &into) {
  assert(into.empty() && "the derivative is built into an empty region");
  if (!score.hasOneBlock())
    return emitError(score.getLoc())
           << "expects a score region of one block to differentiate";
  Block &source = score.front();
  auto yield = dyn_cast<YieldOp>(source.getTerminator());
  if (!yield || yield.getValues().size() != 1 || source.getNumArguments() == 0)
    return emitError(score.getLoc())
           << "expects a score region (score, indices, captures) that yields "
           << "one value";

  OpBuilder::InsertionGuard guard(b);
  SmallVector<Location> locs = llvm::map_to_vector(
      source.getArguments(), [](BlockArgument arg) { return arg.getLoc(); });
  Block *target =
      b.createBlock(&into, into.end(), source.getArgumentTypes(), locs);
  ScoreDifferentiator differentiator(b, source, *target);
  for (Operation &op : source.without_terminator()) {
    if (succeeded(differentiator.differentiate(op)))
      continue;
    into.dropAllReferences();
    into.getBlocks().clear();
    return failure();
  }
  YieldOp::create(b, yield.getLoc(),
                  differentiator.tangentOrZero(yield.getValues().front()));
  return success();
}

bool mlir::fa::isScoreIdentity(Region &score) {
  if (score.empty())
    return true;
  Block &block = score.front();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  return yield && block.getNumArguments() != 0 &&
         yield.getValues().size() == 1 &&
         yield.getValues().front() == block.getArgument(0);
}
