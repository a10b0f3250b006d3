//===- MaskTileBoundsTest.cpp - Tile intervals of mask regions ------------===//
//
// buildMaskTileIntervals against brute force. Each mask is an fa.attention
// `mask` region parsed from text, next to a C++ statement of what it keeps.
// For many random tile geometries and capture values (negative offsets,
// tiles past every kept key), the intervals, built with constant operands,
// must fold to constants and be sound: every tile in the full range keeps
// every element, every tile outside the visited range keeps none. Masks that
// are conjunctions of bounds on one linear form (causal, windows) must be
// exact: visited = the non-empty tiles, full = the full tiles.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/MaskTileBounds.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>

using namespace mlir;
using fa::MaskLoopDim;

namespace {
/// A capture of the mask: a scalar drawn from [low, high], or a memref.
struct Capture {
  std::string name, type;
  int64_t low = 0, high = 0;
};

/// The element (q_idx, kv_idx) of head `head`, with the captures' values.
using KeepFn = std::function<bool(int64_t head, int64_t q, int64_t kv,
                                  ArrayRef<int64_t> captures)>;
/// Whether the intervals must be exact for this loop and these captures.
using ExactFn =
    std::function<bool(MaskLoopDim loopDim, ArrayRef<int64_t> captures)>;

struct MaskCase {
  std::vector<Capture> captures;
  /// Region ops defining %keep from %b, %h, %i (q_idx), %j (kv_idx) and the
  /// captures.
  std::string body;
  KeepFn keeps;
  ExactFn exact;
  /// The analysis must answer "every tile partial".
  bool unknown = false;
};

bool always(MaskLoopDim, ArrayRef<int64_t>) { return true; }

int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

/// The tiles' geometry: loop tiles [t*width, (t+1)*width) for t < numTiles,
/// fixed indices [fixedBegin, fixedBegin + fixedExtent).
struct Geometry {
  int64_t fixedBegin, fixedExtent, width, numTiles, head;
};

struct Intervals {
  int64_t visitBegin, fullBegin, fullEnd, visitEnd;
};

std::string describe(MaskLoopDim loopDim, const Geometry &g,
                     ArrayRef<int64_t> captures, const Intervals &r) {
  std::ostringstream s;
  s << (loopDim == MaskLoopDim::KvIdx ? "kv loop" : "q loop")
    << " fixedBegin=" << g.fixedBegin << " fixedExtent=" << g.fixedExtent
    << " width=" << g.width << " numTiles=" << g.numTiles << " head=" << g.head
    << " captures=(";
  for (int64_t c : captures)
    s << c << " ";
  s << ") visit=[" << r.visitBegin << "," << r.visitEnd << ") full=["
    << r.fullBegin << "," << r.fullEnd << ")";
  return s.str();
}

/// The intervals the brute force finds, checked against `r`.
testing::AssertionResult checkIntervals(const MaskCase &c, MaskLoopDim loopDim,
                                        const Geometry &g,
                                        ArrayRef<int64_t> captures,
                                        const Intervals &r) {
  auto fail = [&](StringRef why) {
    return testing::AssertionFailure()
           << why.str() << ": " << describe(loopDim, g, captures, r);
  };
  if (!(0 <= r.visitBegin && r.visitBegin <= r.fullBegin &&
        r.fullBegin <= r.fullEnd && r.fullEnd <= r.visitEnd &&
        r.visitEnd <= g.numTiles))
    return fail("intervals out of order");
  if (c.unknown && !(r.visitBegin == 0 && r.visitEnd == g.numTiles &&
                     r.fullBegin == r.fullEnd))
    return fail("expected every tile partial");

  std::vector<int64_t> nonEmpty, full;
  int64_t elements = g.width * g.fixedExtent;
  for (int64_t t = 0; t < g.numTiles; ++t) {
    int64_t kept = 0;
    for (int64_t l = t * g.width; l < (t + 1) * g.width; ++l)
      for (int64_t f = g.fixedBegin; f < g.fixedBegin + g.fixedExtent; ++f) {
        bool kvLoop = loopDim == MaskLoopDim::KvIdx;
        kept += c.keeps(g.head, kvLoop ? f : l, kvLoop ? l : f, captures);
      }
    bool inFull = r.fullBegin <= t && t < r.fullEnd;
    bool inVisit = r.visitBegin <= t && t < r.visitEnd;
    if (inFull && kept != elements)
      return fail("tile " + std::to_string(t) + " reported full keeps " +
                  std::to_string(kept) + " of " + std::to_string(elements));
    if (!inVisit && kept != 0)
      return fail("tile " + std::to_string(t) + " not visited keeps " +
                  std::to_string(kept));
    if (kept != 0)
      nonEmpty.push_back(t);
    if (kept == elements)
      full.push_back(t);
  }
  if (!c.exact || !c.exact(loopDim, captures))
    return testing::AssertionSuccess();
  // Exact: the intervals are the tiles themselves (contiguous, as the
  // reference confirms).
  auto matches = [](const std::vector<int64_t> &tiles, int64_t begin,
                    int64_t end) {
    if (tiles.empty())
      return begin == end;
    return begin == tiles.front() && end == tiles.back() + 1 &&
           int64_t(tiles.size()) == end - begin;
  };
  if (!matches(nonEmpty, r.visitBegin, r.visitEnd))
    return fail("visited range is not the non-empty tiles");
  if (!matches(full, r.fullBegin, r.fullEnd))
    return fail("full range is not the full tiles");
  return testing::AssertionSuccess();
}

class MaskTileBoundsTest : public ::testing::Test {
protected:
  MaskTileBoundsTest() {
    context.loadDialect<fa::FADialect, func::FuncDialect, arith::ArithDialect,
                        memref::MemRefDialect>();
  }

