//===- DialectTest.cpp - C++ API of the fa dialect ------------------------===//
//
// What the lit tests cannot see: the C++ accessors downstream passes rely on,
// and ops built programmatically going through the same verifier.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;

namespace {
class FADialectTest : public ::testing::Test {
protected:
  FADialectTest() {
    context
        .loadDialect<fa::FADialect, func::FuncDialect, memref::MemRefDialect>();
  }

  /// Parses `body` as the body of a function taking attention buffers.
  OwningOpRef<ModuleOp> parseAttention(StringRef attrs, int64_t headDim) {
    std::string d = std::to_string(headDim);
    std::string type = "memref<2x8x100x" + d + "xbf16>";
    std::string source = "func.func @f(%q: " + type + ", %k: " + type +
                         ", %v: " + type + ", %o: " + type +
                         ") {\n  fa.attention ins(%q, %k, %v : " + type + ", " +
                         type + ", " + type + ") outs(%o : " + type + ") " +
                         attrs.str() + "\n  return\n}\n";
    return parseSourceString<ModuleOp>(source, &context);
  }

  static fa::AttentionOp firstAttention(ModuleOp module) {
    fa::AttentionOp found;
    module.walk([&](fa::AttentionOp op) { found = op; });
    return found;
  }

  MLIRContext context;
};

TEST_F(FADialectTest, ScaleDefaultsToInverseSqrtHeadDim) {
  for (int64_t headDim : {64, 128}) {
    OwningOpRef<ModuleOp> module = parseAttention("", headDim);
    ASSERT_TRUE(module);
    fa::AttentionOp op = firstAttention(*module);
    EXPECT_FLOAT_EQ(op.getScaleOrDefault(),
                    1.0f / std::sqrt(static_cast<float>(headDim)));
    EXPECT_FALSE(op.getCausal());
  }
}

TEST_F(FADialectTest, ExplicitScaleWins) {
  OwningOpRef<ModuleOp> module = parseAttention("causal scale(0.5)", 64);
  ASSERT_TRUE(module);
  fa::AttentionOp op = firstAttention(*module);
  EXPECT_FLOAT_EQ(op.getScaleOrDefault(), 0.5f);
  EXPECT_TRUE(op.getCausal());
  EXPECT_EQ(op.getHeadDim(), 64);
}

TEST_F(FADialectTest, SupportedHeadDimsAreThoseTheVerifierAccepts) {
  for (int64_t headDim : fa::getSupportedHeadDims())
    EXPECT_TRUE(parseAttention("", headDim)) << headDim;
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  for (int64_t headDim : {16, 48, 80, 160, 512})
    EXPECT_FALSE(parseAttention("", headDim)) << headDim;
}

TEST_F(FADialectTest, ProgrammaticallyBuiltOpIsVerified) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module.getBody());
  auto type = MemRefType::get({1, 4, 32, 128}, builder.getF16Type());
  auto badOut = MemRefType::get({1, 4, 33, 128}, builder.getF16Type());
  auto func = func::FuncOp::create(
      builder, loc, "f",
      builder.getFunctionType({type, type, type, badOut}, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  auto args = body->getArguments();
  fa::AttentionOp::create(builder, loc, args[0], args[1], args[2], args[3],
                          /*lse=*/Value(), /*causal=*/false,
                          /*scale=*/nullptr);
  func::ReturnOp::create(builder, loc);

  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(module)));
  EXPECT_NE(message.find("expects out dimension 2 (33) to equal query "
                         "dimension 2 (32)"),
            std::string::npos)
      << message;
  module->erase();
}
} // namespace
