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

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Half.h"

#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace fa {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// NumPy aligns the data to 64 bytes; readers accept any alignment.
constexpr std::size_t kHeaderAlignment = 64;
// NumPy's reader refuses longer headers too (numpy.lib.format's
// max_header_size): a tensor's header is a few dozen bytes, and the length
// field is read before anything else can be checked.
constexpr std::size_t kMaxHeaderBytes = 10000;

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

/// Parses the header's Python dict literal by hand: it is untrusted input,
/// and a regex engine recurses once per character of it.
class HeaderParser {
public:
  HeaderParser(std::string text, const std::string &context)
      : text(std::move(text)), context(context) {}

  NpyHeader parse() {
    NpyHeader header;
    bool hasDescr = false, hasFortranOrder = false, hasShape = false;
    expect('{');
    while (!consume('}')) {
      std::string key = quoted("a key");
      expect(':');
      if (key == "descr") {
        header.descr = quoted("the 'descr' string");
        hasDescr = true;
      } else if (key == "fortran_order") {
        header.fortranOrder = boolean();
        hasFortranOrder = true;
      } else if (key == "shape") {
        header.shape = shape();
        hasShape = true;
      } else {
        fail("unexpected key '" + key +
             "'; a .npy header has 'descr', 'fortran_order' and 'shape'");
      }
      if (!consume(',') && !next('}'))
        fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skipSpaces();
    if (position != text.size())
      fail("unexpected text after the closing '}'");
    requireEntry(hasDescr, "descr");
    requireEntry(hasFortranOrder, "fortran_order");
    requireEntry(hasShape, "shape");
    return header;
  }

private:
  void skipSpaces() {
    while (position < text.size() &&
           std::isspace(static_cast<unsigned char>(text[position])))
      ++position;
  }

  /// Whether `c` comes next, after spaces.
  bool next(char c) {
    skipSpaces();
    return position < text.size() && text[position] == c;
  }

  /// Skips spaces, then `c` if it comes next.
  bool consume(char c) {
    if (!next(c))
      return false;
    ++position;
    return true;
  }

  void expect(char c) {
    if (!consume(c))
      fail(std::string("expected '") + c + "'");
  }

  std::string quoted(const std::string &what) {
    if (!consume('\''))
      fail("expected " + what + " in single quotes");
    std::size_t end = text.find('\'', position);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string value = text.substr(position, end - position);
    position = end + 1;
    return value;
  }

  bool boolean() {
    skipSpaces();
    for (bool value : {true, false}) {
      std::string word = value ? "True" : "False";
      if (text.compare(position, word.size(), word) == 0) {
        position += word.size();
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }

  /// A tuple of extents with an optional trailing comma: "(2, 3)", "(5,)",
  /// "()".
  Shape shape() {
    skipSpaces();
    std::size_t start = position;
    Shape shape;
    if (!consume('('))
      malformedShape(start);
    while (!consume(')')) {
      skipSpaces();
      if (position == text.size() ||
          !std::isdigit(static_cast<unsigned char>(text[position])))
        malformedShape(start);
      shape.push_back(extent());
      if (!consume(',') && !next(')'))
        malformedShape(start);
    }
    return shape;
  }

  std::int64_t extent() {
    const char *first = text.data() + position;
    std::int64_t value = 0;
    auto [last, error] =
        std::from_chars(first, text.data() + text.size(), value);
    position += static_cast<std::size_t>(last - first);
    if (error == std::errc::result_out_of_range)
      fail("shape extent " + std::string(first, last) + " is larger than " +
           std::to_string(std::numeric_limits<std::int64_t>::max()));
    return value;
  }

  /// The shape tuple starting at `start`, up to its ')', cannot be parsed.
  [[noreturn]] void malformedShape(std::size_t start) const {
    std::size_t close = text.find(')', start);
    throw Error(context + ": cannot parse shape " +
                text.substr(start, close == std::string::npos
                                       ? close
                                       : close + 1 - start));
  }

  void requireEntry(bool present, const std::string &key) const {
    if (!present)
      throw Error(context + ": header has no valid '" + key + "' entry");
  }

  [[noreturn]] void fail(const std::string &message) const {
    throw Error(context + ": cannot parse the header: " + message);
  }

  const std::string text;
  const std::string &context;
  std::size_t position = 0;
};

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

/// Writes a version 1.0 file of `data`, elements of `descr`.
void writeNpyData(const std::string &path, const Shape &shape,
                  const char *descr, const Bytes &data,
                  const std::string &context) {
  std::string header = headerText(shape, descr);
  std::string preamble(kMagic, kMagicBytes);
  preamble += '\x01';
  preamble += '\x00';
  preamble += static_cast<char>(header.size() & 0xFF);
  preamble += static_cast<char>(header.size() >> 8);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(preamble.data(), static_cast<std::streamsize>(preamble.size()));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(reinterpret_cast<const char *>(data.data()),
             static_cast<std::streamsize>(data.size()));
  if (!file.flush())
    throw Error(context + ": cannot write the file");
}

/// The size of the regular file at `path`. Anything else is refused before
/// it is opened: opening a pipe blocks until a writer comes, and its size,
/// which every length in the file is checked against, is unknown.
std::uint64_t regularFileSize(const std::string &path,
                              const std::string &context) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status))
    throw Error(context + ": cannot open the file");
  if (!std::filesystem::is_regular_file(status))
    throw Error(context + ": not a regular file");
  std::uint64_t size = std::filesystem::file_size(path, error);
  if (error)
    throw Error(context + ": cannot read its size: " + error.message());
  return size;
}