  /// An fa.attention holding `c`'s mask region.
  OwningOpRef<ModuleOp> parseMask(const MaskCase &c) {
    std::string t = "memref<1x4x256x64xbf16>";
    // The function's arguments are %captureN, the region's the names.
    std::string names, types, args, blockArgs;
    for (const Capture &capture : c.captures) {
      std::string outer =
          "%capture" + std::to_string(&capture - &c.captures[0]);
      names += (names.empty() ? "" : ", ") + outer;
      types += (types.empty() ? "" : ", ") + capture.type;
      args += ", " + outer + ": " + capture.type;
      blockArgs += ", " + capture.name + ": " + capture.type;
    }
    std::string source =
        "func.func @f(%q: " + t + ", %k: " + t + ", %v: " + t + ", %o: " + t +
        args + ") {\n  fa.attention ins(%q, %k, %v : " + t + ", " + t + ", " +
        t + ") outs(%o : " + t + ")" +
        (c.captures.empty() ? "" : " captures(" + names + " : " + types + ")") +
        " mask {\n  ^bb0(%b: index, %h: index, %i: index, %j: index" +
        blockArgs + "):\n" + c.body +
        "\n    fa.yield %keep : i1\n  }\n  return\n}\n";
    return parseSourceString<ModuleOp>(source, &context);
  }

  /// The intervals built for `mask` with constant operands, folded.
  std::optional<Intervals> build(Region &mask, const MaskCase &c,
                                 MaskLoopDim loopDim, const Geometry &g,
                                 ArrayRef<int64_t> captureValues) {
    Location loc = UnknownLoc::get(&context);
    OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
    OpBuilder top = OpBuilder::atBlockEnd(scratch->getBody());
    // Memref captures are the function's arguments; scalars are constants.
    SmallVector<Type> memrefs;
    for (const Capture &capture : c.captures)
      if (StringRef(capture.type).starts_with("memref"))
        memrefs.push_back(parseType(capture.type, &context));
    SmallVector<Type> results(4, top.getIndexType());
    auto func = func::FuncOp::create(top, loc, "bounds",
                                     top.getFunctionType(memrefs, results));
    Block *entry = func.addEntryBlock();
    auto b = ImplicitLocOpBuilder::atBlockEnd(loc, entry);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, v);
    };
    SmallVector<Value> captures;
    unsigned nextArg = 0;
    for (auto [capture, value] : llvm::zip(c.captures, captureValues)) {
      if (capture.type == "index")
        captures.push_back(index(value));
      else if (capture.type == "i32")
        captures.push_back(arith::ConstantIntOp::create(b, value, 32));
      else
        captures.push_back(entry->getArgument(nextArg++));
    }
    fa::MaskTileIntervals r = fa::buildMaskTileIntervals(
        b, mask, loopDim, index(g.fixedBegin), g.fixedExtent, g.width,
        index(g.numTiles), index(0), index(g.head), captures);
    // Every value the analysis builds folds: the answer is constant.
    Value values[] = {r.visitBegin, r.fullBegin, r.fullEnd, r.visitEnd};
    int64_t constants[4];
    for (auto [value, constant] : llvm::zip(values, constants)) {
      APInt folded;
      if (!matchPattern(value, m_ConstantInt(&folded)))
        return std::nullopt;
      constant = folded.getSExtValue();
    }
    return Intervals{constants[0], constants[1], constants[2], constants[3]};
  }

  /// Checks `c` for both loops over many random geometries and captures.
  void checkMask(const MaskCase &c, int trials = 1500) {
    OwningOpRef<ModuleOp> module = parseMask(c);
    ASSERT_TRUE(module);
    fa::AttentionOp op;
    module->walk([&](fa::AttentionOp found) { op = found; });
    ASSERT_TRUE(op);
    std::mt19937 rng(20);
    auto draw = [&](int64_t low, int64_t high) {
      return std::uniform_int_distribution<int64_t>(low, high)(rng);
    };
    const int64_t sizes[] = {1, 2, 3, 5, 8, 16};
    for (MaskLoopDim loopDim : {MaskLoopDim::KvIdx, MaskLoopDim::QIdx}) {
      for (int trial = 0; trial < trials; ++trial) {
        Geometry g{draw(-8, 90), sizes[draw(0, 5)], sizes[draw(0, 5)],
                   draw(0, 14), draw(1, 2)};
        SmallVector<int64_t> captures;
        for (const Capture &capture : c.captures)
          captures.push_back(draw(capture.low, capture.high));
        std::optional<Intervals> r =
            build(op.getMask(), c, loopDim, g, captures);
        ASSERT_TRUE(r) << "intervals did not fold to constants: "
                       << describe(loopDim, g, captures, {});
        ASSERT_TRUE(checkIntervals(c, loopDim, g, captures, *r));
      }
    }
  }

  MLIRContext context;
};

