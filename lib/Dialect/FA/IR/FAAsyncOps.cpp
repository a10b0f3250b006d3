//===- FAAsyncOps.cpp - The TMA ring: type and verifiers ------------------===//
//
// What the verifiers hold the ring to is what TMA and the mbarriers accept:
// a slot is one box of the tensor map (its rank 2 to 5, every dimension but
// the last two 1) or, swizzled, a whole number of boxes one swizzle span
// wide (panels, each a whole number of the swizzle's pattern); a box
// dimension spans at most 256 elements, a box row is a whole number of 16
// bytes, the tail of a tensor arrives zero-filled (oob = zero), and the
// slots fit Hopper's shared memory. A row ring's slot is what one warp's
// cp.async fills: R f32 values, R a whole number of 32 lanes, up to 256.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/IR/Swizzle.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fa;

#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FA/IR/FAOpsTypes.cpp.inc"

void FADialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "fa/Dialect/FA/IR/FAOpsTypes.cpp.inc"
      >();
}

/// The most shared memory a Hopper block may use (cudaFuncSetAttribute's
/// limit on sm_90), which the ring's slots and barriers must fit.
static constexpr int64_t kMaxRingSharedBytes = 227 * 1024;
/// Bytes of one mbarrier; a slot has two.
static constexpr int64_t kMbarrierBytes = 8;
/// TMA's largest box dimension (cuTensorMapEncodeTiled's boxDim limit).
static constexpr int64_t kMaxBoxDim = 256;
/// TMA writes shared memory at 128-byte-aligned addresses, so each slot of
/// a ring is a whole number of 128 bytes.
static constexpr int64_t kSlotGranule = 128;
/// TMA moves whole 16-byte units along a box row.
static constexpr int64_t kBoxRowGranule = 16;

/// The longest row a row ring holds: a query tile's statistics (block_m is
/// at most 256), at most 8 copies per lane.
static constexpr int64_t kMaxRingRow = 256;

/// A row ring's tile: `R` f32 values, `R` a multiple of 32 up to 256.
static LogicalResult verifyRowTile(function_ref<InFlightDiagnostic()> emitError,
                                   MemRefType tile) {
  if (!tile.getElementType().isF32())
    return emitError() << "expects a 1-D tile (a row ring) of f32, got "
                       << tile.getElementType();
  int64_t length = tile.getDimSize(0);
  // One warp fills the slot, each lane copying every 32nd value: the length
  // is a whole number of warp widths.
  if (length % kThreadsPerWarp != 0 || length > kMaxRingRow)
    return emitError() << "expects a row ring's tile of a multiple of "
                       << kThreadsPerWarp << " values (one per lane of a warp) "
                       << "and at most " << kMaxRingRow << ", got " << length;
  return success();
}

LogicalResult RingType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stages, MemRefType tile) {
  if (stages < 1)
    return emitError() << "expects at least 1 stage, got " << stages;
  if ((tile.getRank() != 1 && tile.getRank() != 2) || !tile.hasStaticShape())
    return emitError()
           << "expects a static 2-D tile or a static 1-D row of f32, got "
           << tile;
  if (tile.getRank() == 1 && failed(verifyRowTile(emitError, tile)))
    return failure();
  if (!isa<Float16Type, BFloat16Type, Float32Type>(tile.getElementType()))
    return emitError() << "expects a tile of f16, bf16 or f32, got "
                       << tile.getElementType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(tile))
    return emitError()
           << "expects a tile in the workgroup (shared) address space, got "
           << tile;
  int64_t tileBytes = tile.getNumElements() * tile.getElementTypeBitWidth() / 8;
  if (tileBytes % kSlotGranule != 0)
    return emitError() << "expects a tile of a multiple of " << kSlotGranule
                       << " bytes, so that every slot is aligned for TMA, got "
                       << tileBytes;
  int64_t bytes = stages * (tileBytes + 2 * kMbarrierBytes);
  if (bytes > kMaxRingSharedBytes)
    return emitError() << "expects " << stages << " stages of " << tileBytes
                       << " bytes and their mbarriers (" << bytes
                       << " bytes) to fit the " << kMaxRingSharedBytes
                       << " bytes of shared memory of a block";
  return success();
}

int64_t RingType::getTileBytes() const {
  return getTile().getNumElements() * getTile().getElementTypeBitWidth() / 8;
}

