//===- AsyncRing.cpp - TMA rings onto nvgpu mbarriers and TMA loads -------===//
//
// `fa.ring_*` (FAAsyncOps.td) become upstream nvgpu ops, which
// convert-nvgpu-to-nvvm lowers further:
//
//   fa.ring_create   nvgpu.mbarrier.create (full, empty: S barriers each),
//                    nvgpu.mbarrier.init by thread 0, fence.proxy.async, a
//                    block barrier
//   fa.ring_produce  nvgpu.mbarrier.try_wait.parity (empty[slot]),
//                    nvgpu.mbarrier.arrive.expect_tx (full[slot], tile bytes),
//                    one nvgpu.tma.async.load per panel (into the slot, on
//                    full[slot]; one load unless the tile is swizzled panels)
//   fa.ring_consume  nvgpu.mbarrier.try_wait.parity (full[slot]), the slot
//   fa.ring_release  nvgpu.mbarrier.arrive (empty[slot])
//
// with slot = i mod S and the parity of round i / S written out here, so the
// phases are visible in the IR (one `divui`/`remui` pair per op; S is a
// constant, so they become shifts for a power of two).
//
// Where upstream does not carry it through in MLIR 22:
//  - nvgpu.tma.create.descriptor is a host-side op: it calls
//    mgpuTensorMapEncodeTiledMemref from MLIR's CUDA runtime wrappers, which
//    cuMemAlloc's a copy of the map in global memory and returns its
//    pointer. The runtime here links no MLIR and passes the map by value
//    (runtime/include/fa/runtime/TensorMap.h), so kernels take the
//    descriptor as a parameter instead.
//  - A `!nvgpu.tensormap.descriptor` kernel parameter: convert-gpu-to-nvvm
//    has no type conversion for it (gpu.func fails to legalise), and
//    gpu.func accepts neither `nvvm.grid_constant` ("must be present only on
//    kernel arguments": it checks for `nvvm.kernel`, which gpu.func may not
//    carry) nor passes `llvm.byval` on to the llvm.func (GPUFuncOpLowering
//    copies a fixed list of argument attributes). So lowerTensorMapParams
//    turns each such parameter into an `!llvm.ptr` cast back to the
//    descriptor, and records its index among the lowered parameters in
//    `fa.grid_constant_params`; after convert-gpu-to-nvvm,
//    --fa-grid-constant-params gives that llvm.func argument `llvm.byval =
//    !llvm.array<128 x i8>`, `llvm.align = 64` and `nvvm.grid_constant`: the
//    PTX parameter `.param .align 64 .b8 k_param_N[128]`, whose generic
//    address (cvta.param) the TMA instructions read.
//  - nvvm.mbarrier.try_wait.parity (what nvgpu.mbarrier.try_wait.parity
//    becomes) has no LLVM intrinsic; it is an inline-PTX loop that only
//    convert-nvvm-to-llvm produces (fa-to-ptx runs it after
//    convert-gpu-to-nvvm; without it the translation to LLVM IR fails).
//
//===----------------------------------------------------------------------===//

#include "AsyncRing.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The suspend-time hint of each mbarrier.try_wait (ns), as upstream's
/// tests use it; the NVVM lowering loops until the phase completes anyway.
constexpr int64_t kWaitTicks = 10'000'000;
/// The alignment of any TMA load's shared destination; a swizzled one needs
/// more (RingProduceOp::getSharedAlignment).
constexpr int64_t kTmaSharedAlignment = 128;

/// What a lowered ring is: its slots' buffer and its two barrier groups.
struct LoweredRing {
  RingType type;
  Value buffers, full, empty;
};

/// Slot and round parity of an iteration, as values.
struct RingPosition {
  Value slot;
  /// (i / S) mod 2 as i1: the parity of the round's phase.
  Value parity;
};

/// i mod S: the slot of iteration i.
Value ringSlot(OpBuilder &b, Location loc, const LoweredRing &ring,
               Value iteration) {
  Value stages = arith::ConstantIndexOp::create(b, loc, ring.type.getStages());
  return arith::RemUIOp::create(b, loc, iteration, stages);
}

