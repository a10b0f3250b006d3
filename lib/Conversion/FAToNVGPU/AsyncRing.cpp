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
//   fa.ring_produce_rows
//                    nvgpu.mbarrier.try_wait.parity (empty[slot]) in every
//                    lane, one nvgpu.device_async_copy (cp.async.ca, 4
//                    bytes, zero-filled past seq) per value of the lane,
//                    nvvm.cp.async.mbarrier.arrive noinc (full[slot])
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
//  - nvgpu has no cp.async.mbarrier.arrive, and nvvm's takes the barrier's
//    address, which only nvgpu's type converter can compute from a
//    `!nvgpu.mbarrier.group`; nvgpu.mbarrier.get gives it as an integer,
//    turned back into a shared pointer here (barrierPointer).
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
#include "mlir/IR/ImplicitLocOpBuilder.h"
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

/// The `[R, C]` (a row ring: `[R]`) view of slot `slot` of the ring's
/// buffer.
Value slotView(OpBuilder &b, Location loc, const LoweredRing &ring,
               Value slot) {
  MemRefType tile = ring.type.getTile();
  SmallVector<OpFoldResult> offsets{slot}, sizes{b.getIndexAttr(1)};
  for (int64_t size : tile.getShape()) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(size));
  }
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
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
/// view of dynamic shared memory) their maker answers for it. A row ring
/// is no TMA destination: its 4-byte cp.async needs only the f32 elements'
/// own alignment, which any attribution of them has (wider reads of the
/// slot, as fa.column_broadcast_shared's 8-byte pairs, are their reader's
/// to align for).
LogicalResult checkBufferAlignment(gpu::GPUFuncOp func, RingCreateOp op) {
  if (op.getRing().getType().isRowRing())
    return success();
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

/// Arrivals that complete a full barrier's phase. A tile ring's producer
/// arrives once, with expect_tx of the slot's bytes, and TMA's complete_tx
/// does the rest. A row ring's slot is written by the 32 lanes' cp.async,
/// which no transaction count tracks (only the async proxy's bulk copies
/// do complete_tx), so no expect_tx: each lane instead makes the barrier
/// track its copies with cp.async.mbarrier.arrive.noinc, an arrival that
/// happens when the lane's copies have landed. `noinc` leaves the
/// barrier's pending count as initialised (without it the instruction
/// adds one pending arrival for its own, and the lane would have to arrive
/// again), so the phase completes exactly when all 32 lanes' copies are in.
int64_t fullArrivals(RingType type) {
  return type.isRowRing() ? kThreadsPerWarp : 1;
}

/// Two groups of S mbarriers; thread 0 initialises them (full[s] for the
/// producer's arrivals, empty[s] for every consumer's), makes the
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
  Value producers = arith::ConstantIndexOp::create(b, loc, fullArrivals(type));
  Value consumers = arith::ConstantIndexOp::create(b, loc, op.getConsumers());
  for (int64_t s = 0; s < type.getStages(); ++s) {
    Value slot = arith::ConstantIndexOp::create(b, loc, s);
    nvgpu::MBarrierInitOp::create(b, loc, full, producers, slot, isFirst);
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

/// Waits until the consumers released the slot's previous round
/// (empty[slot], parity of round - 1 = not the round's parity; in round 0
/// that is the fresh barrier's "phase -1", already complete).
void waitForRelease(OpBuilder &b, Location loc, const LoweredRing &ring,
                    const RingPosition &at) {
  Value previousRound = arith::XOrIOp::create(
      b, loc, at.parity, arith::ConstantIntOp::create(b, loc, 1, 1));
  waitParity(b, loc, ring.empty, at.slot, previousRound);
}

/// Producer: wait for the slot's release, announce the whole tile's bytes
/// on full[slot] once, start one load per panel (panel p at column + p W),
/// all completing on full[slot]. TMA counts a box's full size in
/// complete_tx, zero-filled elements included, so the byte count holds at
/// the tensor's tail too.
void produce(OpBuilder &b, const LoweredRing &ring, RingProduceOp op) {
  Location loc = op.getLoc();
  RingPosition at = ringPosition(b, loc, ring, op.getIteration());
  waitForRelease(b, loc, ring, at);
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

/// The shared-memory address of barrier `slot` of `group`, as the
/// `!llvm.ptr<3>` NVVM's barrier ops take where nvgpu has no op of its own:
/// nvgpu.mbarrier.get yields it as an integer (only nvgpu-to-nvvm knows the
/// group's lowered memref), and this turns it back into a pointer.
Value barrierPointer(ImplicitLocOpBuilder &b, Value group, Value slot) {
  Value address = nvgpu::MBarrierGetOp::create(b, b.getI64Type(), group, slot);
  auto shared = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  return LLVM::IntToPtrOp::create(b, shared, address);
}

/// Where `source[batch, head, position]` is, as a memref and indices that
/// nvgpu.device_async_copy accepts: the source itself where its innermost
/// stride is 1 (the copy's rule), else a one-element view at the value's
/// offset (`rowStart` the offset of `source[batch, head, 0]` in `base`).
struct RowSource {
  Value source, batch, head;
  /// Of a source with a non-unit innermost stride: its base buffer, the
  /// offset of its (batch, head) row, and the stride along seq.
  Value base, rowStart, seqStride;

  RowSource(ImplicitLocOpBuilder &b, RingProduceRowsOp op)
      : source(op.getSource()), batch(op.getBatch()), head(op.getHead()) {
    if (cast<MemRefType>(source.getType()).isLastDimUnitStride())
      return;
    auto metadata = memref::ExtractStridedMetadataOp::create(b, source);
    ValueRange strides = metadata.getStrides();
    base = metadata.getBaseBuffer();
    rowStart = arith::AddIOp::create(
        b, metadata.getOffset(),
        arith::AddIOp::create(b, arith::MulIOp::create(b, batch, strides[0]),
                              arith::MulIOp::create(b, head, strides[1])));
    seqStride = strides[2];
  }

  std::pair<Value, SmallVector<Value>> at(ImplicitLocOpBuilder &b,
                                          Value position) const {
    if (!base)
      return {source, {batch, head, position}};
    Value offset = arith::AddIOp::create(
        b, rowStart, arith::MulIOp::create(b, position, seqStride));
    auto type = cast<MemRefType>(source.getType());
    auto viewType = MemRefType::get(
        {1}, type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}),
        type.getMemorySpace());
    Value view = memref::ReinterpretCastOp::create(
        b, viewType, base, OpFoldResult(offset), {b.getIndexAttr(1)},
        {b.getIndexAttr(1)});
    return {view, {arith::ConstantIndexOp::create(b, 0)}};
  }
};

/// Row-ring producer, run by every lane of one warp: wait for the slot's
/// release, then lane l starts the 4-byte copies of values l, l + 32, ...
/// of the slot (source[batch, head, row + e] into element e; past seq the
/// source index is clamped to a valid one and no byte is read, so the
/// value arrives as zero), and full[slot] tracks them (fullArrivals).
///
/// The positions are 32-bit: the producer warp runs on few registers
/// (setmaxnreg), and 64-bit positions and bounds made its loops spill. A
/// sequence has fewer than 2^32 - tile rows.
void produceRows(OpBuilder &builder, const LoweredRing &ring,
                 RingProduceRowsOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  RingPosition at = ringPosition(b, b.getLoc(), ring, op.getIteration());
  waitForRelease(b, b.getLoc(), ring, at);
  RowSource source(b, op);
  Type i32 = b.getI32Type();
  auto narrow = [&](Value index) {
    return arith::IndexCastUIOp::create(b, i32, index);
  };
  auto constant = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, i32, value);
  };
  Value seq = narrow(memref::DimOp::create(b, op.getSource(), 2));
  Value last = arith::SubIOp::create(b, seq, constant(1));
  Value row = narrow(op.getRow());
  Value whole = arith::ConstantIndexOp::create(b, 1);
  Value none = arith::ConstantIndexOp::create(b, 0);
  Value lane = gpu::LaneIdOp::create(b, /*upperBound=*/nullptr);
  for (int64_t first = 0, length = ring.type.getTile().getDimSize(0);
       first < length; first += kThreadsPerWarp) {
    Value element =
        first == 0 ? lane
                   : arith::AddIOp::create(
                         b, lane, arith::ConstantIndexOp::create(b, first));
    Value position = arith::AddIOp::create(b, row, narrow(element));
    Value inside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, seq);
    Value clamped = arith::IndexCastUIOp::create(
        b, b.getIndexType(), arith::MinUIOp::create(b, position, last));
    auto [from, indices] = source.at(b, clamped);
    // 4 bytes: cp.async.ca (only 16-byte copies may bypass L1).
    nvgpu::DeviceAsyncCopyOp::create(
        b, ring.buffers, ValueRange{at.slot, element}, from, indices,
        b.getIndexAttr(1), arith::SelectOp::create(b, inside, whole, none),
        /*bypassL1=*/UnitAttr());
  }
  NVVM::CpAsyncMBarrierArriveOp::create(
      b, barrierPointer(b, ring.full, at.slot), /*noinc=*/true);
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
      } else if (auto op = dyn_cast<RingProduceRowsOp>(user)) {
        produceRows(b, ring, op);
        b.eraseOp(op);
      } else if (auto op = dyn_cast<RingConsumeOp>(user)) {
        b.replaceOp(op, consume(b, ring, op));
      } else if (auto op = dyn_cast<RingReleaseOp>(user)) {
        release(b, ring, op);
        b.eraseOp(op);
      } else {
        return user->emitOpError()
               << "uses a ring, which convert-fa-to-nvgpu lowers only in "
                  "fa.ring_produce, fa.ring_produce_rows, fa.ring_consume and "
                  "fa.ring_release";
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
