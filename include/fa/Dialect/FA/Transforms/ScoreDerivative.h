//===- ScoreDerivative.h - Derivative of a score region ---------*- C++ -*-===//
//
// The attention backward needs, for each score element, the derivative of
// the score region at that score: dS = P * (dP - delta) * f'(s). The
// compiler builds f' from the region itself (forward-mode differentiation
// with respect to the score argument), so that every named variant and
// every user's region gets its backward without a rule written per variant.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_SCOREDERIVATIVE_H
#define FA_DIALECT_FA_TRANSFORMS_SCOREDERIVATIVE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Region.h"
#include "mlir/Support/LLVM.h"

namespace mlir::fa {

/// Builds, in the empty region `into`, a block with the arguments of the
/// score region `score` (score : f32, batch, head, q_idx, kv_idx : index,
/// captures...) that yields (`fa.yield %d : f32`) the derivative of what
/// `score` yields with respect to its score argument, for the same
/// arguments. Every op of `score` is cloned into `into` (they are pure, and
/// the derivatives reuse their values; CSE merges them with the forward's
/// copies once inlined next to them); each op that depends on the score
/// gets its derivative by forward mode. The derivative is 0.0 when the
/// region does not depend on the score. Piecewise-constant ops (cmpf,
/// fptosi, fptoui) have derivative 0; a select or a min/max takes the
/// derivative of the operand it picks; |x| takes -1 below 0 and 1 at and
/// above it.
///
/// Fails, with an error at the op and `into` left empty, when a
/// score-dependent op has no derivative rule (or is not a scalar float op,
/// or has regions, or is a powf whose exponent depends on the score).
/// `b`'s insertion point is restored.
LogicalResult buildScoreDerivative(OpBuilder &b, Region &score, Region &into);

/// Whether the score region leaves the score unchanged (it yields its score
/// argument, or is empty, meaning no score region): then the backward needs
/// no derivative factor.
bool isScoreIdentity(Region &score);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_SCOREDERIVATIVE_H
