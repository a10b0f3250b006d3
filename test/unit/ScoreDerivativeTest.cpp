//===- ScoreDerivativeTest.cpp - Derivative of score regions --------------===//
//
// buildScoreDerivative against numbers: each score region and the derivative
// region built from it are evaluated by a small interpreter (in double), and
// the derivative must match central finite differences of the region at
// several scores. The regions are those the compiler writes for the named
// variants (softcap, ALiBi, by fa-expand-attention-variants) and small
// hand-written ones, one per derivative rule.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/ScoreDerivative.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

using namespace mlir;

namespace {
/// The arguments of a score region, all as doubles.
struct RegionInputs {
  int64_t batch = 1, head = 2, qIdx = 7, kvIdx = 3;
  /// One per capture: a scalar's value, or a 1-D table's entries.
  std::vector<std::vector<double>> captures;
};

using Fn = std::function<double(ArrayRef<double>)>;

/// The ops the regions below use, on doubles (i1 as 0/1).
const llvm::StringMap<Fn> &interpretedOps() {
  static const llvm::StringMap<Fn> ops = {
      {"arith.addf", [](auto x) { return x[0] + x[1]; }},
      {"arith.addi", [](auto x) { return x[0] + x[1]; }},
      {"arith.subf", [](auto x) { return x[0] - x[1]; }},
      {"arith.subi", [](auto x) { return x[0] - x[1]; }},
      {"arith.mulf", [](auto x) { return x[0] * x[1]; }},
      {"arith.muli", [](auto x) { return x[0] * x[1]; }},
      {"arith.divf", [](auto x) { return x[0] / x[1]; }},
      {"arith.negf", [](auto x) { return -x[0]; }},
      {"arith.maximumf", [](auto x) { return std::max(x[0], x[1]); }},
      {"arith.maxnumf", [](auto x) { return std::max(x[0], x[1]); }},
      {"arith.minimumf", [](auto x) { return std::min(x[0], x[1]); }},
      {"arith.minnumf", [](auto x) { return std::min(x[0], x[1]); }},
      {"arith.select", [](auto x) { return x[0] != 0.0 ? x[1] : x[2]; }},
      {"arith.index_cast", [](auto x) { return x[0]; }},
      {"arith.sitofp", [](auto x) { return x[0]; }},
      {"arith.extf", [](auto x) { return x[0]; }},
      {"arith.truncf", [](auto x) { return x[0]; }},
      {"arith.fptosi", [](auto x) { return std::trunc(x[0]); }},
      {"math.tanh", [](auto x) { return std::tanh(x[0]); }},
      {"math.exp", [](auto x) { return std::exp(x[0]); }},
      {"math.exp2", [](auto x) { return std::exp2(x[0]); }},
      {"math.expm1", [](auto x) { return std::expm1(x[0]); }},
      {"math.log", [](auto x) { return std::log(x[0]); }},
      {"math.log2", [](auto x) { return std::log2(x[0]); }},
      {"math.log1p", [](auto x) { return std::log1p(x[0]); }},
      {"math.sqrt", [](auto x) { return std::sqrt(x[0]); }},
      {"math.rsqrt", [](auto x) { return 1.0 / std::sqrt(x[0]); }},
      {"math.absf", [](auto x) { return std::fabs(x[0]); }},
      {"math.fma", [](auto x) { return x[0] * x[1] + x[2]; }},
      {"math.powf", [](auto x) { return std::pow(x[0], x[1]); }},
      {"math.sin", [](auto x) { return std::sin(x[0]); }},
  };
  return ops;
}

double constantValue(arith::ConstantOp op) {
  if (auto value = dyn_cast<FloatAttr>(op.getValue()))
    return value.getValueAsDouble();
  APInt value = cast<IntegerAttr>(op.getValue()).getValue();
  return value.getBitWidth() == 1 ? value.getZExtValue() : value.getSExtValue();
}

/// What `region` (a score region) yields for `score` and `in`. A
/// `memref.load` of a captured table reads the entry at its last index.
double evaluate(Region &region, double score, const RegionInputs &in) {
  Block &block = region.front();
  DenseMap<Value, double> values;
  DenseMap<Value, const std::vector<double> *> tables;
  double leading[] = {score, double(in.batch), double(in.head), double(in.qIdx),
                      double(in.kvIdx)};
  for (auto [index, arg] : llvm::enumerate(block.getArguments())) {
    if (index < 5)
      values[arg] = leading[index];
    else if (isa<MemRefType>(arg.getType()))
      tables[arg] = &in.captures.at(index - 5);
    else
      values[arg] = in.captures.at(index - 5).at(0);
  }
  auto valueOf = [&](Value value) {
    auto it = values.find(value);
    if (it != values.end())
      return it->second;
    ADD_FAILURE() << "no value for an operand";
    return std::numeric_limits<double>::quiet_NaN();
  };
  for (Operation &op : block) {
    if (auto yield = dyn_cast<fa::YieldOp>(op))
      return valueOf(yield.getValues().front());
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      const std::vector<double> *table = tables.lookup(load.getMemRef());
      double index = valueOf(load.getIndices().back());
      values[load.getResult()] = table->at(static_cast<size_t>(index));
      continue;
    }
    SmallVector<double> x = llvm::map_to_vector(op.getOperands(), valueOf);
    double result;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      result = constantValue(constant);
    } else if (auto cmpf = dyn_cast<arith::CmpFOp>(op)) {
      result = arith::applyCmpPredicate(cmpf.getPredicate(), APFloat(x[0]),
                                        APFloat(x[1]));
    } else if (auto cmpi = dyn_cast<arith::CmpIOp>(op)) {
      result = arith::applyCmpPredicate(
          cmpi.getPredicate(), APInt(64, static_cast<int64_t>(x[0]), true),
          APInt(64, static_cast<int64_t>(x[1]), true));
    } else {
      auto fn = interpretedOps().find(op.getName().getStringRef());
      if (fn == interpretedOps().end()) {
        ADD_FAILURE() << "the test cannot interpret "
                      << op.getName().getStringRef().str();
        return std::numeric_limits<double>::quiet_NaN();
      }
      result = fn->second(x);
    }
    values[op.getResult(0)] = result;
  }
  ADD_FAILURE() << "the region does not end in fa.yield";
  return std::numeric_limits<double>::quiet_NaN();
}