const char *kCausal = "    %keep = arith.cmpi sle, %j, %i : index";

TEST_F(MaskTileBoundsTest, CausalTopLeftIsExact) {
  checkMask({{},
             kCausal,
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return kv <= q;
             },
             always});
}

TEST_F(MaskTileBoundsTest, CausalBottomRightIsExact) {
  checkMask({{{"%off", "index", -60, 60}},
             R"(    %d = arith.addi %i, %off : index
    %keep = arith.cmpi sle, %j, %d : index)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
               return kv <= q + c[0];
             },
             always});
}

/// `result` = q + off - left <= kv <= q + off + right, as
/// fa-expand-attention-variants writes it.
std::string window(const std::string &result) {
  return R"(    %diag = arith.addi %i, %off : index
    %first = arith.subi %diag, %left : index
    %last = arith.addi %diag, %right : index
    %lo = arith.cmpi sle, %first, %j : index
    %hi = arith.cmpi sle, %j, %last : index
    )" + result +
         " = arith.andi %lo, %hi : i1\n";
}
const std::vector<Capture> kWindowCaptures = {{"%off", "index", -30, 40},
                                              {"%left", "index", -10, 40},
                                              {"%right", "index", -10, 40}};

bool inWindow(int64_t q, int64_t kv, ArrayRef<int64_t> c) {
  return q + c[0] - c[1] <= kv && kv <= q + c[0] + c[2];
}

TEST_F(MaskTileBoundsTest, WindowIsExactWhenNotEmpty) {
  checkMask(
      {kWindowCaptures, window("%keep"),
       [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
         return inWindow(q, kv, c);
       },
       // An empty band (left + right < 0) is only bounded soundly: its
       // two bounds are intersected tile by tile.
       [](MaskLoopDim, ArrayRef<int64_t> c) { return c[1] + c[2] >= 0; }});
}

TEST_F(MaskTileBoundsTest, CausalWindowIsExactWhenNotEmpty) {
  checkMask({kWindowCaptures,
             window("%window") + R"(    %causal = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %causal, %window : i1)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
               return kv <= q && inWindow(q, kv, c);
             },
             [](MaskLoopDim, ArrayRef<int64_t> c) {
               return c[0] - c[1] <= std::min<int64_t>(0, c[0] + c[2]);
             }});
}

TEST_F(MaskTileBoundsTest, PrefixLmIsExact) {
  checkMask({{{"%p", "index", -10, 90}},
             R"(    %causal = arith.cmpi sle, %j, %i : index
    %inPrefix = arith.cmpi slt, %j, %p : index
    %keep = arith.ori %causal, %inPrefix : i1)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
               return kv <= q || kv < c[0];
             },
             always});
}

TEST_F(MaskTileBoundsTest, NegatedComparisonIsExact) {
  checkMask({{},
             R"(    %after = arith.cmpi sgt, %j, %i : index
    %true = arith.constant true
    %keep = arith.xori %after, %true : i1)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return !(kv > q);
             },
             always});
}

TEST_F(MaskTileBoundsTest, NegatedOutsideOfWindowIsExact) {
  // not (kv < q - left or kv > q + right): De Morgan gives the window.
  checkMask(
      {{{"%left", "index", -10, 40}, {"%right", "index", -10, 40}},
       R"(    %first = arith.subi %i, %left : index
    %last = arith.addi %i, %right : index
    %before = arith.cmpi slt, %j, %first : index
    %after = arith.cmpi sgt, %j, %last : index
    %outside = arith.ori %before, %after : i1
    %true = arith.constant true
    %keep = arith.xori %true, %outside : i1)",
       [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
         return !(kv < q - c[0] || kv > q + c[1]);
       },
       [](MaskLoopDim, ArrayRef<int64_t> c) { return c[0] + c[1] >= 0; }});
}