/// Bytes of data `header` declares, checked against 64-bit overflow.
std::uint64_t declaredDataBytes(const NpyHeader &header,
                                std::size_t elementBytes,
                                const std::string &context) {
  try {
    return checkedMultiply<std::uint64_t>(
        elementCount(header.shape), elementBytes,
        "sizing the data of shape " + formatShape(header.shape) + " of '" +
            header.descr + "'");
  } catch (const Error &error) {
    throw Error(context + ": " + error.what());
  }
}

/// The element types readNpyIntegers reads, by descr ('|' for one byte,
/// which has no byte order; '<' little-endian).
struct IntegerType {
  const char *descr;
  std::size_t bytes;
  bool isSigned;
};
constexpr IntegerType kIntegerTypes[] = {
    {"|b1", 1, false}, {"|u1", 1, false}, {"|i1", 1, true},
    {"<u2", 2, false}, {"<i2", 2, true},  {"<u4", 4, false},
    {"<i4", 4, true},  {"<u8", 8, false}, {"<i8", 8, true}};

const IntegerType &integerTypeOf(const std::string &descr,
                                 const std::string &context) {
  if (descr.size() > 1 && descr[0] == '>')
    throw Error(context + ": big-endian data ('" + descr +
                "') is not supported; save it little-endian");
  for (const IntegerType &type : kIntegerTypes)
    if (descr == type.descr)
      return type;
  throw Error(context + ": unsupported dtype '" + descr +
              "'; expected bool or an integer type ('|b1', '|u1', '<i4', "
              "'<i8', ...)");
}

std::vector<std::int64_t> toIntegers(const std::string &data,
                                     const IntegerType &type,
                                     const std::string &context) {
  std::size_t count = data.size() / type.bytes;
  std::vector<std::int64_t> values(count);
  const char *bytes = data.data();
  for (std::size_t i = 0; i < count; ++i, bytes += type.bytes) {
    std::uint64_t raw = 0;
    std::memcpy(&raw, bytes, type.bytes); // Little-endian host.
    if (type.isSigned && type.bytes < 8 && (raw >> (8 * type.bytes - 1)) & 1)
      raw |= ~std::uint64_t{0} << (8 * type.bytes); // Sign-extend.
    if (!type.isSigned && type.bytes == 8 &&
        raw > static_cast<std::uint64_t>(
                  std::numeric_limits<std::int64_t>::max()))
      throw Error(context + ": element " + std::to_string(i) + " (" +
                  std::to_string(raw) + ") does not fit a 64-bit integer");
    values[i] = static_cast<std::int64_t>(raw);
  }
  return values;
}