MemRefType RingType::getSlotType() const {
  MemRefType tile = getTile();
  SmallVector<int64_t> strides{1};
  if (!isRowRing())
    strides.insert(strides.begin(), tile.getDimSize(1));
  auto layout =
      StridedLayoutAttr::get(getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(tile.getShape(), tile.getElementType(), layout,
                         tile.getMemorySpace());
}

LogicalResult RingCreateOp::verify() {
  MemRefType buffers = getBuffers().getType();
  RingType ring = getRing().getType();
  MemRefType tile = ring.getTile();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(buffers))
    return emitOpError(
        "expects buffers in the workgroup (shared) address space");
  if (!buffers.getLayout().isIdentity())
    return emitOpError("expects buffers with the identity (row-major) layout");
  SmallVector<int64_t> expected{ring.getStages()};
  llvm::append_range(expected, tile.getShape());
  if (buffers.getShape() != ArrayRef<int64_t>(expected) ||
      buffers.getElementType() != tile.getElementType())
    return emitOpError() << "expects buffers of " << ring.getStages()
                         << " slots of the ring's tile " << tile << ", got "
                         << buffers;
  return success();
}

/// TMA's largest tensor rank (cuTensorMapEncodeTiled's tensorRank limit).
static constexpr int64_t kMaxTmaRank = 5;

/// Bytes of a swizzle span (a box row under it), 0 without swizzle.
static int64_t swizzleSpanBytes(nvgpu::TensorMapSwizzleKind swizzle) {
  switch (swizzle) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    return 0;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    return 32;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    return 64;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    return 128;
  }
  llvm_unreachable("unknown TMA swizzle kind");
}

/// The descriptor's box against the ring's tile `[R, C]`: `[1, ..., 1, R, W]`
/// of the tile's element type, each dimension at most 256 elements, the row
/// a whole number of 16 bytes. Unswizzled, `W = C` (one load fills the
/// slot row-major). Swizzled, `W` elements are exactly the swizzle span
/// (nvgpu.tma.async.load requires it), `C` is `k W` (the slot holds `k`
/// panels) and a panel, `R` rows of a span, is a whole number of the
/// swizzle's pattern (8 spans), so that every panel starts where its
/// pattern does.
static LogicalResult verifyBox(RingProduceOp op, MemRefType tile,
                               nvgpu::TensorMapDescriptorType descriptor) {
  MemRefType box = descriptor.getTensor();
  int64_t rank = box.getRank();
  if (rank < 2 || rank > kMaxTmaRank)
    return op.emitOpError() << "expects a descriptor of rank 2 to "
                            << kMaxTmaRank << " (TMA), got " << rank;
  if (box.getElementType() != tile.getElementType())
    return op.emitOpError()
           << "expects the descriptor's box " << box
           << " to have the element type of the ring's tile " << tile;
  ArrayRef<int64_t> shape = box.getShape();
  if (llvm::any_of(shape.drop_back(2), [](int64_t size) { return size != 1; }))
    return op.emitOpError()
           << "expects the descriptor's box " << box
           << " to be 1 in every dimension but the last two (one [rows, "
              "columns] tile per load)";
  for (int64_t size : shape)
    if (size > kMaxBoxDim)
      return op.emitOpError() << "expects box dimensions of at most "
                              << kMaxBoxDim << " elements (TMA), got " << size;
  int64_t rows = tile.getDimSize(0), columns = tile.getDimSize(1);
  if (shape[rank - 2] != rows)
    return op.emitOpError()
           << "expects the descriptor's box " << box << " to have the " << rows
           << " rows of the ring's tile " << tile;
  int64_t boxColumns = shape[rank - 1];
  int64_t elementBytes = box.getElementTypeBitWidth() / 8;
  int64_t rowBytes = boxColumns * elementBytes;
  if (rowBytes % kBoxRowGranule != 0)
    return op.emitOpError()
           << "expects a box row of a multiple of " << kBoxRowGranule
           << " bytes (TMA's unit), got " << rowBytes;
  nvgpu::TensorMapSwizzleKind swizzle = descriptor.getSwizzle();
  int64_t span = swizzleSpanBytes(swizzle);
  StringRef swizzleName = nvgpu::stringifyTensorMapSwizzleKind(swizzle);
  if (span == 0) {
    if (boxColumns != columns)
      return op.emitOpError()
             << "expects the descriptor's box row of " << boxColumns
             << " elements to be the ring tile's row of " << columns
             << " without swizzle (panels are for swizzled tiles)";
    return success();
  }
  if (rowBytes != span)
    return op.emitOpError()
           << "expects the descriptor's box row (" << rowBytes
           << " bytes) to be the " << span << "-byte span of " << swizzleName
           << " (nvgpu.tma.async.load's rule; a wider tile row is loaded as "
              "panels of one span each)";
  if (columns % boxColumns != 0)
    return op.emitOpError()
           << "expects the ring tile's row of " << columns
           << " elements to be a whole number of panels of the box's "
           << boxColumns << " columns";
  int64_t panelBytes = rows * span;
  int64_t pattern = kSwizzleRows * span;
  if (panelBytes % pattern != 0)
    return op.emitOpError()
           << "expects each panel (" << rows << " rows of " << span
           << " bytes, " << panelBytes << " bytes) to be a whole number of "
           << swizzleName << "'s " << pattern
           << "-byte pattern, so that every panel starts " << pattern
           << "-byte aligned";
  return success();
}