/// Scores away from the kinks of the regions below (0, 1/0.7, integers).
constexpr double kScores[] = {-2.3, -1.7, -0.3, 0.45, 0.9, 2.2, 5.6};

/// Checks `derivative` against central differences of `primal`.
void expectMatchesFiniteDifferences(Region &primal, Region &derivative,
                                    const RegionInputs &in) {
  for (double s : kScores) {
    double h = 1e-5 * std::max(1.0, std::fabs(s));
    double expected =
        (evaluate(primal, s + h, in) - evaluate(primal, s - h, in)) / (2 * h);
    EXPECT_NEAR(evaluate(derivative, s, in), expected,
                1e-6 * std::max(1.0, std::fabs(expected)))
        << "at score " << s;
  }
}

class ScoreDerivativeTest : public ::testing::Test {
protected:
  ScoreDerivativeTest() {
    context.loadDialect<fa::FADialect, func::FuncDialect, arith::ArithDialect,
                        math::MathDialect, memref::MemRefDialect>();
  }

  /// A function with one fa.attention; `params` are extra function
  /// parameters (`, %c: f32`), `rest` what follows the op's outs.
  OwningOpRef<ModuleOp> parseAttention(StringRef params, StringRef rest) {
    std::string t = "memref<2x8x128x64xbf16>";
    std::string source =
        "func.func @f(%q: " + t + ", %k: " + t + ", %v: " + t + ", %o: " + t +
        params.str() + ") {\n  fa.attention ins(%q, %k, %v : " + t + ", " + t +
        ", " + t + ") outs(%o : " + t + ") " + rest.str() + "\n  return\n}\n";
    return parseSourceString<ModuleOp>(source, &context);
  }

  /// An fa.attention whose score region is `body`, with block arguments
  /// %s, %b, %h, %i, %j and one scalar f32 capture %c (the function's %cap).
  OwningOpRef<ModuleOp> parseScoreRegion(StringRef body) {
    std::string rest = "captures(%cap : f32) score {\n  ^bb0(%s: f32, "
                       "%b: index, %h: index, %i: index, %j: index, %c: f32):"
                       "\n" +
                       body.str() + "\n  }";
    return parseAttention(", %cap: f32", rest);
  }

  static fa::AttentionOp attentionOf(ModuleOp module) {
    fa::AttentionOp found;
    module.walk([&](fa::AttentionOp op) { found = op; });
    return found;
  }

  /// Builds the derivative of `op`'s score region as the score region of a
  /// copy of `op` placed after it, which must verify (the derivative is a
  /// valid score region). Returns the copy, or null if the build failed.
  fa::AttentionOp buildDerivative(ModuleOp module, fa::AttentionOp op) {
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    auto copy = cast<fa::AttentionOp>(b.clone(*op));
    copy.getScore().dropAllReferences();
    copy.getScore().getBlocks().clear();
    if (failed(fa::buildScoreDerivative(b, op.getScore(), copy.getScore()))) {
      EXPECT_TRUE(copy.getScore().empty());
      copy->erase();
      return {};
    }
    EXPECT_TRUE(succeeded(verify(module)));
    return copy;
  }