RingPosition ringPosition(OpBuilder &b, Location loc, const LoweredRing &ring,
                          Value iteration) {
  Value slot = ringSlot(b, loc, ring, iteration);
  Value stages = arith::ConstantIndexOp::create(b, loc, ring.type.getStages());
  Value round = arith::DivUIOp::create(b, loc, iteration, stages);
  Value roundParity = arith::RemUIOp::create(
      b, loc, round, arith::ConstantIndexOp::create(b, loc, 2));
  Value parity = arith::IndexCastOp::create(b, loc, b.getI1Type(), roundParity);
  return {slot, parity};
}

/// The `[R, C]` view of slot `slot` of the ring's buffer.
Value slotView(OpBuilder &b, Location loc, const LoweredRing &ring,
               Value slot) {
  MemRefType tile = ring.type.getTile();
  SmallVector<OpFoldResult> offsets{slot, b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1),
                                  b.getIndexAttr(tile.getDimSize(0)),
                                  b.getIndexAttr(tile.getDimSize(1))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return memref::SubViewOp::create(b, loc, ring.type.getSlotType(),
                                   ring.buffers, offsets, sizes, strides);
}

void waitParity(OpBuilder &b, Location loc, Value group, Value slot,
                Value parity) {
  Value ticks = arith::ConstantIndexOp::create(b, loc, kWaitTicks);
  nvgpu::MBarrierTryWaitParityOp::create(b, loc, group, parity, ticks, slot);
}

/// TMA writes a slot only at a 128-byte-aligned shared address (slots are
/// whole 128-byte multiples, RingType's verifier), and a swizzled panel
/// must start where the swizzle's pattern does (its panels are whole
/// patterns, RingProduceOp's verifier): the alignment the ring's loads need
/// (RingProduceOp::getSharedAlignment). When the buffers are a workgroup
/// attribution of the kernel, its `llvm.align` must say so; otherwise (a
/// view of dynamic shared memory) their maker answers for it.
LogicalResult checkBufferAlignment(gpu::GPUFuncOp func, RingCreateOp op) {
  ArrayRef<BlockArgument> attributions = func.getWorkgroupAttributions();
  const auto *buffer = llvm::find(attributions, op.getBuffers());
  if (buffer == attributions.end())
    return success();
  int64_t needed = kTmaSharedAlignment;
  RingProduceOp neededBy;
  for (Operation *user : op.getRing().getUsers())
    if (auto produce = dyn_cast<RingProduceOp>(user))
      if (produce.getSharedAlignment() > needed) {
        needed = produce.getSharedAlignment();
        neededBy = produce;
      }
  auto align = dyn_cast_or_null<IntegerAttr>(func.getWorkgroupAttributionAttr(
      buffer - attributions.begin(), "llvm.align"));
  if (align && align.getInt() % needed == 0)
    return success();
  InFlightDiagnostic diag = op.emitOpError()
                            << "expects its buffers " << needed
                            << "-byte aligned (where TMA writes";
  if (neededBy)
    diag << ", each slot starting a "
         << nvgpu::stringifyTensorMapSwizzleKind(
                neededBy.getDescriptor().getType().getSwizzle())
         << " pattern";
  diag << "): give the workgroup attribution llvm.align = " << needed
       << " or a multiple";
  if (neededBy)
    diag.attachNote(neededBy.getLoc()) << "the swizzled load that needs it";
  return diag;
}

/// Two groups of S mbarriers; thread 0 initialises them (full[s] for the
/// producer's one arrival, empty[s] for every consumer's), makes the
/// initialisation visible to the async proxy that TMA's complete_tx uses
/// (fence.proxy.async.shared::cta, as CUDA's TMA examples do), and the block
/// waits for it.
LoweredRing createRing(OpBuilder &b, RingCreateOp op) {
  Location loc = op.getLoc();
  RingType type = op.getRing().getType();
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto groupType =
      nvgpu::MBarrierGroupType::get(b.getContext(), space, type.getStages());
  Value full = nvgpu::MBarrierCreateOp::create(b, loc, groupType);
  Value empty = nvgpu::MBarrierCreateOp::create(b, loc, groupType);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value isFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread,
                            arith::ConstantIndexOp::create(b, loc, 0));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value consumers = arith::ConstantIndexOp::create(b, loc, op.getConsumers());
  for (int64_t s = 0; s < type.getStages(); ++s) {
    Value slot = arith::ConstantIndexOp::create(b, loc, s);
    nvgpu::MBarrierInitOp::create(b, loc, full, one, slot, isFirst);
    nvgpu::MBarrierInitOp::create(b, loc, empty, consumers, slot, isFirst);
  }
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
  return {type, op.getBuffers(), full, empty};
}

