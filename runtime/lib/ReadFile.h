//===- ReadFile.h - Whole files into memory ---------------------*- C++ -*-===//

#ifndef FA_RUNTIME_LIB_READFILE_H
#define FA_RUNTIME_LIB_READFILE_H

#include <cstdint>
#include <string>

namespace fa {

/// The most readFile reads: the runtime's files (manifests, tuning caches,
/// PTX) are kilobytes to a few megabytes.
constexpr std::uintmax_t kMaxReadFileBytes = 64 << 20;

/// The file's bytes; throws "<what>: cannot open <path>" on failure, and
/// refuses, before reading, what is not a regular file (a directory, a device
/// or a pipe could be endless) or is larger than kMaxReadFileBytes.
std::string readFile(const std::string &path, const std::string &what);

} // namespace fa

#endif // FA_RUNTIME_LIB_READFILE_H
