//===- Module.cpp ---------------------------------------------------------===//

#include "fa/runtime/Module.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

#include <array>
#include <cstdint>
#include <utility>

namespace fa {
namespace {

constexpr std::size_t kJitLogBytes = 16 * 1024;

/// Appends a JIT log to an error message when the JIT wrote one.
std::string withLog(std::string message, const char *heading,
                    const std::string &log) {
  std::string text = log.c_str(); // The buffer is NUL-padded.
  if (!text.empty())
    message += std::string("\n") + heading + ":\n" + text;
  return message;
}

} // namespace

Module::Module(const void *image, std::string label)
    : moduleLabel(std::move(label)) {
  std::string errorLog(kJitLogBytes, '\0');
  std::string infoLog(kJitLogBytes, '\0');
  std::array<CUjit_option, 4> options = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  std::array<void *, 4> values = {
      errorLog.data(), reinterpret_cast<void *>(std::uintptr_t{kJitLogBytes}),
      infoLog.data(), reinterpret_cast<void *>(std::uintptr_t{kJitLogBytes})};
  CUresult result = driver().cuModuleLoadDataEx(&module, image, options.size(),
                                                options.data(), values.data());
  if (result != CUDA_SUCCESS) {
    std::string message =
        "loading " + moduleLabel + ": " + describeCuResult(result);
    message = withLog(message, "JIT error log", errorLog);
    throw Error(withLog(message, "JIT info log", infoLog));
  }
}

Module::~Module() {
  // Unloading only fails if the context is already gone; nothing to report.
  if (module)
    driver().cuModuleUnload(module);
}

CUfunction Module::function(const std::string &entry) const {
  CUfunction function = nullptr;
  checkCu(driver().cuModuleGetFunction(&function, module, entry.c_str()),
          "finding entry point '" + entry + "' in " + moduleLabel);
  return function;
}

} // namespace fa
