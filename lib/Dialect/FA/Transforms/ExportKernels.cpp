//===- ExportKernels.cpp - PTX files and the kernel manifest --------------===//
//
// The bridge to the runtime, which has no MLIR: each compiled kernel's PTX
// goes to its own file, and manifest.json says how to launch it (parameters
// in the MLIR memref-descriptor ABI, grid, block, configuration).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAEXPORTKERNELS
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
llvm::json::Value toJson(Attribute attr) {
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.getValue().str();
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array out;
    for (Attribute element : array)
      out.push_back(toJson(element));
    return out;
  }
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object out;
    for (NamedAttribute entry : dict)
      out[entry.getName().strref()] = toJson(entry.getValue());
    return out;
  }
  return nullptr;
}

/// Writes `contents` to `path` atomically enough for a build: to a temporary
/// file kept only when the write succeeded.
LogicalResult writeFile(Operation *op, StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return op->emitError() << "fa-export-kernels: cannot write " << path
                           << ": " << error;
  file->os() << contents;
  file->keep();
  return success();
}

struct FAExportKernelsPass
    : public mlir::fa::impl::FAExportKernelsBase<FAExportKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module->getAttrOfType<DictionaryAttr>(kKernelsAttr);
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      module.emitError() << "fa-export-kernels: cannot create directory "
                         << outputDir << ": " << ec.message();
      return signalPassFailure();
    }

    llvm::json::Array manifestKernels;
    // The chip every kernel was compiled for; the runtime checks it against
    // the device.
    std::string target;
    WalkResult walk = module.walk([&](gpu::BinaryOp binary) {
      StringRef name = binary.getName();
      auto object = dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
        binary.emitError("fa-export-kernels: expects PTX (run "
                         "gpu-module-to-binary with format=isa)");
        return WalkResult::interrupt();
      }
      auto nvvmTarget = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!nvvmTarget) {
        binary.emitError("fa-export-kernels: expects a kernel compiled for "
                         "an NVVM target");
        return WalkResult::interrupt();
      }
      if (target.empty())
        target = nvvmTarget.getChip().str();
      if (nvvmTarget.getChip() != target) {
        binary.emitError() << "fa-export-kernels: " << name
                           << " is compiled for " << nvvmTarget.getChip()
                           << ", the kernels before it for " << target
                           << ": one manifest holds kernels of one chip";
        return WalkResult::interrupt();
      }
      // An unresolved call (libdevice not linked) would only fail when the
      // driver loads the module, on another machine; refuse it here.
      StringRef ptx = object.getObject().getValue();
      if (ptx.contains(".extern .func")) {
        binary.emitError() << "fa-export-kernels: the PTX of " << name
                           << " calls functions it does not define (is "
                              "libdevice missing? set fa-to-ptx cuda-path)";
        return WalkResult::interrupt();
      }
      std::string ptxFile = (name + ".ptx").str();
      SmallString<128> path(outputDir);
      llvm::sys::path::append(path, ptxFile);
      if (failed(writeFile(binary, path, ptx)))
        return WalkResult::interrupt();

      DictionaryAttr info =
          kernels ? kernels.getAs<DictionaryAttr>(name) : DictionaryAttr();
      if (!info) {
        binary.emitError() << "fa-export-kernels: no fa.kernels entry for "
                           << name << " (was it made by fa-tile-attention?)";
        return WalkResult::interrupt();
      }
      llvm::json::Object entry = *toJson(info).getAsObject();
      entry["name"] = name.str();
      entry["entry"] = name.str();
      entry["ptx"] = ptxFile;
      entry["dynamic_shared_bytes"] = 0;
      manifestKernels.push_back(std::move(entry));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    llvm::json::Object manifest{{"format", "fa-kernel-library"},
                                {"version", 1},
                                {"target", target},
                                {"kernels", std::move(manifestKernels)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
       << "\n";
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, "manifest.json");
    if (failed(writeFile(module, path, text)))
      return signalPassFailure();
  }
};
} // namespace
