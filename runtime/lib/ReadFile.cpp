//===- ReadFile.cpp -------------------------------------------------------===//

#include "ReadFile.h"

#include "fa/runtime/Error.h"

#include <fstream>
#include <sstream>

namespace fa {

std::string readFile(const std::string &path, const std::string &what) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(what + ": cannot open " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

} // namespace fa