LogicalResult RingProduceOp::verify() {
  if (getRing().getType().isRowRing())
    return emitOpError("expects a ring of 2-D tiles (TMA); a row ring is "
                       "filled by fa.ring_produce_rows");
  MemRefType tile = getRing().getType().getTile();
  nvgpu::TensorMapDescriptorType descriptor = getDescriptor().getType();
  if (failed(verifyBox(*this, tile, descriptor)))
    return failure();
  if (descriptor.getOob() != nvgpu::TensorMapOOBKind::OOB_ZERO)
    return emitOpError("expects a descriptor with oob = zero: rows past the "
                       "tensor's end must arrive as zeros");
  if (descriptor.getInterleave() !=
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE)
    return emitOpError("expects a descriptor with interleave = none");
  int64_t rank = descriptor.getTensor().getRank();
  if (static_cast<int64_t>(getCoordinates().size()) != rank)
    return emitOpError() << "expects " << rank
                         << " coordinates (one per box dimension), got "
                         << getCoordinates().size();
  return success();
}

int64_t RingProduceOp::getSharedAlignment() {
  return std::max(kSlotGranule,
                  kSwizzleRows *
                      swizzleSpanBytes(getDescriptor().getType().getSwizzle()));
}

int64_t RingProduceOp::getPanelCount() {
  return getRing().getType().getTile().getDimSize(1) /
         getDescriptor().getType().getTensor().getShape().back();
}

LogicalResult RingProduceRowsOp::verify() {
  RingType ring = getRing().getType();
  if (!ring.isRowRing())
    return emitOpError() << "expects a row ring (a 1-D f32 tile), got "
                         << ring.getTile()
                         << " (a ring of 2-D tiles is filled by TMA, "
                            "fa.ring_produce)";
  auto source = cast<MemRefType>(getSource().getType());
  if (source.getRank() != 3 || !source.getElementType().isF32())
    return emitOpError() << "expects a rank-3 f32 source ([batch, heads, "
                            "seq]), got "
                         << source;
  return success();
}

