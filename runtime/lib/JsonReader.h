//===- JsonReader.h - Reading JSON files defensively ------------*- C++ -*-===//
//
// The runtime's JSON files (the kernel manifest, the tuning cache) are read
// through ObjectReader, so that every error names the file, the object and
// the key ("kernel manifest lib/manifest.json: kernel 'x': missing key 'y'").
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIB_JSONREADER_H
#define FA_RUNTIME_LIB_JSONREADER_H

#include "fa/runtime/DType.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace fa {

/// A JSON object being read, with the context its errors start with.
class ObjectReader {
public:
  static constexpr std::int64_t kNoMaximum =
      std::numeric_limits<std::int64_t>::max();

  /// Throws unless `object` is a JSON object.
  ObjectReader(const nlohmann::json &object, std::string context);

  const nlohmann::json &field(const std::string &key) const;
  /// Whether the object has `key` (for optional keys).
  bool has(const std::string &key) const;
  std::string string(const std::string &key) const;
  /// An integer in [minimum, maximum].
  std::int64_t integer(const std::string &key, std::int64_t minimum,
                       std::int64_t maximum = kNoMaximum) const;
  double number(const std::string &key) const;
  bool boolean(const std::string &key) const;
  /// An array of `size` elements, or of any size when `size` is 0.
  const nlohmann::json &array(const std::string &key, std::size_t size) const;
  DType dtype(const std::string &key) const;

  /// An integer in [minimum, maximum]; `what` names it for errors.
  std::int64_t checkedInteger(const nlohmann::json &value,
                              const std::string &what, std::int64_t minimum,
                              std::int64_t maximum = kNoMaximum) const;

  /// An integer of at least `minimum` read into `T` (int, unsigned): a value
  /// `T` cannot hold is an error, never narrowed.
  template <typename T>
  T integerAs(const std::string &key, std::int64_t minimum) const {
    return checkedIntegerAs<T>(field(key), "'" + key + "'", minimum);
  }
  template <typename T>
  T checkedIntegerAs(const nlohmann::json &value, const std::string &what,
                     std::int64_t minimum) const {
    static_assert(std::numeric_limits<T>::max() <= kNoMaximum);
    return static_cast<T>(
        checkedInteger(value, what, minimum, std::numeric_limits<T>::max()));
  }

  [[noreturn]] void wrongType(const std::string &key,
                              const std::string &expected,
                              const nlohmann::json &value) const;
  [[noreturn]] void fail(const std::string &message) const;

  /// Checks the file's "format" and "version" keys against what this
  /// runtime reads.
  void requireFormat(const std::string &format, std::int64_t version) const;

  const std::string &where() const { return context; }

private:
  const nlohmann::json &object;
  std::string context;
};

/// Objects and arrays nested deeper than this are refused: the runtime's
/// files need a few levels, and nlohmann::json recurses per level.
constexpr int kMaxJsonDepth = 64;

/// Parses `text`; throws "<context>: not valid JSON" when it is not, and
/// "<context>: values nested deeper than 64 levels" when it nests deeper.
nlohmann::json parseJson(const std::string &text, const std::string &context);

} // namespace fa

#endif // FA_RUNTIME_LIB_JSONREADER_H
