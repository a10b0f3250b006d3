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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
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
  /// The capture %ids's row, non-decreasing document ids drawn for each
  /// trial (`keeps` reads them); only positions inside it are checked.
  std::shared_ptr<std::vector<int64_t>> documents;
  /// Whether the analysis is told the ids do not decrease.
  bool promiseSorted = true;
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

  // With a table of documents, positions outside it have no meaning: they
  // count for no claim, and a tile holding one is not full.
  int64_t length = c.documents ? int64_t(c.documents->size()) : -1;
  auto inSequence = [&](int64_t position) {
    return length < 0 || (0 <= position && position < length);
  };
  std::vector<int64_t> nonEmpty, full;
  int64_t elements = g.width * g.fixedExtent;
  for (int64_t t = 0; t < g.numTiles; ++t) {
    int64_t kept = 0, checked = 0;
    for (int64_t l = t * g.width; l < (t + 1) * g.width; ++l)
      for (int64_t f = g.fixedBegin; f < g.fixedBegin + g.fixedExtent; ++f) {
        if (!inSequence(l) || !inSequence(f))
          continue;
        bool kvLoop = loopDim == MaskLoopDim::KvIdx;
        kept += c.keeps(g.head, kvLoop ? f : l, kvLoop ? l : f, captures);
        ++checked;
      }
    bool inFull = r.fullBegin <= t && t < r.fullEnd;
    bool inVisit = r.visitBegin <= t && t < r.visitEnd;
    if (inFull && kept != checked)
      return fail("tile " + std::to_string(t) + " reported full keeps " +
                  std::to_string(kept) + " of " + std::to_string(checked));
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
  // Rows past the sequence make no tile full in the reference, whatever the
  // analysis (rightly) says of them: compare the visited range only.
  bool fixedInSequence =
      inSequence(g.fixedBegin) && inSequence(g.fixedBegin + g.fixedExtent - 1);
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
  if (fixedInSequence && !matches(full, r.fullBegin, r.fullEnd))
    return fail("full range is not the full tiles");
  return testing::AssertionSuccess();
}

/// Runs the index code buildMaskTileIntervals builds (arith, scf.while,
/// memref.load/dim of the one table `ids`, row 0), to read intervals that
/// depend on the table's contents. Loads must stay inside the table.
class Interpreter {
public:
  explicit Interpreter(ArrayRef<int64_t> ids) : ids(ids) {}

  /// The values `block`'s terminator returns, or an error.
  FailureOr<SmallVector<int64_t>> run(Block &block, ArrayRef<int64_t> args) {
    for (auto [arg, value] : llvm::zip(block.getArguments(), args))
      values[arg] = value;
    for (Operation &op : block.without_terminator())
      if (failed(step(op)))
        return failure();
    SmallVector<int64_t> results;
    for (Value operand : block.getTerminator()->getOperands())
      results.push_back(values.lookup(operand));
    return results;
  }

  std::string error;

private:
  LogicalResult fail(Operation &op, const std::string &why) {
    llvm::raw_string_ostream os(error);
    os << why << ": " << op;
    return failure();
  }

  static bool compare(arith::CmpIPredicate predicate, int64_t x, int64_t y) {
    using P = arith::CmpIPredicate;
    uint64_t ux = x, uy = y;
    switch (predicate) {
    case P::eq:
      return x == y;
    case P::ne:
      return x != y;
    case P::slt:
      return x < y;
    case P::sle:
      return x <= y;
    case P::sgt:
      return x > y;
    case P::sge:
      return x >= y;
    case P::ult:
      return ux < uy;
    case P::ule:
      return ux <= uy;
    case P::ugt:
      return ux > uy;
    case P::uge:
      return ux >= uy;
    }
    return false;
  }

  LogicalResult step(Operation &op) {
    auto in = [&](unsigned i) { return values.lookup(op.getOperand(i)); };
    auto set = [&](int64_t value) {
      values[op.getResult(0)] = value;
      return success();
    };
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto attr = dyn_cast<IntegerAttr>(constant.getValue());
      if (!attr)
        return fail(op, "not an integer constant");
      return set(attr.getType().isInteger(1) ? attr.getValue().getZExtValue()
                                             : attr.getValue().getSExtValue());
    }
    if (isa<arith::AddIOp>(op))
      return set(in(0) + in(1));
    if (isa<arith::SubIOp>(op))
      return set(in(0) - in(1));
    if (isa<arith::MulIOp>(op))
      return set(in(0) * in(1));
    if (isa<arith::MinSIOp>(op))
      return set(std::min(in(0), in(1)));
    if (isa<arith::MaxSIOp>(op))
      return set(std::max(in(0), in(1)));
    if (isa<arith::FloorDivSIOp>(op))
      return set(floorDiv(in(0), in(1)));
    if (isa<arith::CeilDivSIOp>(op))
      return set(-floorDiv(-in(0), in(1)));
    if (isa<arith::DivUIOp>(op))
      return set(int64_t(uint64_t(in(0)) / uint64_t(in(1))));
    if (isa<arith::AndIOp>(op))
      return set(in(0) & in(1));
    if (isa<arith::OrIOp>(op))
      return set(in(0) | in(1));
    if (isa<arith::XOrIOp>(op))
      return set(in(0) ^ in(1));
    if (isa<arith::IndexCastOp, arith::ExtSIOp>(op))
      return set(in(0));
    if (auto cmp = dyn_cast<arith::CmpIOp>(op))
      return set(compare(cmp.getPredicate(), in(0), in(1)));
    if (isa<arith::SelectOp>(op))
      return set(in(0) ? in(1) : in(2));
    if (auto dim = dyn_cast<memref::DimOp>(op))
      return set(in(1) == 0 ? 1 : int64_t(ids.size()));
    if (isa<memref::LoadOp>(op)) {
      if (in(1) != 0 || in(2) < 0 || in(2) >= int64_t(ids.size()))
        return fail(op, "load out of the table");
      return set(ids[in(2)]);
    }
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      SmallVector<int64_t> state;
      for (Value init : loop.getInits())
        state.push_back(values.lookup(init));
      for (int iteration = 0;; ++iteration) {
        if (iteration > 1000)
          return fail(op, "loop does not end");
        FailureOr<SmallVector<int64_t>> before =
            run(loop.getBefore().front(), state);
        if (failed(before))
          return failure();
        state.assign(before->begin() + 1, before->end());
        if (!before->front())
          break;
        FailureOr<SmallVector<int64_t>> after =
            run(loop.getAfter().front(), state);
        if (failed(after))
          return failure();
        state = *after;
      }
      for (auto [result, value] : llvm::zip(loop.getResults(), state))
        values[result] = value;
      return success();
    }
    return fail(op, "no rule for");
  }

  ArrayRef<int64_t> ids;
  DenseMap<Value, int64_t> values;
};