LogicalResult RingConsumeOp::verify() {
  MemRefType expected = getRing().getType().getSlotType();
  if (getSlot().getType() != expected)
    return emitOpError() << "expects the slot type " << expected << ", got "
                         << getSlot().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Ordered accumulation into global memory
//===----------------------------------------------------------------------===//

/// The accumulator layout (TileLayout.h) spreads 16-row slices over warps
/// and 8-column blocks over each warp's lanes.
static constexpr int64_t kWarpSliceRows = 16;
static constexpr int64_t kLaneBlockColumns = 8;

/// The block-collective ops hold a barrier of the computing threads (and
/// accumulate_tile's tile is theirs): the producer branch of a
/// warp-specialised kernel (the `then` of its scf.if marked fa.warp_roles)
/// has neither.
static LogicalResult verifyNotInProducerBranch(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (parent->hasAttr(kWarpRolesAttr) && parent->getNumRegions() > 0 &&
        parent->getRegion(0).isAncestor(op->getParentRegion()))
      return op->emitOpError()
             << "must not be in the producer branch of a warp-specialised "
                "kernel (the then-region of the scf.if marked "
             << kWarpRolesAttr << ")";
  return success();
}

LogicalResult AccumulateTileOp::verify() {
  VectorType value = getValue().getType();
  int64_t rows = value.getDimSize(0), cols = value.getDimSize(1);
  if (rows % kWarpSliceRows != 0)
    return emitOpError() << "expects value rows (" << rows
                         << ") to be a multiple of " << kWarpSliceRows
                         << " (one slice per warp)";
  if (cols % kLaneBlockColumns != 0)
    return emitOpError() << "expects value columns (" << cols
                         << ") to be a multiple of " << kLaneBlockColumns;
  int64_t headDim = getAccum().getType().getDimSize(3);
  int64_t tileHeadDim = getTransposed() ? rows : cols;
  if (!ShapedType::isDynamic(headDim) && tileHeadDim != headDim)
    return emitOpError() << "expects " << (getTransposed() ? "transposed " : "")
                         << "value to have " << headDim << " "
                         << (getTransposed() ? "rows" : "columns")
                         << " (accum's head_dim), got " << tileHeadDim;
  return verifyNotInProducerBranch(*this);
}

// A warp's turns (`warp`) may be a writer warp's in the producer branch.
LogicalResult OrderedWaitOp::verify() {
  return getWarp() ? success() : verifyNotInProducerBranch(*this);
}

LogicalResult OrderedSignalOp::verify() {
  return getWarp() ? success() : verifyNotInProducerBranch(*this);
}

/// A buffer of 128-byte-swizzled boxes (fa.stage_accumulator swizzled,
/// fa.accumulate_boxes_async): static, row-major, whole 128-byte panels of
/// whole 8-row swizzle periods.
static LogicalResult verifySwizzledBoxes(Operation *op, MemRefType buffer) {
  if (!buffer.hasStaticShape() || !buffer.getLayout().isIdentity() ||
      buffer.getDimSize(1) % kF32PerWidestSwizzle != 0 ||
      buffer.getDimSize(0) % 8 != 0)
    return op->emitOpError()
           << "expects a static row-major buffer of 128-byte-swizzled boxes: "
              "rows a multiple of 8, columns a multiple of "
           << kF32PerWidestSwizzle << ", got " << buffer;
  return success();
}

/// The shape `value` has in `buffer`: its own, or transposed.
static SmallVector<int64_t, 2> stagedShape(VectorType value, bool transposed) {
  int64_t rows = value.getDimSize(0), cols = value.getDimSize(1);
  if (transposed)
    std::swap(rows, cols);
  return {rows, cols};
}

LogicalResult StageAccumulatorOp::verify() {
  MemRefType buffer = getBuffer().getType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(buffer))
    return emitOpError(
        "expects buffer in the workgroup (shared) address space");
  SmallVector<int64_t, 2> shape =
      stagedShape(getValue().getType(), getTransposed());
  for (int dim = 0; dim < 2; ++dim)
    if (!ShapedType::isDynamic(buffer.getDimSize(dim)) &&
        buffer.getDimSize(dim) < shape[dim])
      return emitOpError() << "expects a buffer of at least " << shape[0]
                           << " x " << shape[1] << " to hold the "
                           << (getTransposed() ? "transposed " : "")
                           << "tile, got " << buffer.getDimSize(0) << " x "
                           << buffer.getDimSize(1);
  if (getSwizzled() && failed(verifySwizzledBoxes(*this, buffer)))
    return failure();
  return verifyNotInProducerBranch(*this);
}

LogicalResult AccumulateBoxesAsyncOp::verify() {
  MemRefType buffer = getBuffer().getType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(buffer))
    return emitOpError(
        "expects buffer in the workgroup (shared) address space");
  if (failed(verifySwizzledBoxes(*this, buffer)))
    return failure();
  nvgpu::TensorMapDescriptorType map = getMap().getType();
  MemRefType box = map.getTensor();
  SmallVector<int64_t> expected = {1, 1, buffer.getDimSize(0),
                                   kF32PerWidestSwizzle};
  if (box.getShape() != ArrayRef<int64_t>(expected) ||
      !box.getElementType().isF32() ||
      map.getSwizzle() != nvgpu::TensorMapSwizzleKind::SWIZZLE_128B)
    return emitOpError() << "expects a tensor map of f32 boxes [1, 1, "
                         << buffer.getDimSize(0) << ", " << kF32PerWidestSwizzle
                         << "] (one 128-byte panel of the buffer's rows) "
                            "with swizzle_128b, got "
                         << map;
  return success();
}
