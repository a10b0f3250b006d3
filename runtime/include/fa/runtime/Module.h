//===- Module.h - Loaded GPU code (PTX, cubin, fatbin) ----------*- C++ -*-===//

#ifndef FA_RUNTIME_MODULE_H
#define FA_RUNTIME_MODULE_H

#include <cuda.h>

#include <string>

namespace fa {

/// A module loaded into the current context with cuModuleLoadDataEx. PTX is
/// compiled by the driver's JIT; when that fails, the error carries the JIT's
/// log, which names the offending PTX line.
class Module {
public:
  /// `image` is PTX text (NUL-terminated, as std::string is) or a cubin or
  /// fatbin; `label` says what is loaded, for errors: "loading <label>: ...".
  Module(const void *image, std::string label);
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  CUfunction function(const std::string &entry) const;

private:
  CUmodule module = nullptr;
  std::string moduleLabel;
};

} // namespace fa

#endif // FA_RUNTIME_MODULE_H