/// A .npy file's header and raw data; `elementBytesOf` maps its descr to
/// the bytes per element (throwing for types the caller does not read).
template <typename ElementBytes>
std::pair<NpyHeader, std::string> readRawNpy(const std::string &path,
                                             const std::string &context,
                                             ElementBytes elementBytesOf) {
  // Every length the file declares is checked against its size before
  // anything of that length is allocated.
  std::uint64_t fileBytes = regularFileSize(path, context);
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
  if (headerBytes > kMaxHeaderBytes)
    throw Error(context + ": header of " + std::to_string(headerBytes) +
                " bytes is longer than " + std::to_string(kMaxHeaderBytes) +
                ", NumPy's own limit for a tensor's header");
  std::uint64_t dataOffset = preamble.size() + lengthBytes + headerBytes;
  if (dataOffset > fileBytes)
    throw Error(truncated + ": its " + std::to_string(fileBytes) +
                " bytes end inside the " + std::to_string(headerBytes) +
                "-byte header");
  NpyHeader header =
      HeaderParser(readExactly(file, headerBytes, truncated), context).parse();

  if (header.fortranOrder)
    throw Error(context + ": Fortran-ordered arrays are not supported; save "
                          "a C-ordered array (numpy.ascontiguousarray)");
  std::size_t elementBytes = elementBytesOf(header.descr, context);
  std::uint64_t dataBytes = declaredDataBytes(header, elementBytes, context);
  if (dataBytes > fileBytes - dataOffset)
    throw Error(truncated + ": shape " + formatShape(header.shape) + " of '" +
                header.descr + "' needs " + std::to_string(dataBytes) +
                " bytes of data, but " +
                std::to_string(fileBytes - dataOffset) +
                " follow the header (the file has " +
                std::to_string(fileBytes) + " bytes)");
  std::string data = readExactly(file, dataBytes, truncated);
  return {header, std::move(data)};
}

} // namespace

HostTensor readNpy(const std::string &path) {
  std::string context = "reading " + path;
  auto [header, data] = readRawNpy(path, context, elementBytesOf);
  return HostTensor{header.shape,
                    toFloats(data, elementBytesOf(header.descr, context))};
}

IntegerTensor readNpyIntegers(const std::string &path) {
  std::string context = "reading " + path;
  auto bytesOf = [](const std::string &descr, const std::string &context) {
    return integerTypeOf(descr, context).bytes;
  };
  auto [header, data] = readRawNpy(path, context, bytesOf);
  return IntegerTensor{
      header.shape,
      toIntegers(data, integerTypeOf(header.descr, context), context)};
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

  writeNpyData(path, tensor.shape, storage == DType::F16 ? "<f2" : "<f4",
               encode(tensor.values, storage), context);
}

void writeNpy(const std::string &path, const IntegerTensor &tensor) {
  std::string context = "writing " + path;
  if (static_cast<std::int64_t>(tensor.values.size()) !=
      elementCount(tensor.shape))
    throw Error(context + ": " + std::to_string(tensor.values.size()) +
                " values do not fill shape " + formatShape(tensor.shape));
  Bytes data(tensor.values.size() * sizeof(std::int32_t));
  for (std::size_t i = 0; i < tensor.values.size(); ++i) {
    std::int64_t value = tensor.values[i];
    if (value < std::numeric_limits<std::int32_t>::min() ||
        value > std::numeric_limits<std::int32_t>::max())
      throw Error(context + ": element " + std::to_string(i) + " (" +
                  std::to_string(value) + ") does not fit '<i4'");
    auto narrow = static_cast<std::int32_t>(value);
    std::memcpy(data.data() + i * sizeof(narrow), &narrow, sizeof(narrow));
  }
  writeNpyData(path, tensor.shape, "<i4", data, context);
}

void expectNpyShape(const std::string &path, const HostTensor &tensor,
                    const Shape &expected, const std::string &meaning) {
  if (tensor.shape != expected)
    throw Error(path + " has shape " + formatShape(tensor.shape) +
                ", expected " + formatShape(expected) + " (" + meaning + ")");
}

} // namespace fa
