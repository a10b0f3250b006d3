//===- fa-opt.cpp - The fa compiler driver --------------------------------===//
//
// An mlir-opt-style driver: parses .mlir, runs the fa passes and pipelines
// together with the upstream dialects and passes the lowering to PTX needs.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::fa::FADialect>();
  mlir::registerAllDialects(registry);
  // Without the extensions, convert-gpu-to-nvvm leaves
  // unrealized_conversion_casts behind and PTX translation fails.
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  mlir::fa::registerFATransformsPasses();
  mlir::fa::registerFAConversionPasses();
  mlir::fa::registerFAPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fa compiler driver\n", registry));
}