TEST_F(MaskTileBoundsTest, DiagonalEqualityIsExact) {
  checkMask({{},
             "    %keep = arith.cmpi eq, %j, %i : index",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return kv == q;
             },
             always});
}

TEST_F(MaskTileBoundsTest, OffDiagonalIsSound) {
  checkMask({{},
             "    %keep = arith.cmpi ne, %j, %i : index",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return kv != q;
             },
             nullptr});
}

TEST_F(MaskTileBoundsTest, ScaledQueryAndCastCaptureAreExactOverKeys) {
  // kv < 2*q + n: a loop over queries meets the coefficient 2 (unknown).
  checkMask({{{"%n", "i32", -50, 50}},
             R"(    %c2 = arith.constant 2 : index
    %twice = arith.muli %c2, %i : index
    %ni = arith.index_cast %n : i32 to index
    %bound = arith.addi %twice, %ni : index
    %keep = arith.cmpi slt, %j, %bound : index)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
               return kv < 2 * q + c[0];
             },
             [](MaskLoopDim loopDim, ArrayRef<int64_t>) {
               return loopDim == MaskLoopDim::KvIdx;
             }});
}

TEST_F(MaskTileBoundsTest, QueryLimitIsExact) {
  // Free of the loop's index over keys: every tile or none.
  checkMask({{{"%limit", "index", -10, 90}},
             "    %keep = arith.cmpi slt, %i, %limit : index",
             [](int64_t, int64_t q, int64_t, ArrayRef<int64_t> c) {
               return q < c[0];
             },
             always});
}

TEST_F(MaskTileBoundsTest, SelectOnHeadIsExact) {
  // Head 2 is causal, the others see every key.
  checkMask({{},
             R"(    %c2 = arith.constant 2 : index
    %isTwo = arith.cmpi eq, %h, %c2 : index
    %causal = arith.cmpi sle, %j, %i : index
    %true = arith.constant true
    %keep = arith.select %isTwo, %causal, %true : i1)",
             [](int64_t head, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return head == 2 ? kv <= q : true;
             },
             always});
}

/// Document ids of the test: token x belongs to document floor(x / 37).
int64_t documentOf(int64_t x) { return floorDiv(x, 37); }

TEST_F(MaskTileBoundsTest, DocumentIdsAreUnknown) {
  MaskCase c{{{"%ids", "memref<1x256xi32>"}},
             R"(    %qd = memref.load %ids[%b, %i] : memref<1x256xi32>
    %kd = memref.load %ids[%b, %j] : memref<1x256xi32>
    %keep = arith.cmpi eq, %qd, %kd : i32)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return documentOf(q) == documentOf(kv);
             },
             nullptr};
  c.unknown = true;
  checkMask(c, 300);
}

TEST_F(MaskTileBoundsTest, CausalDocumentIsSound) {
  checkMask({{{"%ids", "memref<1x256xi32>"}},
             R"(    %qd = memref.load %ids[%b, %i] : memref<1x256xi32>
    %kd = memref.load %ids[%b, %j] : memref<1x256xi32>
    %same = arith.cmpi eq, %qd, %kd : i32
    %causal = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %causal, %same : i1)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return kv <= q && documentOf(q) == documentOf(kv);
             },
             nullptr},
            300);
}

TEST_F(MaskTileBoundsTest, UnsignedComparisonIsUnknown) {
  // kv <= q + off unsigned: a negative q + off compares as huge.
  MaskCase c{{{"%off", "index", -60, 60}},
             R"(    %d = arith.addi %i, %off : index
    %keep = arith.cmpi ule, %j, %d : index)",
             [](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t> c) {
               return uint64_t(kv) <= uint64_t(q + c[0]);
             },
             nullptr};
  c.unknown = true;
  checkMask(c, 300);
}

TEST_F(MaskTileBoundsTest, NoMaskRegionKeepsEverything) {
  MaskCase all{{}, "", nullptr, nullptr};
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      R"(func.func @f(%q: memref<1x4x256x64xbf16>, %o: memref<1x4x256x64xbf16>) {
  fa.attention ins(%q, %q, %q : memref<1x4x256x64xbf16>,
      memref<1x4x256x64xbf16>, memref<1x4x256x64xbf16>)
      outs(%o : memref<1x4x256x64xbf16>)
  return
})",
      &context);
  ASSERT_TRUE(module);
  fa::AttentionOp op;
  module->walk([&](fa::AttentionOp found) { op = found; });
  std::optional<Intervals> r =
      build(op.getMask(), all, MaskLoopDim::KvIdx, {3, 4, 8, 7, 0}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->visitBegin, 0);
  EXPECT_EQ(r->fullBegin, 0);
  EXPECT_EQ(r->fullEnd, 7);
  EXPECT_EQ(r->visitEnd, 7);
}
} // namespace