/// The `[1, ..., 1, R, W]` destination of panel `panel` of slot `slot`: the
/// `R * W` elements at element `slot * R * C + panel * R * W` of the
/// buffers. nvgpu.tma.async.load requires a destination of the
/// descriptor's box shape (same rank, same sizes), and a panel (columns
/// [p W, p W + W) of every row, stored contiguously) is no subview of the
/// slot's [R, C] view, so this reinterprets the row-major buffers at the
/// panel's offset; only its base address reaches the TMA instruction.
Value panelView(OpBuilder &b, Location loc, const LoweredRing &ring,
                MemRefType box, Value slot, int64_t panel) {
  MemRefType tile = ring.type.getTile();
  ArrayRef<int64_t> shape = box.getShape();
  SmallVector<int64_t> strides = computeSuffixProduct(shape);
  Value slotStart = arith::MulIOp::create(
      b, loc, slot,
      arith::ConstantIndexOp::create(b, loc, tile.getNumElements()));
  Value offset = slotStart;
  if (panel > 0)
    offset = arith::AddIOp::create(
        b, loc, slotStart,
        arith::ConstantIndexOp::create(b, loc, panel * box.getNumElements()));
  auto type = MemRefType::get(
      shape, tile.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides),
      tile.getMemorySpace());
  SmallVector<OpFoldResult> sizes, strideValues;
  for (auto [size, stride] : llvm::zip_equal(shape, strides)) {
    sizes.push_back(b.getIndexAttr(size));
    strideValues.push_back(b.getIndexAttr(stride));
  }
  return memref::ReinterpretCastOp::create(b, loc, type, ring.buffers, offset,
                                           sizes, strideValues);
}

/// Producer: wait until the consumers released the slot's previous round
/// (empty[slot], parity of round - 1 = not the round's parity; in round 0
/// that is the fresh barrier's "phase -1", already complete), announce the
/// whole tile's bytes on full[slot] once, start one load per panel (panel p
/// at column + p W), all completing on full[slot]. TMA counts a box's full
/// size in complete_tx, zero-filled elements included, so the byte count
/// holds at the tensor's tail too.
void produce(OpBuilder &b, const LoweredRing &ring, RingProduceOp op) {
  Location loc = op.getLoc();
  RingPosition at = ringPosition(b, loc, ring, op.getIteration());
  Value previousRound = arith::XOrIOp::create(
      b, loc, at.parity, arith::ConstantIntOp::create(b, loc, 1, 1));
  waitParity(b, loc, ring.empty, at.slot, previousRound);
  Value bytes =
      arith::ConstantIndexOp::create(b, loc, ring.type.getTileBytes());
  nvgpu::MBarrierArriveExpectTxOp::create(b, loc, ring.full, bytes, at.slot,
                                          /*predicate=*/Value());
  MemRefType box = op.getDescriptor().getType().getTensor();
  int64_t panelColumns = box.getShape().back();
  // TMA takes coordinates innermost first; the op's are outermost first.
  SmallVector<Value> coordinates(llvm::reverse(op.getCoordinates()));
  Value column = coordinates.front();
  for (int64_t panel = 0, panels = op.getPanelCount(); panel < panels;
       ++panel) {
    if (panel > 0)
      coordinates.front() = arith::AddIOp::create(
          b, loc, column,
          arith::ConstantIndexOp::create(b, loc, panel * panelColumns));
    nvgpu::TmaAsyncLoadOp::create(
        b, loc, panelView(b, loc, ring, box, at.slot, panel), ring.full,
        op.getDescriptor(), coordinates, at.slot, /*multicastMask=*/Value(),
        /*predicate=*/Value());
  }
}

