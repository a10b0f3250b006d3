//===- FAAsyncOps.cpp - The TMA ring: type and verifiers ------------------===//
//
// What the verifiers hold the ring to is what TMA and the mbarriers accept:
// a slot is a box of the tensor map (same shape and element type), a box
// dimension spans at most 256 elements, a box row is a whole number of 16
// bytes (and no wider than the swizzle span), the tail of a tensor arrives
// zero-filled (oob = zero), and the slots fit Hopper's shared memory.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

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

LogicalResult RingType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stages, MemRefType tile) {
  if (stages < 1)
    return emitError() << "expects at least 1 stage, got " << stages;
  if (tile.getRank() != 2 || !tile.hasStaticShape())
    return emitError() << "expects a static 2-D tile, got " << tile;
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
  auto layout = StridedLayoutAttr::get(getContext(), ShapedType::kDynamic,
                                       {tile.getDimSize(1), 1});
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

/// Rows of a box move in 16-byte units, and a swizzled row must fit the
/// swizzle span (CUDA's cuTensorMapEncodeTiled rules).
static LogicalResult verifyBoxRow(Operation *op, int64_t rowBytes,
                                  nvgpu::TensorMapSwizzleKind swizzle) {
  if (rowBytes % kBoxRowGranule != 0)
    return op->emitOpError()
           << "expects a tile row of a multiple of " << kBoxRowGranule
           << " bytes (TMA's unit), got " << rowBytes;
  int64_t span = 0;
  switch (swizzle) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    return success();
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    span = 32;
    break;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    span = 64;
    break;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    span = 128;
    break;
  }
  if (rowBytes > span)
    return op->emitOpError()
           << "expects a tile row of at most " << span << " bytes under "
           << nvgpu::stringifyTensorMapSwizzleKind(swizzle) << ", got "
           << rowBytes;
  return success();
}

LogicalResult RingProduceOp::verify() {
  MemRefType tile = getRing().getType().getTile();
  nvgpu::TensorMapDescriptorType descriptor = getDescriptor().getType();
  MemRefType box = descriptor.getTensor();
  if (box.getShape() != tile.getShape() ||
      box.getElementType() != tile.getElementType())
    return emitOpError() << "expects the descriptor's box " << box
                         << " to have the shape and element type of the "
                            "ring's tile "
                         << tile;
  for (int64_t size : box.getShape())
    if (size > kMaxBoxDim)
      return emitOpError() << "expects box dimensions of at most " << kMaxBoxDim
                           << " elements (TMA), got " << size;
  if (failed(verifyBoxRow(*this,
                          box.getDimSize(box.getRank() - 1) *
                              box.getElementTypeBitWidth() / 8,
                          descriptor.getSwizzle())))
    return failure();
  if (descriptor.getOob() != nvgpu::TensorMapOOBKind::OOB_ZERO)
    return emitOpError("expects a descriptor with oob = zero: rows past the "
                       "tensor's end must arrive as zeros");
  if (descriptor.getInterleave() !=
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE)
    return emitOpError("expects a descriptor with interleave = none");
  if (static_cast<int64_t>(getCoordinates().size()) != box.getRank())
    return emitOpError() << "expects " << box.getRank()
                         << " coordinates (one per box dimension), got "
                         << getCoordinates().size();
  return success();
}

LogicalResult RingConsumeOp::verify() {
  MemRefType expected = getRing().getType().getSlotType();
  if (getSlot().getType() != expected)
    return emitOpError() << "expects the slot type " << expected << ", got "
                         << getSlot().getType();
  return success();
}
