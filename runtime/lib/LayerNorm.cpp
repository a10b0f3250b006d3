//===- LayerNorm.cpp ------------------------------------------------------===//

#include "fa/runtime/LayerNorm.h"

#include "fa/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace fa {
namespace {

std::string listKernels(const std::vector<const KernelSpec *> &specs) {
  std::string text;
  for (const KernelSpec *spec : specs)
    text += "\n  " + spec->name + " (" + spec->describe() + ")";
  return text;
}

std::vector<const KernelSpec *> allKernels(const KernelLibrary &library) {
  std::vector<const KernelSpec *> specs;
  for (const KernelSpec &spec : library.kernels())
    specs.push_back(&spec);
  return specs;
}

bool hasParam(const KernelSpec &spec, const char *name) {
  return std::any_of(
      spec.params.begin(), spec.params.end(),
      [&](const KernelParam &param) { return param.name == name; });
}

/// The kernels of `op` and `dtype` (residual or plain ones only when
/// `residual` says which); throws, saying what the library has instead,
/// when there are none.
std::vector<const KernelSpec *>
kernelsFor(const KernelLibrary &library, const std::string &op, DType dtype,
           std::optional<bool> residual = std::nullopt) {
  std::string what = op + " " + dtypeName(dtype);
  if (residual && *residual)
    what += " residual";
  std::vector<const KernelSpec *> ofOp;
  for (const KernelSpec &spec : library.kernels())
    if (spec.op == op && spec.dtype == dtype &&
        (!residual || isResidualLayerNormKernel(spec) == *residual))
      ofOp.push_back(&spec);
  if (ofOp.empty())
    throw Error("no " + what + " kernel in " + library.path() +
                (residual && *residual
                     ? " (one taking " +
                           std::string(op == kLayerNormForwardOp
                                           ? "'residual' and 'sum'"
                                           : "'dresidual'") +
                           "; a library built before residual kernels "
                           "existed has none: rebuild it)"
                     : "") +
                (library.kernels().empty()
                     ? "; the library is empty"
                     : "; it has:" + listKernels(allKernels(library))));
  return ofOp;
}

/// Throws unless `kernel` computes `op` and handles rows of shape.cols.
const KernelSpec &checkedLayerNormSpec(const Kernel &kernel, const char *op,
                                       const LayerNormShape &shape) {
  const KernelSpec &spec = kernel.spec();
  shape.validate();
  if (spec.op != op)
    throw Error("kernel " + spec.name + " computes " + spec.op + ", not " + op);
  if (spec.resident && spec.blockCols < shape.cols)
    throw Error(
        "kernel " + spec.name + " holds rows of at most " +
        std::to_string(spec.blockCols) +
        " elements, but the problem has cols=" + std::to_string(shape.cols));
  return spec;
}

const KernelSpec &checkedParamsSpec(const Kernel &params,
                                    const KernelSpec &backward) {
  const KernelSpec &spec = params.spec();
  if (spec.name != backward.paramsKernel)
    throw Error("kernel " + backward.name + " needs " + backward.paramsKernel +
                " for its parameter gradients, not " + spec.name);
  return spec;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

LayerNormPartials partialsOf(const DeviceBuffer &dweight,
                             const DeviceBuffer &dbias,
                             const KernelSpec &backward, std::int64_t blocks) {
  return {dweight.get(), dbias.get(), blocks * backward.rowsPerTile};
}

} // namespace

std::size_t layerNormPartialBytes(const KernelSpec &backward,
                                  std::int64_t blocks,
                                  const LayerNormShape &shape) {
  return static_cast<std::size_t>(blocks * backward.rowsPerTile * shape.cols) *
         sizeof(float);
}

Dim3 layerNormForwardGrid(const Kernel &kernel, const LayerNormShape &shape) {
  const KernelSpec &spec =
      checkedLayerNormSpec(kernel, kLayerNormForwardOp, shape);
  GridSymbolValues values = {{"row_tiles", layerNormRowTiles(spec, shape)}};
  if (gridUses(spec, "persistent_row_tiles"))
    values["persistent_row_tiles"] =
        persistentBlocks(spec, shape, kernel.residentBlocks());
  return resolveGrid(spec, values);
}

std::int64_t layerNormBackwardBlocks(const Kernel &backward,
                                     const LayerNormShape &shape) {
  const KernelSpec &spec =
      checkedLayerNormSpec(backward, kLayerNormBackwardOp, shape);
  return persistentBlocks(spec, shape, backward.residentBlocks());
}

Dim3 layerNormParamsGrid(const Kernel &params, const KernelSpec &backward,
                         const LayerNormShape &shape) {
  const KernelSpec &spec = checkedParamsSpec(params, backward);
  return resolveGrid(spec,
                     {{"column_tiles", ceilDiv(shape.cols, spec.blockCols)}});
}

bool isResidualLayerNormKernel(const KernelSpec &spec) {
  if (spec.op == kLayerNormBackwardOp)
    return hasParam(spec, "dresidual");
  if (spec.op != kLayerNormForwardOp)
    return false;
  bool residual = hasParam(spec, "residual");
  if (residual != hasParam(spec, "sum"))
    throw Error("kernel " + spec.name + " takes '" +
                (residual ? "residual" : "sum") + "' but not '" +
                (residual ? "sum" : "residual") +
                "': a residual layernorm_fwd kernel takes both");
  return residual;
}

void checkLayerNormBuffers(const KernelSpec &kernel,
                           const LayerNormForwardBuffers &buffers) {
  bool residual = buffers.residual != 0;
  if (residual != (buffers.sum != 0))
    throw Error(std::string("layernorm forward: residual and sum are given "
                            "together (sum receives x + residual), got ") +
                (residual ? "residual without sum" : "sum without residual"));
  bool residualKernel = isResidualLayerNormKernel(kernel);
  if (residual && !residualKernel)
    throw Error("kernel " + kernel.name +
                " has no residual add, but residual and sum buffers are "
                "given: choose a residual kernel (chooseLayerNormKernel with "
                "residual = true)");
  if (!residual && residualKernel)
    throw Error("kernel " + kernel.name +
                " is a residual kernel (sum = x + residual): give it the "
                "residual and sum buffers, or choose a plain kernel");
}

void checkLayerNormBuffers(const KernelSpec &kernel,
                           const LayerNormBackwardBuffers &buffers) {
  bool residual = buffers.dresidual != 0;
  bool residualKernel = isResidualLayerNormKernel(kernel);
  if (residual && !residualKernel)
    throw Error("kernel " + kernel.name +
                " adds no dresidual to dx, but a dresidual buffer is given: "
                "choose a residual kernel (chooseLayerNormKernel with "
                "residual = true)");
  if (!residual && residualKernel)
    throw Error("kernel " + kernel.name +
                " is a residual kernel (dx += dresidual): give it the "
                "dresidual buffer (it may be dx), or choose a plain kernel");
}

const KernelSpec &chooseLayerNormKernel(const KernelLibrary &library,
                                        const std::string &op, DType dtype,
                                        std::int64_t cols, bool residual) {
  std::vector<const KernelSpec *> candidates =
      kernelsFor(library, op, dtype, residual);
  const KernelSpec *smallestFit = nullptr;
  std::int64_t widest = 0;
  for (const KernelSpec *spec : candidates) {
    if (!spec->resident)
      continue;
    widest = std::max(widest, spec->blockCols);
    if (spec->blockCols >= cols &&
        (!smallestFit || spec->blockCols < smallestFit->blockCols))
      smallestFit = spec;
  }
  if (smallestFit)
    return *smallestFit;
  for (const KernelSpec *spec : candidates)
    if (!spec->resident)
      return *spec;
  throw Error(
      "no " + op + " " + dtypeName(dtype) + (residual ? " residual" : "") +
      " kernel for cols=" + std::to_string(cols) + " in " + library.path() +
      ": its resident kernels hold rows of at most " + std::to_string(widest) +
      " elements and it has no non-resident one; it has:" +
      listKernels(candidates));
}

const KernelSpec &namedLayerNormKernel(const KernelLibrary &library,
                                       const std::string &op, DType dtype,
                                       std::int64_t cols,
                                       const std::string &name) {
  std::vector<const KernelSpec *> candidates = kernelsFor(library, op, dtype);
  for (const KernelSpec *spec : candidates) {
    if (spec->name != name)
      continue;
    if (spec->resident && spec->blockCols < cols)
      throw Error("kernel " + name + " holds rows of at most " +
                  std::to_string(spec->blockCols) + " elements, not " +
                  std::to_string(cols));
    return *spec;
  }
  throw Error("no " + op + " " + dtypeName(dtype) + " kernel named " + name +
              " in " + library.path() + "; it has:" + listKernels(candidates));
}

float layerNormEps(double eps) {
  // The kernels add eps in f32: it must be a usable f32, not only a usable
  // double.
  const float asFloat = static_cast<float>(eps);
  if (!(asFloat > 0.0f) || !std::isfinite(asFloat))
    throw Error("layernorm eps must be positive and finite" +
                std::string(eps > 0 && std::isfinite(eps)
                                ? " in f32, as the kernels add it"
                                : "") +
                ", got " + formatEps(eps));
  return asFloat;
}

const KernelSpec &layerNormParamsKernel(const KernelLibrary &library,
                                        const KernelSpec &backward) {
  const KernelSpec *params = library.named(backward.paramsKernel);
  if (!params || params->op != kLayerNormParamsOp)
    throw Error("kernel " + backward.name + ": its params_kernel '" +
                backward.paramsKernel + "' is not a " + kLayerNormParamsOp +
                " kernel of " + library.path());
  return *params;
}

std::int64_t layerNormRowTiles(const KernelSpec &spec,
                               const LayerNormShape &shape) {
  return ceilDiv(shape.rows, spec.rowsPerTile);
}

std::int64_t persistentBlocks(const KernelSpec &kernel,
                              const LayerNormShape &shape,
                              std::int64_t residentBlocks) {
  return persistentGridBlocks(kernel, layerNormRowTiles(kernel, shape),
                              residentBlocks);
}

ArgBindings layerNormForwardBindings(DType dtype, const LayerNormShape &shape,
                                     const LayerNormForwardBuffers &buffers,
                                     float eps) {
  return {{"x", MemrefArg{buffers.x, dtype, shape.matrix()}},
          {"weight", MemrefArg{buffers.weight, dtype, shape.row()}},
          {"bias", MemrefArg{buffers.bias, dtype, shape.row()}},
          {"y", MemrefArg{buffers.y, dtype, shape.matrix()}},
          {"mean", MemrefArg{buffers.mean, DType::F32, shape.perRow()}},
          {"rstd", MemrefArg{buffers.rstd, DType::F32, shape.perRow()}},
          {"residual", MemrefArg{buffers.residual, dtype, shape.matrix()}},
          {"sum", MemrefArg{buffers.sum, dtype, shape.matrix()}},
          {"eps", eps}};
}

ArgBindings layerNormBackwardBindings(DType dtype, const LayerNormShape &shape,
                                      const LayerNormBackwardBuffers &buffers,
                                      const LayerNormPartials &partials) {
  Shape partialShape = {partials.rows, shape.cols};
  return {
      {"x", MemrefArg{buffers.x, dtype, shape.matrix()}},
      {"weight", MemrefArg{buffers.weight, dtype, shape.row()}},
      {"mean", MemrefArg{buffers.mean, DType::F32, shape.perRow()}},
      {"rstd", MemrefArg{buffers.rstd, DType::F32, shape.perRow()}},
      {"dy", MemrefArg{buffers.dy, dtype, shape.matrix()}},
      {"dx", MemrefArg{buffers.dx, dtype, shape.matrix()}},
      {"partial_dweight",
       MemrefArg{partials.dweight, DType::F32, partialShape}},
      {"partial_dbias", MemrefArg{partials.dbias, DType::F32, partialShape}},
      {"dresidual", MemrefArg{buffers.dresidual, dtype, shape.matrix()}}};
}

ArgBindings layerNormParamsBindings(const LayerNormShape &shape,
                                    const LayerNormBackwardBuffers &buffers,
                                    const LayerNormPartials &partials) {
  Shape partialShape = {partials.rows, shape.cols};
  return {
      {"partial_dweight",
       MemrefArg{partials.dweight, DType::F32, partialShape}},
      {"partial_dbias", MemrefArg{partials.dbias, DType::F32, partialShape}},
      {"dweight", MemrefArg{buffers.dweight, DType::F32, shape.row()}},
      {"dbias", MemrefArg{buffers.dbias, DType::F32, shape.row()}}};
}

LayerNormForwardLaunch::LayerNormForwardLaunch(
    const Kernel &kernel, const LayerNormShape &shape,
    const LayerNormForwardBuffers &buffers, double eps)
    : kernel(kernel), grid(layerNormForwardGrid(kernel, shape)),
      args((checkLayerNormBuffers(kernel.spec(), buffers), kernel.spec()),
           layerNormForwardBindings(kernel.spec().dtype, shape, buffers,
                                    layerNormEps(eps))) {}

void LayerNormForwardLaunch::enqueue(const Stream &stream) {
  kernel.launch(grid, args, stream.get());
}

LayerNormBackwardLaunch::LayerNormBackwardLaunch(
    const Kernel &backward, const Kernel &params, const LayerNormShape &shape,
    const LayerNormBackwardBuffers &buffers)
    : backward(backward), params(params),
      blockCount((checkLayerNormBuffers(backward.spec(), buffers),
                  layerNormBackwardBlocks(backward, shape))),
      backwardGrid(
          resolveGrid(backward.spec(), {{"persistent_row_tiles", blockCount}})),
      paramsGrid(layerNormParamsGrid(params, backward.spec(), shape)),
      partialDweight("the partial sums of dweight",
                     layerNormPartialBytes(backward.spec(), blockCount, shape)),
      partialDbias("the partial sums of dbias",
                   layerNormPartialBytes(backward.spec(), blockCount, shape)),
      backwardArgs(
          backward.spec(),
          layerNormBackwardBindings(backward.spec().dtype, shape, buffers,
                                    partialsOf(partialDweight, partialDbias,
                                               backward.spec(), blockCount))),
      paramsArgs(params.spec(), layerNormParamsBindings(
                                    shape, buffers,
                                    partialsOf(partialDweight, partialDbias,
                                               backward.spec(), blockCount))) {}

void LayerNormBackwardLaunch::enqueue(const Stream &stream) {
  backward.launch(backwardGrid, backwardArgs, stream.get());
  params.launch(paramsGrid, paramsArgs, stream.get());
}

void LayerNormBackwardLaunch::fillPartials(std::uint8_t value,
                                           const Stream &stream) {
  partialDweight.fill(value, stream.get());
  partialDbias.fill(value, stream.get());
}

} // namespace fa