  /// Parses `body` as a score region, builds its derivative and checks it
  /// against finite differences (%c = `cap`).
  void checkRegion(StringRef body, double cap = 0.75) {
    OwningOpRef<ModuleOp> module = parseScoreRegion(body);
    ASSERT_TRUE(module) << body.str();
    fa::AttentionOp op = attentionOf(*module);
    fa::AttentionOp derivative = buildDerivative(*module, op);
    ASSERT_TRUE(derivative) << body.str();
    RegionInputs in;
    in.captures = {{cap}};
    expectMatchesFiniteDifferences(op.getScore(), derivative.getScore(), in);
  }

  /// The diagnostic buildScoreDerivative gives for `body` (empty if none).
  std::string failureOf(StringRef body) {
    OwningOpRef<ModuleOp> module = parseScoreRegion(body);
    EXPECT_TRUE(module) << body.str();
    if (!module)
      return {};
    std::string message;
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    EXPECT_FALSE(buildDerivative(*module, attentionOf(*module)));
    return message;
  }

  MLIRContext context;
};

// The regions fa-expand-attention-variants writes for softcap(c) then
// alibi(slopes): s' = c tanh(s / c) - slopes[h] |q_idx + off - kv_idx|, whose
// derivative is 1 - tanh^2(s / c), the ALiBi bias contributing nothing.
TEST_F(ScoreDerivativeTest, SoftcapAndAlibiFromTheNamedVariants) {
  OwningOpRef<ModuleOp> module =
      parseAttention(", %cap: f32, %slopes: memref<8xf32>",
                     "softcap(%cap) alibi(%slopes : memref<8xf32>)");
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(fa::createFAExpandAttentionVariants());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  fa::AttentionOp op = attentionOf(*module);
  ASSERT_FALSE(op.getScore().empty());
  EXPECT_FALSE(fa::isScoreIdentity(op.getScore()));
  fa::AttentionOp derivative = buildDerivative(*module, op);
  ASSERT_TRUE(derivative);

  // Captures: off = seq_kv - seq_q (0 here), the cap, the slopes.
  RegionInputs in;
  const double cap = 2.5;
  in.captures = {{0.0}, {cap}, {0.5, 0.25, 0.125, 0.0625, 1, 2, 3, 4}};
  expectMatchesFiniteDifferences(op.getScore(), derivative.getScore(), in);
  for (double s : kScores) {
    double t = std::tanh(s / cap);
    EXPECT_NEAR(evaluate(derivative.getScore(), s, in), 1 - t * t, 1e-12);
  }
}

TEST_F(ScoreDerivativeTest, AlibiHasDerivativeOne) {
  OwningOpRef<ModuleOp> module = parseAttention(
      ", %slopes: memref<8xf32>", "alibi(%slopes : memref<8xf32>)");
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(fa::createFAExpandAttentionVariants());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  fa::AttentionOp op = attentionOf(*module);
  fa::AttentionOp derivative = buildDerivative(*module, op);
  ASSERT_TRUE(derivative);
  RegionInputs in;
  in.captures = {{0.0}, {0.5, 0.25, 0.125, 0.0625, 1, 2, 3, 4}};
  // The primal does change with the slope; the derivative is exactly 1.
  EXPECT_NE(evaluate(op.getScore(), 1.0, in), 1.0);
  expectMatchesFiniteDifferences(op.getScore(), derivative.getScore(), in);
  for (double s : kScores)
    EXPECT_EQ(evaluate(derivative.getScore(), s, in), 1.0);
}

TEST_F(ScoreDerivativeTest, Product) {
  checkRegion("%y = arith.mulf %s, %s : f32\n fa.yield %y : f32");
}

TEST_F(ScoreDerivativeTest, Exp) {
  checkRegion("%y = math.exp %s : f32\n fa.yield %y : f32");
}

TEST_F(ScoreDerivativeTest, LeakyReluSelectsTheDerivative) {
  checkRegion(R"(
    %zero = arith.constant 0.0 : f32
    %slope = arith.constant 0.1 : f32
    %positive = arith.cmpf ogt, %s, %zero : f32
    %leak = arith.mulf %slope, %s : f32
    %y = arith.select %positive, %s, %leak : f32
    fa.yield %y : f32)");
}

// A region that reads the score nowhere: derivative 0, although the region's
// value changes with the indices and the capture.
TEST_F(ScoreDerivativeTest, RegionNotReadingTheScoreHasDerivativeZero) {
  StringRef body = R"(
    %d = arith.subi %i, %j : index
    %n = arith.index_cast %d : index to i64
    %f = arith.sitofp %n : i64 to f32
    %y = arith.mulf %f, %c : f32
    fa.yield %y : f32)";
  checkRegion(body);
  OwningOpRef<ModuleOp> module = parseScoreRegion(body);
  ASSERT_TRUE(module);
  fa::AttentionOp derivative = buildDerivative(*module, attentionOf(*module));
  ASSERT_TRUE(derivative);
  RegionInputs in;
  in.captures = {{3.0}};
  EXPECT_EQ(evaluate(derivative.getScore(), 0.7, in), 0.0);
}

