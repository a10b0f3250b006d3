//===- JsonReader.cpp -----------------------------------------------------===//

#include "JsonReader.h"

#include "fa/runtime/Error.h"

namespace fa {

using nlohmann::json;

ObjectReader::ObjectReader(const json &object, std::string context)
    : object(object), context(std::move(context)) {
  if (!object.is_object())
    fail("expected an object, got " + std::string(object.type_name()));
}

const json &ObjectReader::field(const std::string &key) const {
  auto it = object.find(key);
  if (it == object.end())
    fail("missing key '" + key + "'");
  return *it;
}

bool ObjectReader::has(const std::string &key) const {
  return object.contains(key);
}

std::string ObjectReader::string(const std::string &key) const {
  const json &value = field(key);
  if (!value.is_string())
    wrongType(key, "a string", value);
  return value.get<std::string>();
}

std::int64_t ObjectReader::integer(const std::string &key, std::int64_t minimum,
                                   std::int64_t maximum) const {
  return checkedInteger(field(key), "'" + key + "'", minimum, maximum);
}

double ObjectReader::number(const std::string &key) const {
  const json &value = field(key);
  if (!value.is_number())
    wrongType(key, "a number", value);
  return value.get<double>();
}

bool ObjectReader::boolean(const std::string &key) const {
  const json &value = field(key);
  if (!value.is_boolean())
    wrongType(key, "true or false", value);
  return value.get<bool>();
}

const json &ObjectReader::array(const std::string &key,
                                std::size_t size) const {
  const json &value = field(key);
  if (!value.is_array() || (size && value.size() != size))
    wrongType(key, size ? "an array of " + std::to_string(size) : "an array",
              value);
  return value;
}

DType ObjectReader::dtype(const std::string &key) const {
  std::string name = string(key);
  try {
    return parseDType(name);
  } catch (const Error &error) {
    fail("key '" + key + "': " + error.what());
  }
}

std::int64_t ObjectReader::checkedInteger(const json &value,
                                          const std::string &what,
                                          std::int64_t minimum,
                                          std::int64_t maximum) const {
  if (!value.is_number_integer())
    fail(what + " must be an integer, got " + value.dump());
  // Above INT64_MAX nlohmann::json holds an unsigned number, which
  // get<std::int64_t>() would wrap to a negative one.
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(maximum))
    fail(what + " must be at most " + std::to_string(maximum) + ", got " +
         value.dump());
  std::int64_t number = value.get<std::int64_t>();
  if (number < minimum)
    fail(what + " must be at least " + std::to_string(minimum) + ", got " +
         std::to_string(number));
  if (number > maximum)
    fail(what + " must be at most " + std::to_string(maximum) + ", got " +
         std::to_string(number));
  return number;
}

void ObjectReader::wrongType(const std::string &key,
                             const std::string &expected,
                             const json &value) const {
  fail("key '" + key + "' must be " + expected + ", got " + value.dump());
}

void ObjectReader::fail(const std::string &message) const {
  throw Error(context + ": " + message);
}

void ObjectReader::requireFormat(const std::string &format,
                                 std::int64_t version) const {
  if (string("format") != format)
    fail("'format' must be \"" + format + "\"");
  if (integer("version", 0) != version)
    fail("unsupported version " + field("version").dump() +
         "; this runtime reads version " + std::to_string(version));
}

json parseJson(const std::string &text, const std::string &context) {
  // The parser itself is iterative, but printing, copying and comparing a
  // value recurse once per level: deeper values are dropped while parsing
  // and the file refused.
  bool tooDeep = false;
  json::parser_callback_t limitDepth = [&](int depth, json::parse_event_t event,
                                           json &) {
    bool opens = event == json::parse_event_t::object_start ||
                 event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth)
      tooDeep = true;
    return !tooDeep;
  };
  json value = json::parse(text, limitDepth, /*allow_exceptions=*/false);
  if (tooDeep)
    throw Error(context + ": values nested deeper than " +
                std::to_string(kMaxJsonDepth) + " levels");
  if (value.is_discarded())
    throw Error(context + ": not valid JSON");
  return value;
}

} // namespace fa
