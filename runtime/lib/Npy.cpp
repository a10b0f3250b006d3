//===- Npy.cpp - The .npy format ------------------------------------------===//
//
// Layout: "\x93NUMPY", major and minor version bytes, the header length
// (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), then a
// Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "fa/runtime/Npy.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Half.h"

#include <cstring>
#include <fstream>
#include <regex>

namespace fa {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// NumPy aligns the data to 64 bytes; readers accept any alignment.
constexpr std::size_t kHeaderAlignment = 64;

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  Shape shape;
};

std::string readExactly(std::ifstream &file, std::size_t bytes,
                        const std::string &what) {
  std::string buffer(bytes, '\0');
  if (!file.read(buffer.data(), static_cast<std::streamsize>(bytes)))
    throw Error(what);
  return buffer;
}

std::uint32_t littleEndian(const std::string &bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;)
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

/// The value text of `key` in the header dict, matched by `valuePattern`.
std::string headerField(const std::string &header, const std::string &key,
                        const std::string &valuePattern,
                        const std::string &context) {
  std::smatch match;
  std::regex field("'" + key + "'\\s*:\\s*" + valuePattern);
  if (!std::regex_search(header, match, field))
    throw Error(context + ": header has no valid '" + key +
                "' entry: " + header);
  return match[1].str();
}

Shape parseShape(const std::string &text, const std::string &context) {
  // Comma-separated extents with an optional trailing comma: "2, 3", "5,", "".
  static const std::regex wellFormed(R"(\s*(\d+\s*,\s*)*(\d+\s*)?)");
  if (!std::regex_match(text, wellFormed))
    throw Error(context + ": cannot parse shape (" + text + ")");
  static const std::regex extent(R"(\d+)");
  Shape shape;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), extent);
       it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  return shape;
}

NpyHeader parseHeader(const std::string &header, const std::string &context) {
  NpyHeader parsed;
  parsed.descr = headerField(header, "descr", "'([^']*)'", context);
  parsed.fortranOrder =
      headerField(header, "fortran_order", "(True|False)", context) == "True";
  parsed.shape = parseShape(
      headerField(header, "shape", "\\(([^)]*)\\)", context), context);
  return parsed;
}

std::size_t elementBytesOf(const std::string &descr,
                           const std::string &context) {
  if (descr.size() > 1 && descr[0] == '>')
    throw Error(context + ": big-endian data ('" + descr +
                "') is not supported; save it little-endian, e.g. with "
                "array.astype('<f4')");
  if (descr == "<f2")
    return 2;
  if (descr == "<f4")
    return 4;
  if (descr == "<f8")
    return 8;
  throw Error(context + ": unsupported dtype '" + descr +
              "'; expected '<f2', '<f4' or '<f8' (for bfloat16, save as "
              "float32)");
}

std::vector<float> toFloats(const std::string &data, std::size_t elementBytes) {
  std::size_t count = data.size() / elementBytes;
  std::vector<float> values(count);
  const char *bytes = data.data();
  for (std::size_t i = 0; i < count; ++i, bytes += elementBytes) {
    if (elementBytes == 2) {
      std::uint16_t half;
      std::memcpy(&half, bytes, 2);
      values[i] = halfToFloat(half);
    } else if (elementBytes == 4) {
      std::memcpy(&values[i], bytes, 4);
    } else {
      double wide;
      std::memcpy(&wide, bytes, 8);
      values[i] = static_cast<float>(wide);
    }
  }
  return values;
}

std::string headerText(const Shape &shape, const char *descr) {
  std::string dims;
  for (std::int64_t extent : shape)
    dims += std::to_string(extent) + ", ";
  if (shape.size() > 1)
    dims.erase(dims.size() - 2); // "(2, 3)", but "(5,)" for one dimension.
  else if (shape.size() == 1)
    dims.pop_back();
  std::string text = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (" + dims + "), }";
  std::size_t unpadded = kMagicBytes + 4 + text.size() + 1;
  text.append(
      (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  return text + "\n";
}

} // namespace

HostTensor readNpy(const std::string &path) {
  std::string context = "reading " + path;
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(context + ": cannot open the file");
  std::string truncated = context + ": file is truncated";

  std::string preamble = readExactly(file, kMagicBytes + 2,
                                     context + ": not a NumPy .npy file "
                                               "(too short)");
  if (preamble.compare(0, kMagicBytes, kMagic) != 0)
    throw Error(context + ": not a NumPy .npy file (bad magic)");
  int major = static_cast<unsigned char>(preamble[kMagicBytes]);
  if (major < 1 || major > 3)
    throw Error(context + ": unsupported .npy format version " +
                std::to_string(major) + "; expected 1, 2 or 3");
  std::size_t lengthBytes = major == 1 ? 2 : 4;
  std::size_t headerBytes =
      littleEndian(readExactly(file, lengthBytes, truncated));
  NpyHeader header =
      parseHeader(readExactly(file, headerBytes, truncated), context);

  if (header.fortranOrder)
    throw Error(context + ": Fortran-ordered arrays are not supported; save "
                          "a C-ordered array (numpy.ascontiguousarray)");
  std::size_t elementBytes = elementBytesOf(header.descr, context);
  std::size_t dataBytes =
      static_cast<std::size_t>(elementCount(header.shape)) * elementBytes;
  std::string data = readExactly(
      file, dataBytes,
      context + ": file is truncated: shape " + formatShape(header.shape) +
          " of '" + header.descr + "' needs " + std::to_string(dataBytes) +
          " bytes of data");
  return HostTensor{header.shape, toFloats(data, elementBytes)};
}

void writeNpy(const std::string &path, const HostTensor &tensor,
              DType storage) {
  std::string context = "writing " + path;
  if (storage == DType::BF16)
    throw Error(context + ": NumPy has no bfloat16; write f32 instead");
  if (static_cast<std::int64_t>(tensor.values.size()) !=
      elementCount(tensor.shape))
    throw Error(context + ": " + std::to_string(tensor.values.size()) +
                " values do not fill shape " + formatShape(tensor.shape));

  std::string header =
      headerText(tensor.shape, storage == DType::F16 ? "<f2" : "<f4");
  std::string preamble(kMagic, kMagicBytes);
  preamble += '\x01';
  preamble += '\x00';
  preamble += static_cast<char>(header.size() & 0xFF);
  preamble += static_cast<char>(header.size() >> 8);
  Bytes data = encode(tensor.values, storage);

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(preamble.data(), static_cast<std::streamsize>(preamble.size()));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(reinterpret_cast<const char *>(data.data()),
             static_cast<std::streamsize>(data.size()));
  if (!file.flush())
    throw Error(context + ": cannot write the file");
}

void expectNpyShape(const std::string &path, const HostTensor &tensor,
                    const Shape &expected, const std::string &meaning) {
  if (tensor.shape != expected)
    throw Error(path + " has shape " + formatShape(tensor.shape) +
                ", expected " + formatShape(expected) + " (" + meaning + ")");
}

} // namespace fa