Value consume(OpBuilder &b, const LoweredRing &ring, RingConsumeOp op) {
  Location loc = op.getLoc();
  RingPosition at = ringPosition(b, loc, ring, op.getIteration());
  waitParity(b, loc, ring.full, at.slot, at.parity);
  return slotView(b, loc, ring, at.slot);
}

void release(OpBuilder &b, const LoweredRing &ring, RingReleaseOp op) {
  Location loc = op.getLoc();
  Value slot = ringSlot(b, loc, ring, op.getIteration());
  auto token = nvgpu::MBarrierTokenType::get(b.getContext());
  nvgpu::MBarrierArriveOp::create(b, loc, token, ring.empty, slot);
}
} // namespace

LogicalResult mlir::fa::lowerAsyncRings(gpu::GPUFuncOp func) {
  SmallVector<RingCreateOp> creates;
  func.walk([&](RingCreateOp op) { creates.push_back(op); });
  IRRewriter b(func.getContext());
  for (RingCreateOp create : creates) {
    if (failed(checkBufferAlignment(func, create)))
      return failure();
    b.setInsertionPoint(create);
    LoweredRing ring = createRing(b, create);
    for (Operation *user :
         llvm::make_early_inc_range(create.getRing().getUsers())) {
      b.setInsertionPoint(user);
      if (auto op = dyn_cast<RingProduceOp>(user)) {
        produce(b, ring, op);
        b.eraseOp(op);
      } else if (auto op = dyn_cast<RingConsumeOp>(user)) {
        b.replaceOp(op, consume(b, ring, op));
      } else if (auto op = dyn_cast<RingReleaseOp>(user)) {
        release(b, ring, op);
        b.eraseOp(op);
      } else {
        return user->emitOpError()
               << "uses a ring, which convert-fa-to-nvgpu lowers only in "
                  "fa.ring_produce, fa.ring_consume and fa.ring_release";
      }
    }
    b.eraseOp(create);
  }
  return success();
}

/// Parameters a gpu.func argument becomes in MLIR's calling convention: a
/// ranked memref its descriptor (two pointers, offset, sizes, strides), an
/// unranked one rank and pointer, anything else one.
static int64_t loweredParamCount(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return 3 + 2 * memref.getRank();
  if (isa<UnrankedMemRefType>(type))
    return 2;
  return 1;
}

LogicalResult mlir::fa::lowerTensorMapParams(gpu::GPUFuncOp func) {
  if (!func.isKernel() &&
      llvm::any_of(func.getArgumentTypes(),
                   llvm::IsaPred<nvgpu::TensorMapDescriptorType>))
    return func.emitOpError()
           << "takes a tensor map, which only a kernel can take (by value, as "
              "a __grid_constant__ parameter)";
  Block &entry = func.getBody().front();
  auto pointer = LLVM::LLVMPointerType::get(func.getContext());
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  SmallVector<int64_t> gridConstantParams;
  SmallVector<Type> inputs;
  int64_t loweredIndex = 0;
  // The entry block's arguments: the parameters, then the attributions.
  for (unsigned i = 0, e = func.getFunctionType().getNumInputs(); i < e; ++i) {
    BlockArgument arg = entry.getArgument(i);
    Type type = arg.getType();
    if (isa<nvgpu::TensorMapDescriptorType>(type)) {
      arg.setType(pointer);
      auto cast = UnrealizedConversionCastOp::create(b, arg.getLoc(), type,
                                                     ValueRange{arg});
      arg.replaceAllUsesExcept(cast.getResult(0), cast);
      gridConstantParams.push_back(loweredIndex);
      type = pointer;
    }
    inputs.push_back(type);
    loweredIndex += loweredParamCount(type);
  }
  if (gridConstantParams.empty())
    return success();
  func.setFunctionType(FunctionType::get(func.getContext(), inputs, {}));
  func->setAttr(kGridConstantParamsAttr,
                b.getDenseI64ArrayAttr(gridConstantParams));
  return success();
}
