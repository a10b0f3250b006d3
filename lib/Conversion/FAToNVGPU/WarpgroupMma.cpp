//===- WarpgroupMma.cpp - Hopper warpgroup MMA (wgmma) helpers ------------===//
//
// MLIR's nvvm.wgmma.mma_async reads A only from shared memory, and a product
// issued as separate ops leaves LLVM free to read the accumulator between
// the asynchronous MMA and its wait. The products here are therefore inline
// asm in the form CUTLASS and FlashAttention-3 use: one block issues a whole
// product (fence, one wgmma per k step, commit), another waits for it with
// the accumulator as tied operands, so that every read of the results comes
// after the wait while other work (another product, the softmax) can run
// between the two.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace {
/// Descriptor fields hold byte quantities in 16-byte units.
constexpr int64_t kDescriptorUnit = 16;
constexpr int64_t kAddressMask = (1 << 18) - 1;
constexpr int64_t kSwizzle128B = 1;

Value constantI64(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), value);
}
} // namespace

Value mlir::fa::sharedMatrixDescriptor(ImplicitLocOpBuilder &b, Value tile,
                                       Value byteOffset, int64_t leadingBytes,
                                       int64_t strideBytes) {
  auto type = cast<MemRefType>(tile.getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  // The tile's address: its buffer's aligned pointer plus its offset (slots
  // of multi-buffered tiles are subviews).
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tile);
  Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, tile);
  Value offsetBytes = arith::MulIOp::create(
      b, metadata.getOffset(), arith::ConstantIndexOp::create(b, elementBytes));
  Value address = arith::AddIOp::create(
      b, arith::AddIOp::create(b, pointer, offsetBytes), byteOffset);
  Value address64 = arith::IndexCastUIOp::create(b, b.getI64Type(), address);
  Value start = arith::ShRUIOp::create(
      b, arith::AndIOp::create(b, address64, constantI64(b, kAddressMask)),
      constantI64(b, 4));
  int64_t fields = (leadingBytes / kDescriptorUnit) << 16 |
                   (strideBytes / kDescriptorUnit) << 32 | kSwizzle128B << 62;
  return arith::OrIOp::create(b, start, constantI64(b, fields));
}

namespace {
/// An inline asm block with side effects and a memory clobber, returning
/// `results` f32 values.
SmallVector<Value> f32Asm(ImplicitLocOpBuilder &b, int64_t results,
                          ValueRange operands, StringRef text,
                          SmallVector<std::string> constraints) {
  constraints.push_back("~{memory}");
  SmallVector<Type> resultTypes(results, b.getF32Type());
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), resultTypes);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, resultType, operands, text, llvm::join(constraints, ","),
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> values;
  for (int64_t i = 0; i < results; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, asmOp.getResult(0), i));
  return values;
}

/// Output constraints for `count` f32 values, each tied to the input of the
/// same number.
SmallVector<std::string> tiedF32(int64_t count) {
  SmallVector<std::string> constraints(count, "=f");
  for (int64_t i = 0; i < count; ++i)
    constraints.push_back(std::to_string(i));
  return constraints;
}
} // namespace

SmallVector<Value>
mlir::fa::issueWarpgroupMma(ImplicitLocOpBuilder &b, StringRef elementType,
                            int64_t n, bool mnMajorB, ArrayRef<Value> acc,
                            ArrayRef<WarpgroupMmaStep> steps) {
  int64_t accValues = n / 2;
  bool accumulate = !acc.empty();
  assert((!accumulate || static_cast<int64_t>(acc.size()) == accValues) &&
         "one accumulator value per output register");
  // Operands: the accumulator outputs $0.. (tied inputs when accumulating),
  // then per step the A descriptor or registers and the B descriptor, then
  // the scale of the first step (0: start from zero) and a constant 1.
  SmallVector<Value> operands(acc.begin(), acc.end());
  SmallVector<std::string> constraints =
      accumulate ? tiedF32(accValues)
                 : SmallVector<std::string>(accValues, "=f");
  // Inputs are numbered after all outputs, tied ones included.
  int64_t next = static_cast<int64_t>(constraints.size());
  auto operand = [&](Value value, StringRef constraint) {
    operands.push_back(value);
    constraints.push_back(constraint.str());
    return "$" + std::to_string(next++);
  };
  SmallVector<std::string> stepText;
  for (const WarpgroupMmaStep &step : steps) {
    std::string a;
    if (step.aDescriptor) {
      a = operand(step.aDescriptor, "l");
    } else {
      SmallVector<std::string> regs;
      for (Value reg : step.aRegisters)
        regs.push_back(operand(reg, "r"));
      a = "{" + llvm::join(regs, ", ") + "}";
    }
    std::string bDesc = operand(step.bDescriptor, "l");
    stepText.push_back(a + ", " + bDesc);
  }
  std::string firstScale = operand(
      arith::ConstantIntOp::create(b, b.getI32Type(), accumulate ? 1 : 0), "r");
  std::string one =
      operand(arith::ConstantIntOp::create(b, b.getI32Type(), 1), "r");

  SmallVector<std::string> accRegs;
  for (int64_t i = 0; i < accValues; ++i)
    accRegs.push_back("$" + std::to_string(i));
  std::string accList = "{" + llvm::join(accRegs, ", ") + "}";
  // Immediates: scale-a, scale-b (1: no negation), then transpose-a (only
  // for a shared A) and transpose-b.
  std::string asmText = "{\n.reg .pred first, rest;\n"
                        "setp.ne.b32 first, " +
                        firstScale + ", 0;\nsetp.ne.b32 rest, " + one +
                        ", 0;\nwgmma.fence.sync.aligned;\n";
  for (auto [i, text] : llvm::enumerate(stepText)) {
    bool sharedA = static_cast<bool>(steps[i].aDescriptor);
    asmText += llvm::formatv(
        "wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{1}.{1} {2}, {3}, {4}, "
        "1, 1, {5}{6};\n",
        n, elementType, accList, text, i == 0 ? "first" : "rest",
        sharedA ? "0, " : "", mnMajorB ? 1 : 0);
  }
  asmText += "wgmma.commit_group.sync.aligned;\n}";
  return f32Asm(b, accValues, operands, asmText, constraints);
}

SmallVector<Value> mlir::fa::waitForWarpgroupMma(ImplicitLocOpBuilder &b,
                                                 ArrayRef<Value> issued,
                                                 int64_t pending) {
  std::string text =
      llvm::formatv("wgmma.wait_group.sync.aligned {0};", pending).str();
  return f32Asm(b, issued.size(), issued, text, tiedF32(issued.size()));
}
