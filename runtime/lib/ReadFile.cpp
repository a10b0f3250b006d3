//===- ReadFile.cpp -------------------------------------------------------===//

#include "ReadFile.h"

#include "fa/runtime/Error.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fa {

std::string readFile(const std::string &path, const std::string &what) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status))
    throw Error(what + ": cannot open " + path);
  if (!std::filesystem::is_regular_file(status))
    throw Error(what + ": " + path + " is not a regular file");
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (!error && size > kMaxReadFileBytes)
    throw Error(what + ": " + path + " has " + std::to_string(size) +
                " bytes, more than the " + std::to_string(kMaxReadFileBytes) +
                " the runtime reads from one file");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(what + ": cannot open " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

} // namespace fa