class MaskTileBoundsTest : public ::testing::Test {
protected:
  MaskTileBoundsTest() {
    context.loadDialect<fa::FADialect, func::FuncDialect, arith::ArithDialect,
                        memref::MemRefDialect, scf::SCFDialect>();
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

  /// The intervals built for `mask` with constant operands: folded, or
  /// when they read the table of documents, run.
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
        index(g.numTiles), index(0), index(g.head), captures,
        /*documentIdsSorted=*/c.documents && c.promiseSorted);
    Value values[] = {r.visitBegin, r.fullBegin, r.fullEnd, r.visitEnd};
    if (c.documents) {
      func::ReturnOp::create(b, values);
      Interpreter interpreter(*c.documents);
      FailureOr<SmallVector<int64_t>> out =
          interpreter.run(*entry, /*args=*/{0});
      if (failed(out)) {
        ADD_FAILURE() << interpreter.error;
        return std::nullopt;
      }
      return Intervals{(*out)[0], (*out)[1], (*out)[2], (*out)[3]};
    }
    // Without a table every value the analysis builds folds.
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
        if (c.documents)
          drawDocuments(*c.documents, draw);
        std::optional<Intervals> r =
            build(op.getMask(), c, loopDim, g, captures);
        ASSERT_TRUE(r) << "intervals did not fold to constants or run: "
                       << describe(loopDim, g, captures, {});
        ASSERT_TRUE(checkIntervals(c, loopDim, g, captures, *r));
      }
    }
  }

  /// Non-decreasing ids of 1 to 120 positions: one document, documents of
  /// one token, and between.
  template <typename Draw>
  static void drawDocuments(std::vector<int64_t> &ids, Draw &draw) {
    ids.assign(draw(1, 120), 0);
    int64_t changePercent = std::array{0, 3, 20, 60, 100}[draw(0, 4)];
    int64_t id = draw(0, 3);
    for (int64_t &slot : ids) {
      if (draw(1, 100) <= changePercent)
        id += draw(1, 2);
      slot = id;
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

/// `result` = ids[b, q_idx] == ids[b, kv_idx], as
/// fa-expand-attention-variants writes it.
std::string sameDocument(const std::string &result) {
  return R"(    %qd = memref.load %ids[%b, %i] : memref<1x?xi32>
    %kd = memref.load %ids[%b, %j] : memref<1x?xi32>
    )" + result +
         " = arith.cmpi eq, %qd, %kd : i32\n";
}

TEST_F(MaskTileBoundsTest, DocumentsAreExact) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  MaskCase c{{{"%ids", "memref<1x?xi32>"}},
             sameDocument("%keep"),
             [ids](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return (*ids)[q] == (*ids)[kv];
             },
             always};
  c.documents = ids;
  checkMask(c, 600);
}

TEST_F(MaskTileBoundsTest, DocumentsWithoutThePromiseAreUnknown) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  MaskCase c{{{"%ids", "memref<1x?xi32>"}},
             sameDocument("%keep"),
             [ids](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return (*ids)[q] == (*ids)[kv];
             },
             nullptr};
  c.documents = ids;
  c.promiseSorted = false;
  c.unknown = true;
  checkMask(c, 200);
}

TEST_F(MaskTileBoundsTest, CausalDocumentsAreSound) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  MaskCase c{{{"%ids", "memref<1x?xi32>"}},
             sameDocument("%same") +
                 R"(    %causal = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %causal, %same : i1)",
             [ids](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return kv <= q && (*ids)[q] == (*ids)[kv];
             },
             nullptr};
  c.documents = ids;
  checkMask(c, 600);
}

TEST_F(MaskTileBoundsTest, DocumentsOfShiftedPositionsAreUnknown) {
  // ids[q_idx + 1] == ids[kv_idx]: not the document pattern.
  auto ids = std::make_shared<std::vector<int64_t>>();
  MaskCase c{{{"%ids", "memref<1x?xi32>"}},
             R"(    %c1 = arith.constant 1 : index
    %next = arith.addi %i, %c1 : index
    %qd = memref.load %ids[%b, %next] : memref<1x?xi32>
    %kd = memref.load %ids[%b, %j] : memref<1x?xi32>
    %keep = arith.cmpi eq, %qd, %kd : i32)",
             [ids](int64_t, int64_t q, int64_t kv, ArrayRef<int64_t>) {
               return q + 1 < int64_t(ids->size()) &&
                      (*ids)[q + 1] == (*ids)[kv];
             },
             nullptr};
  c.documents = ids;
  c.unknown = true;
  checkMask(c, 200);
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
