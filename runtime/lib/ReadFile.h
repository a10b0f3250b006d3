//===- ReadFile.h - Whole files into memory ---------------------*- C++ -*-===//

#ifndef FA_RUNTIME_LIB_READFILE_H
#define FA_RUNTIME_LIB_READFILE_H

#include <string>

namespace fa {

/// The file's bytes; throws "<what>: cannot open <path>" on failure.
std::string readFile(const std::string &path, const std::string &what);

} // namespace fa

#endif // FA_RUNTIME_LIB_READFILE_H