TEST_F(ScoreDerivativeTest, IdentityRegion) {
  StringRef body = "fa.yield %s : f32";
  OwningOpRef<ModuleOp> module = parseScoreRegion(body);
  ASSERT_TRUE(module);
  fa::AttentionOp op = attentionOf(*module);
  EXPECT_TRUE(fa::isScoreIdentity(op.getScore()));
  checkRegion(body);
  OwningOpRef<ModuleOp> plain = parseAttention("", "");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(fa::isScoreIdentity(attentionOf(*plain).getScore()));
}

// One region per derivative rule, each composed with score-dependent
// operands (and some with score-independent ones, whose tangent is 0).
TEST_F(ScoreDerivativeTest, EveryRuleMatchesFiniteDifferences) {
  // %p = s^2 + 0.5 > 0, the domain of log, sqrt and powf.
  const std::string positive = R"(
    %half = arith.constant 0.5 : f32
    %sq = arith.mulf %s, %s : f32
    %p = arith.addf %sq, %half : f32
    )";
  const std::string line = R"(
    %lin = arith.constant 0.7 : f32
    %one = arith.constant 1.0 : f32
    %ls = arith.mulf %lin, %s : f32
    %l = arith.addf %ls, %one : f32
    )";
  const std::string unary[] = {"arith.negf %s", "math.tanh %s",  "math.exp2 %s",
                               "math.expm1 %s", "math.absf %s",  "math.log %p",
                               "math.log2 %p",  "math.log1p %p", "math.sqrt %p",
                               "math.rsqrt %p", "math.tanh %c"};
  for (const std::string &op : unary)
    checkRegion(positive + "%y = " + op + " : f32\n fa.yield %y : f32");
  const std::string binary[] = {
      "arith.addf %s, %p",    "arith.subf %c, %p",     "arith.subf %p, %c",
      "arith.mulf %c, %p",    "arith.divf %s, %p",     "arith.divf %c, %p",
      "arith.divf %p, %c",    "arith.maximumf %s, %l", "arith.minimumf %s, %l",
      "arith.maxnumf %l, %s", "arith.minnumf %l, %s",  "arith.maximumf %s, %c",
      "math.powf %p, %c"};
  for (const std::string &op : binary)
    checkRegion(positive + line + "%y = " + op + " : f32\n fa.yield %y : f32");
  checkRegion(positive + line + R"(
    %y = math.fma %s, %p, %l : f32
    fa.yield %y : f32)");
  checkRegion(positive + line + R"(
    %y = math.fma %c, %c, %s : f32
    fa.yield %y : f32)");
  // Through f64 and back.
  checkRegion(R"(
    %e = arith.extf %s : f32 to f64
    %t = math.tanh %e : f64
    %sq = arith.mulf %t, %e : f64
    %y = arith.truncf %sq : f64 to f32
    fa.yield %y : f32)");
  // fptosi is piecewise constant: floor-like steps add nothing.
  checkRegion(R"(
    %n = arith.fptosi %s : f32 to i32
    %f = arith.sitofp %n : i32 to f32
    %e = math.exp %s : f32
    %y = arith.addf %f, %e : f32
    fa.yield %y : f32)");
  // An op with no derivative rule is fine where the score does not reach.
  checkRegion(R"(
    %sine = math.sin %c : f32
    %y = arith.mulf %sine, %s : f32
    fa.yield %y : f32)");
}

TEST_F(ScoreDerivativeTest, OpWithoutRuleIsNamed) {
  std::string message = failureOf("%y = math.sin %s : f32\n fa.yield %y : f32");
  EXPECT_NE(message.find("'math.sin' op has no derivative rule"),
            std::string::npos)
      << message;
  message = failureOf(R"(
    %n = arith.bitcast %s : f32 to i32
    %f = arith.sitofp %n : i32 to f32
    fa.yield %f : f32)");
  EXPECT_NE(message.find("'arith.bitcast' op has no derivative rule"),
            std::string::npos)
      << message;
}

TEST_F(ScoreDerivativeTest, PowfWithScoreDependentExponentFails) {
  std::string message =
      failureOf("%y = math.powf %c, %s : f32\n fa.yield %y : f32");
  EXPECT_NE(message.find("'math.powf' op has an exponent that depends on "
                         "the score"),
            std::string::npos)
      << message;
}
} // namespace
