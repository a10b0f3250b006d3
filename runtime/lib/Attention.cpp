//===- Attention.cpp ------------------------------------------------------===//

#include "fa/runtime/Attention.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

namespace fa {
namespace {

/// Throws unless `kernel` computes `op` for the problem's head_dim.
const KernelSpec &checkedAttentionSpec(const Kernel &kernel, const char *op,
                                       const AttentionShape &shape) {
  const KernelSpec &spec = kernel.spec();
  shape.validate();
  if (spec.op != op)
    throw Error("kernel " + spec.name + " computes " + spec.op + ", not " + op);
  if (spec.headDim != shape.headDim)
    throw Error("kernel " + spec.name + " is compiled for head_dim " +
                std::to_string(spec.headDim) + ", but the problem has " +
                std::to_string(shape.headDim));
  return spec;
}

/// Throws unless `companion` is the kernel `dq` names as its `key`.
const KernelSpec &checkedCompanion(const Kernel &companion, const char *op,
                                   const KernelSpec &dq, const char *key,
                                   const std::string &name,
                                   const AttentionShape &shape) {
  const KernelSpec &spec = checkedAttentionSpec(companion, op, shape);
  if (spec.name != name)
    throw Error("kernel " + dq.name + " needs " + name + " as its " + key +
                ", not " + spec.name);
  return spec;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

const KernelSpec &namedCompanion(const KernelLibrary &library,
                                 const KernelSpec &dq, const char *key,
                                 const std::string &name, const char *op) {
  const KernelSpec *spec = library.named(name);
  if (!spec || spec->op != op)
    throw Error("kernel " + dq.name + ": its " + key + " '" + name +
                "' is not an " + op + " kernel of " + library.path());
  return *spec;
}

/// The rows the kernels move in 16-byte chunks: a view's pointer and every
/// stride but the innermost must keep each chunk 16-byte aligned.
constexpr std::int64_t kChunkBytes = 16;

/// The argument of tensor `name`: contiguous, or a view with `strides`,
/// checked here for what the attention kernels need (KernelArgs checks the
/// rest against the kernel's parameter).
MemrefArg tensorArg(const char *name, CUdeviceptr data, DType dtype,
                    Shape shape, const Strides &strides) {
  if (strides.empty())
    return MemrefArg{data, dtype, std::move(shape)};
  auto fail = [&](const std::string &problem) {
    throw Error(std::string("attention tensor ") + name + " " +
                formatShape(shape) + " with strides " + formatShape(strides) +
                ": " + problem);
  };
  if (strides.size() != shape.size())
    fail("expected " + std::to_string(shape.size()) +
         " strides (batch, heads, seq, head_dim)");
  if (strides.back() != 1)
    fail("the head_dim stride must be 1");
  auto elementBytes = static_cast<std::int64_t>(dtypeBytes(dtype));
  for (std::size_t d = 0; d + 1 < strides.size(); ++d) {
    if (strides[d] < 1)
      fail("every stride must be at least 1");
    if (strides[d] * elementBytes % kChunkBytes != 0)
      fail("stride " + std::to_string(strides[d]) + " is " +
           std::to_string(strides[d] * elementBytes) +
           " bytes, not a multiple of " + std::to_string(kChunkBytes) +
           " (the kernels move rows in 16-byte chunks)");
  }
  if (data % kChunkBytes != 0)
    fail("the pointer is not " + std::to_string(kChunkBytes) + "-byte aligned");
  return MemrefArg{data, dtype, std::move(shape), strides};
}

std::size_t perRowBytes(const AttentionShape &shape) {
  return static_cast<std::size_t>(elementCount(shape.logSumExp())) *
         sizeof(float);
}

} // namespace

std::int64_t attentionQueryTiles(const KernelSpec &kernel,
                                 const AttentionShape &shape) {
  if (kernel.blockM < 1)
    throw Error("kernel " + kernel.name + " (" + kernel.op +
                ") has no block_m to count query tiles in");
  return ceilDiv(shape.seqQ, kernel.blockM) * shape.batch * shape.heads;
}

std::int64_t persistentAttentionBlocks(const KernelSpec &kernel,
                                       const AttentionShape &shape,
                                       std::int64_t residentBlocks) {
  return persistentGridBlocks(kernel, attentionQueryTiles(kernel, shape),
                              residentBlocks);
}

namespace {

GridSymbolValues attentionGridValues(const KernelSpec &spec,
                                     const AttentionShape &shape) {
  // dkdv_parts: a split dK/dV kernel's two halves (dV, dK) over grid z.
  GridSymbolValues values = {{"batch_heads", shape.batch * shape.heads},
                             {"batch_kv_heads", shape.batch * shape.kvHeads},
                             {"heads", shape.heads},
                             {"dkdv_parts", 2}};
  // Tiles are counted in block_m rows, which row-wise kernels (dsinks) lack.
  if (spec.blockM > 0) {
    values["query_tiles"] = ceilDiv(shape.seqQ, spec.blockM);
    values["key_tiles"] = ceilDiv(shape.seqKv, spec.blockM);
    // Without the kernel's occupancy: one block per tile, a correct launch
    // of a persistent kernel and its largest.
    values["persistent_query_tiles"] = attentionQueryTiles(spec, shape);
  }
  return values;
}

/// The grid of `kernel`, an attention_fwd kernel checked for `shape`.
Dim3 forwardGrid(const Kernel &kernel, const AttentionShape &shape) {
  checkedAttentionSpec(kernel, kAttentionForwardOp, shape);
  return attentionGrid(kernel, shape);
}

/// A tile counter for `kernel` if it takes one.
std::optional<DeviceBuffer> tileCounterFor(const KernelSpec &kernel) {
  if (!takesTileCounter(kernel))
    return std::nullopt;
  return DeviceBuffer("the tile counter of kernel " + kernel.name,
                      kTileCounterBytes);
}

/// attentionBindings, and the tile counter's when there is one.
ArgBindings forwardBindings(const KernelSpec &kernel,
                            const AttentionShape &shape,
                            const AttentionBuffers &buffers,
                            const ArgBindings &variant,
                            const std::optional<DeviceBuffer> &tileCounter) {
  ArgBindings bindings =
      attentionBindings(kernel.dtype, shape, buffers, variant);
  if (tileCounter)
    bindings["tile_counter"] = tileCounterArg(tileCounter->get());
  return bindings;
}

} // namespace

bool takesTileCounter(const KernelSpec &kernel) {
  for (const KernelParam &param : kernel.params) {
    if (param.name != "tile_counter")
      continue;
    if (param.kind == ParamKind::I32Memref && param.rank == 1)
      return true;
    bool memref =
        param.kind == ParamKind::Memref || param.kind == ParamKind::I32Memref;
    throw Error("kernel " + kernel.name + ": parameter 'tile_counter' is " +
                paramKindName(param.kind) +
                (memref ? " of rank " + std::to_string(param.rank) : "") +
                "; a tile counter is memref<i32> of rank 1 (memref<1xi32>)");
  }
  return false;
}

I32MemrefArg tileCounterArg(CUdeviceptr counter) { return {counter, {1}}; }

void zeroTileCounter(CUdeviceptr counter, const KernelSpec &kernel,
                     CUstream stream) {
  // Zero in bytes is zero in i32: the byte memset every driver table has.
  CUresult result =
      driver().cuMemsetD8Async(counter, 0, kTileCounterBytes, stream);
  // The message is built only on failure: this runs before every launch.
  if (result != CUDA_SUCCESS)
    checkCu(result, "zeroing the tile counter of kernel " + kernel.name +
                        " before its launch");
}

namespace {

/// Throws, naming the kernel, unless parameter `param` is `kind` (of
/// `dtype`, for a memref) of rank `rank`; `expected` describes that kind.
void checkScratchParam(const KernelSpec &kernel, const KernelParam &param,
                       ParamKind kind, DType dtype, int rank,
                       const char *expected) {
  bool memref =
      param.kind == ParamKind::Memref || param.kind == ParamKind::I32Memref;
  if (param.kind == kind && param.rank == rank &&
      (kind != ParamKind::Memref || param.dtype == dtype))
    return;
  std::string found = paramKindName(param.kind);
  if (param.kind == ParamKind::Memref)
    found = std::string("memref<") + dtypeName(param.dtype) + ">";
  throw Error("kernel " + kernel.name + ": parameter '" + param.name + "' is " +
              found + (memref ? " of rank " + std::to_string(param.rank) : "") +
              "; " + expected);
}

/// The parameter `name` of `kernel`, or null.
const KernelParam *findParam(const KernelSpec &kernel, const char *name) {
  for (const KernelParam &param : kernel.params)
    if (param.name == name)
      return &param;
  return nullptr;
}

} // namespace

bool takesDqAccum(const KernelSpec &kernel) {
  const KernelParam *param = findParam(kernel, "dq_accum");
  if (param)
    checkScratchParam(kernel, *param, ParamKind::Memref, DType::F32, 4,
                      "dq_accum is memref<f32> of rank 4 ([batch, heads, "
                      "seq_q, head_dim])");
  return param != nullptr;
}

bool takesDqSemaphores(const KernelSpec &kernel) {
  const KernelParam *param = findParam(kernel, "dq_semaphores");
  if (param)
    checkScratchParam(kernel, *param, ParamKind::I32Memref, DType::F32, 3,
                      "dq_semaphores is memref<i32> of rank 3 ([batch, "
                      "heads, dq_tiles])");
  return param != nullptr;
}

bool fusesDqIntoDkDv(const KernelSpec &dkdv, const KernelSpec &dq) {
  bool accum = takesDqAccum(dkdv), semaphores = takesDqSemaphores(dkdv);
  if (accum != semaphores)
    throw Error("kernel " + dkdv.name + " takes " +
                (accum ? "dq_accum but not dq_semaphores"
                       : "dq_semaphores but not dq_accum") +
                ": a dkdv kernel that sums dQ takes both");
  if (takesDqAccum(dq) != accum)
    throw Error("kernel " + dq.name +
                (accum ? " takes no dq_accum, but its dkdv kernel " +
                             dkdv.name + " sums dQ into one"
                       : " takes dq_accum, but its dkdv kernel " + dkdv.name +
                             " writes none"));
  if (takesDqSemaphores(dq))
    throw Error("kernel " + dq.name +
                " takes dq_semaphores, which only its dkdv kernel uses");
  return accum;
}

std::size_t dqAccumBytes(const AttentionShape &shape) {
  return static_cast<std::size_t>(elementCount(shape.query())) * sizeof(float);
}

std::int64_t dqSemaphoreTiles(const KernelSpec &dkdv,
                              const AttentionShape &shape) {
  auto blockN = dkdv.config.find("block_n");
  if (blockN == dkdv.config.end() || blockN->second < 1)
    throw Error("kernel " + dkdv.name + " (" + dkdv.op +
                ") has no block_n to count its dq_semaphores' query tiles in");
  return ceilDiv(shape.seqQ, blockN->second);
}

std::size_t dqSemaphoreBytes(const KernelSpec &dkdv,
                             const AttentionShape &shape) {
  return static_cast<std::size_t>(shape.batch * shape.heads *
                                  dqSemaphoreTiles(dkdv, shape)) *
         sizeof(std::int32_t);
}

MemrefArg dqAccumArg(CUdeviceptr accum, const AttentionShape &shape) {
  return MemrefArg{accum, DType::F32, shape.query()};
}

I32MemrefArg dqSemaphoresArg(CUdeviceptr semaphores, const KernelSpec &dkdv,
                             const AttentionShape &shape) {
  return {semaphores,
          {shape.batch, shape.heads, dqSemaphoreTiles(dkdv, shape)}};
}

void zeroDqSemaphores(CUdeviceptr semaphores, std::size_t bytes,
                      const KernelSpec &dkdv, CUstream stream) {
  // One memset per launch; zero bytes are zero i32s.
  CUresult result = driver().cuMemsetD8Async(semaphores, 0, bytes, stream);
  // The message is built only on failure: this runs before every launch.
  if (result != CUDA_SUCCESS)
    checkCu(result, "zeroing the dq_semaphores of kernel " + dkdv.name +
                        " before its launch");
}

AttentionBackwardWorkspace
attentionBackwardWorkspace(const KernelSpec &dkdv, const KernelSpec &dq,
                           const AttentionShape &shape) {
  AttentionBackwardWorkspace workspace;
  workspace.deltaBytes = perRowBytes(shape);
  workspace.bytes = workspace.deltaBytes;
  workspace.fusedDq = fusesDqIntoDkDv(dkdv, dq);
  if (!workspace.fusedDq)
    return workspace;
  constexpr std::size_t align = kBackwardWorkspaceAlignment;
  workspace.dqAccumOffset = roundUp(workspace.deltaBytes, align);
  workspace.dqAccumBytes = dqAccumBytes(shape);
  workspace.dqSemaphoresOffset =
      workspace.dqAccumOffset + roundUp(workspace.dqAccumBytes, align);
  workspace.dqSemaphoreBytes = dqSemaphoreBytes(dkdv, shape);
  workspace.bytes =
      workspace.dqSemaphoresOffset + roundUp(workspace.dqSemaphoreBytes, align);
  return workspace;
}

Dim3 attentionGrid(const KernelSpec &spec, const AttentionShape &shape) {
  return resolveGrid(spec, attentionGridValues(spec, shape));
}

Dim3 attentionGrid(const Kernel &kernel, const AttentionShape &shape) {
  const KernelSpec &spec = kernel.spec();
  GridSymbolValues values = attentionGridValues(spec, shape);
  // The occupancy query only for a kernel that needs it.
  if (gridUses(spec, "persistent_query_tiles"))
    values["persistent_query_tiles"] =
        persistentAttentionBlocks(spec, shape, kernel.residentBlocks());
  return resolveGrid(spec, values);
}

ArgBindings attentionBindings(DType dtype, const AttentionShape &shape,
                              const AttentionBuffers &buffers,
                              const ArgBindings &variant) {
  const AttentionStrides &strides = buffers.strides;
  ArgBindings bindings = {
      {"q", tensorArg("q", buffers.q, dtype, shape.query(), strides.q)},
      {"k", tensorArg("k", buffers.k, dtype, shape.keyValue(), strides.k)},
      {"v", tensorArg("v", buffers.v, dtype, shape.keyValue(), strides.v)},
      {"out", tensorArg("out", buffers.out, dtype, shape.query(), strides.out)},
      {"lse", MemrefArg{buffers.lse, DType::F32, shape.logSumExp()}}};
  // The tensors' names are the kernels'; a variant never rebinds them.
  bindings.insert(variant.begin(), variant.end());
  return bindings;
}

ArgBindings attentionBackwardBindings(DType dtype, const AttentionShape &shape,
                                      const AttentionBackwardBuffers &buffers,
                                      CUdeviceptr delta,
                                      const ArgBindings &variant) {
  const AttentionBackwardStrides &strides = buffers.strides;
  ArgBindings bindings = attentionBindings(
      dtype, shape,
      {buffers.q, buffers.k, buffers.v, buffers.out, buffers.lse,
       AttentionStrides{strides.q, strides.k, strides.v, strides.out}},
      variant);
  bindings.insert(
      {{"dout",
        tensorArg("dout", buffers.dout, dtype, shape.query(), strides.dout)},
       {"delta", MemrefArg{delta, DType::F32, shape.logSumExp()}},
       {"dq", tensorArg("dq", buffers.dq, dtype, shape.query(), strides.dq)},
       {"dk", tensorArg("dk", buffers.dk, dtype, shape.keyValue(), strides.dk)},
       {"dv",
        tensorArg("dv", buffers.dv, dtype, shape.keyValue(), strides.dv)}});
  if (buffers.dsinks)
    bindings.insert(
        {"dsinks", MemrefArg{buffers.dsinks, DType::F32, {shape.heads}}});
  return bindings;
}

AttentionBackwardKernels attentionBackwardKernels(const KernelLibrary &library,
                                                  const KernelSpec &dq) {
  if (dq.op != kAttentionBackwardOp)
    throw Error("kernel " + dq.name + " computes " + dq.op + ", not " +
                kAttentionBackwardOp);
  return {&namedCompanion(library, dq, "delta_kernel", dq.deltaKernel,
                          kAttentionDeltaOp),
          &namedCompanion(library, dq, "dkdv_kernel", dq.dkdvKernel,
                          kAttentionDkDvOp),
          &dq,
          dq.dsinksKernel.empty()
              ? nullptr
              : &namedCompanion(library, dq, "dsinks_kernel", dq.dsinksKernel,
                                kAttentionDsinksOp)};
}

AttentionLaunch::AttentionLaunch(const Kernel &kernel,
                                 const AttentionShape &shape,
                                 const AttentionBuffers &buffers,
                                 const ArgBindings &variant)
    : kernel(kernel), grid(forwardGrid(kernel, shape)),
      tileCounter(tileCounterFor(kernel.spec())),
      args(kernel.spec(), forwardBindings(kernel.spec(), shape, buffers,
                                          variant, tileCounter)) {}

void AttentionLaunch::enqueue(const Stream &stream) {
  if (tileCounter)
    zeroTileCounter(tileCounter->get(), kernel.spec(), stream.get());
  kernel.launch(grid, args, stream.get());
}

void AttentionLaunch::setDropoutOffset(std::uint32_t offset) {
  args.setSlot(args.slotOf("dropout_offset"), KernelArgs::slotValue(offset));
}

namespace {

/// A fused backward's dq_accum (fusesDqIntoDkDv), or none.
std::optional<DeviceBuffer> dqAccumFor(const KernelSpec &dkdv,
                                       const KernelSpec &dq,
                                       const AttentionShape &shape) {
  if (!fusesDqIntoDkDv(dkdv, dq))
    return std::nullopt;
  return DeviceBuffer("the dq_accum of kernel " + dkdv.name,
                      dqAccumBytes(shape));
}

/// A fused backward's dq_semaphores, or none.
std::optional<DeviceBuffer> dqSemaphoresFor(const KernelSpec &dkdv,
                                            const KernelSpec &dq,
                                            const AttentionShape &shape) {
  if (!fusesDqIntoDkDv(dkdv, dq))
    return std::nullopt;
  return DeviceBuffer("the dq_semaphores of kernel " + dkdv.name,
                      dqSemaphoreBytes(dkdv, shape));
}

/// attentionBackwardBindings for `kernel`, and a fused backward's dq_accum
/// and dq_semaphores (shaped by `dkdv`) when the launch owns them.
ArgBindings backwardBindings(const KernelSpec &kernel, const KernelSpec &dkdv,
                             const AttentionShape &shape,
                             const AttentionBackwardBuffers &buffers,
                             CUdeviceptr delta, const ArgBindings &variant,
                             const std::optional<DeviceBuffer> &dqAccum,
                             const std::optional<DeviceBuffer> &dqSemaphores) {
  ArgBindings bindings =
      attentionBackwardBindings(kernel.dtype, shape, buffers, delta, variant);
  if (dqAccum)
    bindings["dq_accum"] = dqAccumArg(dqAccum->get(), shape);
  if (dqSemaphores)
    bindings["dq_semaphores"] =
        dqSemaphoresArg(dqSemaphores->get(), dkdv, shape);
  return bindings;
}

} // namespace

AttentionBackwardLaunch::AttentionBackwardLaunch(
    const Kernel &delta, const Kernel &dkdv, const Kernel &dq,
    const AttentionShape &shape, const AttentionBackwardBuffers &buffers,
    const ArgBindings &variant, const Kernel *dsinks)
    : deltaKernel(delta), dkdvKernel(dkdv), dqKernel(dq),
      dqGrid(attentionGrid(
          checkedAttentionSpec(dq, kAttentionBackwardOp, shape), shape)),
      deltaGrid(attentionGrid(checkedCompanion(delta, kAttentionDeltaOp,
                                               dq.spec(), "delta_kernel",
                                               dq.spec().deltaKernel, shape),
                              shape)),
      dkdvGrid(attentionGrid(checkedCompanion(dkdv, kAttentionDkDvOp, dq.spec(),
                                              "dkdv_kernel",
                                              dq.spec().dkdvKernel, shape),
                             shape)),
      deltaBuffer("the attention backward's delta", perRowBytes(shape)),
      dqAccum(dqAccumFor(dkdv.spec(), dq.spec(), shape)),
      dqSemaphores(dqSemaphoresFor(dkdv.spec(), dq.spec(), shape)),
      deltaArgs(delta.spec(), backwardBindings(delta.spec(), dkdv.spec(), shape,
                                               buffers, deltaBuffer.get(),
                                               variant, dqAccum, dqSemaphores)),
      dkdvArgs(dkdv.spec(), backwardBindings(dkdv.spec(), dkdv.spec(), shape,
                                             buffers, deltaBuffer.get(),
                                             variant, dqAccum, dqSemaphores)),
      dqArgs(dq.spec(), backwardBindings(dq.spec(), dkdv.spec(), shape, buffers,
                                         deltaBuffer.get(), variant, dqAccum,
                                         dqSemaphores)),
      dsinksKernel(dsinks) {
  const KernelSpec &dqSpec = dq.spec();
  if (!dsinks) {
    if (buffers.dsinks)
      throw Error("kernel " + dqSpec.name +
                  ": a dsinks buffer needs the dsinks kernel that writes it");
    return;
  }
  const KernelSpec &spec = dsinks->spec();
  if (spec.op != kAttentionDsinksOp)
    throw Error("kernel " + spec.name + " computes " + spec.op + ", not " +
                kAttentionDsinksOp);
  if (spec.name != dqSpec.dsinksKernel)
    throw Error("kernel " + dqSpec.name + " needs " +
                (dqSpec.dsinksKernel.empty()
                     ? std::string("no dsinks_kernel")
                     : dqSpec.dsinksKernel + " as its dsinks_kernel") +
                ", not " + spec.name);
  if (!buffers.dsinks)
    throw Error("kernel " + spec.name +
                " writes dsinks: the backward's "
                "buffers need one (f32 [heads])");
  dsinksGrid = attentionGrid(spec, shape);
  dsinksArgs.emplace(spec,
                     attentionBackwardBindings(spec.dtype, shape, buffers,
                                               deltaBuffer.get(), variant));
}

void AttentionBackwardLaunch::enqueue(const Stream &stream) {
  enqueue(AttentionBackwardStage::Delta, stream);
  enqueue(AttentionBackwardStage::DkDv, stream);
  enqueue(AttentionBackwardStage::Dq, stream);
  if (dsinksKernel)
    enqueue(AttentionBackwardStage::Dsinks, stream);
}

void AttentionBackwardLaunch::enqueue(AttentionBackwardStage stage,
                                      const Stream &stream) {
  switch (stage) {
  case AttentionBackwardStage::Delta:
    deltaKernel.launch(deltaGrid, deltaArgs, stream.get());
    return;
  case AttentionBackwardStage::DkDv:
    // A fused dkdv counts its semaphores up from zero: every launch, the
    // stage alone included, finds them zeroed.
    if (dqSemaphores)
      zeroDqSemaphores(dqSemaphores->get(), dqSemaphores->bytes(),
                       dkdvKernel.spec(), stream.get());
    dkdvKernel.launch(dkdvGrid, dkdvArgs, stream.get());
    return;
  case AttentionBackwardStage::Dq:
    dqKernel.launch(dqGrid, dqArgs, stream.get());
    return;
  case AttentionBackwardStage::Dsinks:
    if (!dsinksKernel)
      throw Error("kernel " + dqKernel.spec().name +
                  ": this backward launch has no dsinks kernel");
    dsinksKernel->launch(dsinksGrid, *dsinksArgs, stream.get());
    return;
  }
}

void AttentionBackwardLaunch::setDropoutOffset(std::uint32_t offset) {
  bool found = false;
  for (KernelArgs *args : {&deltaArgs, &dkdvArgs, &dqArgs})
    if (std::optional<std::size_t> slot = args->findSlot("dropout_offset")) {
      args->setSlot(*slot, KernelArgs::slotValue(offset));
      found = true;
    }
  if (!found)
    throw Error("kernel " + dqKernel.spec().name +
                ": no kernel of this backward takes dropout_offset");
}

void AttentionBackwardLaunch::fillDelta(std::uint8_t value,
                                        const Stream &stream) {
  deltaBuffer.fill(value, stream.get());
}

} // namespace fa
