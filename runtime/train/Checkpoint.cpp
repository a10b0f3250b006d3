//===- Checkpoint.cpp -----------------------------------------------------===//

#include "fa/train/Checkpoint.h"

// The runtime's defensive JSON reading (a private header of faruntime, which
// fatrain links).
#include "JsonReader.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

namespace fa::train {

using nlohmann::json;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoints store f32 arrays in the host's byte order, which "
              "the format fixes as little-endian");

std::uint64_t fnv1a64(const void *data, std::size_t size, std::uint64_t hash) {
  const auto *bytes = static_cast<const std::uint8_t *>(data);
  for (std::size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

namespace {

constexpr char kMagic[] = "FA-CHECKPOINT 1\n";
constexpr std::size_t kMagicSize = sizeof kMagic - 1;
constexpr char kMagicPrefix[] = "FA-CHECKPOINT ";
constexpr std::size_t kWordSize = 8; // The header length and the checksum.
constexpr std::array<const char *, 3> kArrayNames = {"parameters", "adam_m",
                                                     "adam_v"};
// A header is a few hundred bytes (the hyperparameters are small JSON).
constexpr std::uint64_t kMaxHeaderSize = 1 << 20;
// The model sizes a header may give, far above any model trained here: the
// config is read before the file's size can be checked against it, and
// ParameterLayout walks every layer, so these keep that walk short and every
// size it computes within 64 bits.
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxDModel = 131072;
constexpr std::int64_t kMaxSeq = 1 << 24;
constexpr std::int64_t kMaxVocab = 1 << 24;
// The arrays are checksummed through a buffer of this size before they are
// read into memory.
constexpr std::size_t kChecksumChunk = 1 << 20;

/// The state's arrays in file order (kArrayNames).
template <typename State> auto stateArrays(State &state) {
  return std::array{&state.parameters, &state.adamM, &state.adamV};
}

std::string systemError() { return std::strerror(errno); }

/// An open file descriptor, closed when it goes out of scope.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }

  explicit operator bool() const { return fd >= 0; }
  int get() const { return fd; }
  /// Closes now, returning close()'s result (an error may surface only here).
  int close() {
    int result = ::close(fd);
    fd = -1;
    return result;
  }

private:
  int fd;
};

void storeWord(std::uint8_t (&bytes)[kWordSize], std::uint64_t value) {
  for (std::size_t i = 0; i < kWordSize; ++i)
    bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t loadWord(const std::uint8_t (&bytes)[kWordSize]) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kWordSize; ++i)
    value |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  return value;
}

/// Writes every byte, through partial writes and interrupts.
void writeAll(int fd, const void *data, std::size_t size,
              const std::string &what) {
  const auto *bytes = static_cast<const std::uint8_t *>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      throw Error(what + ": " + (written < 0 ? systemError() : "no progress"));
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

/// Reads exactly `size` bytes; `what` says what an early end of file cut.
void readAll(int fd, void *data, std::size_t size, const std::string &what) {
  auto *bytes = static_cast<std::uint8_t *>(data);
  while (size > 0) {
    ssize_t got = ::read(fd, bytes, size);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      throw Error(what + ": " + systemError());
    if (got == 0)
      throw Error(what + ": unexpected end of file");
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
}

json configJson(const GptConfig &config) {
  return {{"layers", config.layers}, {"d_model", config.dModel},
          {"heads", config.heads},   {"seq", config.seq},
          {"vocab", config.vocab},   {"tied_head", config.tiedHead}};
}

GptConfig readConfig(const ObjectReader &reader) {
  GptConfig config;
  config.layers = reader.integer("layers", 1, kMaxLayers);
  config.dModel = reader.integer("d_model", 1, kMaxDModel);
  config.heads = reader.integer("heads", 1, kMaxDModel);
  config.seq = reader.integer("seq", 1, kMaxSeq);
  config.vocab = reader.integer("vocab", 1, kMaxVocab);
  config.tiedHead = reader.boolean("tied_head");
  try {
    config.validate();
  } catch (const Error &error) {
    reader.fail(error.what());
  }
  return config;
}

/// Saving and loading refuse the same headers.
void checkHeaderSize(std::uint64_t size, const std::string &what) {
  if (size > kMaxHeaderSize)
    throw Error(what + ": header of " + std::to_string(size) +
                " bytes is longer than " + std::to_string(kMaxHeaderSize) +
                ", the most a checkpoint's header may have (are the "
                "hyperparameters that large?)");
}

/// Bytes of the whole file whose header is `headerSize` bytes and whose
/// arrays hold `elements` values each.
std::uint64_t describedFileSize(std::uint64_t headerSize, std::int64_t elements,
                                const std::string &what) {
  const std::string sizing = what + ": sizing the file its header describes";
  std::uint64_t arrayBytes = checkedMultiply<std::uint64_t>(
      static_cast<std::uint64_t>(elements), sizeof(float), sizing);
  std::uint64_t arraysBytes =
      checkedMultiply<std::uint64_t>(arrayBytes, kArrayNames.size(), sizing);
  return checkedAdd<std::uint64_t>(kMagicSize + 2 * kWordSize,
                                   checkedAdd(headerSize, arraysBytes, sizing),
                                   sizing);
}

/// Continues `hash` over the next `size` bytes of `fd` through a fixed
/// buffer, then compares it with the stored checksum that follows them.
void verifyChecksum(int fd, std::uint64_t size, std::uint64_t hash,
                    const std::string &what) {
  std::vector<std::uint8_t> buffer(kChecksumChunk);
  while (size > 0) {
    std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(size, buffer.size()));
    readAll(fd, buffer.data(), chunk, what + ": reading the arrays");
    hash = fnv1a64(buffer.data(), chunk, hash);
    size -= chunk;
  }
  std::uint8_t word[kWordSize];
  readAll(fd, word, kWordSize, what + ": reading the checksum");
  if (const std::uint64_t stored = loadWord(word); stored != hash) {
    char message[96];
    std::snprintf(message, sizeof message,
                  "checksum mismatch (stored %016llx, computed %016llx)",
                  static_cast<unsigned long long>(stored),
                  static_cast<unsigned long long>(hash));
    throw Error(what + ": " + message + ": the file is corrupted");
  }
}

/// The header of `state`, checking that the state is consistent first.
std::string headerText(const TrainState &state, const std::string &what) {
  std::size_t elements = 0;
  try {
    elements =
        static_cast<std::size_t>(ParameterLayout(state.config).totalSize());
  } catch (const Error &error) {
    throw Error(what + ": " + error.what());
  }
  if (state.step < 0)
    throw Error(what + ": step " + std::to_string(state.step) + " is negative");
  json arrays = json::object();
  for (std::size_t i = 0; i < kArrayNames.size(); ++i) {
    const std::vector<float> &array = *stateArrays(state)[i];
    if (array.size() != elements)
      throw Error(what + ": " + kArrayNames[i] + " holds " +
                  std::to_string(array.size()) + " values, but the model (" +
                  state.config.describe() + ") has " +
                  std::to_string(elements));
    arrays[kArrayNames[i]] = elements;
  }
  json header = {{"config", configJson(state.config)},
                 {"step", state.step},
                 {"seed", state.seed},
                 {"hyperparameters",
                  parseJson(state.hyperparameters, what + ": hyperparameters")},
                 {"arrays", arrays}};
  std::string text = header.dump();
  checkHeaderSize(text.size(), what);
  return text;
}

/// Flushes the directory holding `path`, so that a rename into it lasts.
void syncDirectory(const std::string &path, const std::string &what) {
  std::string directory = std::filesystem::path(path).parent_path().string();
  if (directory.empty())
    directory = ".";
  FileDescriptor handle(
      ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!handle || ::fsync(handle.get()) != 0)
    throw Error(what + ": renamed into place, but cannot flush the directory " +
                directory + ": " + systemError());
}

} // namespace

void saveCheckpoint(const std::string &path, const TrainState &state) {
  const std::string what = "saving checkpoint " + path;
  const std::string header = headerText(state, what);
  // Beside the target, so that the rename stays on one file system, where it
  // is atomic.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  FileDescriptor file(::open(temporary.c_str(),
                             O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!file)
    throw Error(what + ": cannot create " + temporary + ": " + systemError());
  try {
    const std::string writing = what + ": writing " + temporary;
    std::uint64_t hash = kFnv1aOffset;
    auto write = [&](const void *data, std::size_t size) {
      writeAll(file.get(), data, size, writing);
      hash = fnv1a64(data, size, hash);
    };
    std::uint8_t word[kWordSize];
    write(kMagic, kMagicSize);
    storeWord(word, header.size());
    write(word, kWordSize);
    write(header.data(), header.size());
    for (const std::vector<float> *array : stateArrays(state))
      write(array->data(), array->size() * sizeof(float));
    storeWord(word, hash);
    writeAll(file.get(), word, kWordSize, writing);
    if (::fsync(file.get()) != 0 || file.close() != 0)
      throw Error(writing + ": " + systemError());
    if (::rename(temporary.c_str(), path.c_str()) != 0)
      throw Error(what + ": cannot rename " + temporary +
                  " to it: " + systemError());
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  syncDirectory(path, what);
}

TrainState loadCheckpoint(const std::string &path) {
  const std::string what = "loading checkpoint " + path;
  // O_NONBLOCK: opening a pipe would wait for a writer, and only a regular
  // file has the size every length in the file is checked against (reads
  // from a regular file ignore the flag).
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!file)
    throw Error(what + ": cannot open it: " + systemError());
  struct stat info;
  if (::fstat(file.get(), &info) != 0)
    throw Error(what + ": cannot stat it: " + systemError());
  if (!S_ISREG(info.st_mode))
    throw Error(what + ": not a regular file");
  const auto fileSize = static_cast<std::uint64_t>(info.st_size);
  auto truncated = [&](const std::string &part) {
    return Error(what + ": truncated: its " + std::to_string(fileSize) +
                 " bytes end inside the " + part);
  };

  std::string magic(std::min<std::uint64_t>(fileSize, kMagicSize), '\0');
  readAll(file.get(), magic.data(), magic.size(), what);
  if (magic != kMagic) {
    if (std::string_view(kMagic, magic.size()) == magic)
      throw truncated("magic line");
    if (magic.rfind(kMagicPrefix, 0) == 0) {
      std::string version = magic.substr(sizeof kMagicPrefix - 1);
      throw Error(what + ": unsupported format version '" +
                  version.substr(0, version.find('\n')) +
                  "'; this build reads version 1");
    }
    throw Error(what + ": not a checkpoint: it does not start with \"" +
                std::string(kMagic, kMagicSize - 1) + "\"");
  }
  std::uint64_t hash = fnv1a64(magic.data(), magic.size());
  auto read = [&](void *data, std::size_t size, const std::string &part) {
    readAll(file.get(), data, size, what + ": reading the " + part);
    hash = fnv1a64(data, size, hash);
  };

  std::uint8_t word[kWordSize];
  if (fileSize < kMagicSize + kWordSize)
    throw truncated("header length");
  read(word, kWordSize, "header length");
  const std::uint64_t headerSize = loadWord(word);
  checkHeaderSize(headerSize, what);
  if (headerSize > fileSize - kMagicSize - kWordSize)
    throw truncated("header (" + std::to_string(headerSize) + " bytes)");
  std::string headerBytes(headerSize, '\0');
  read(headerBytes.data(), headerBytes.size(), "header");
  const json header = parseJson(headerBytes, what + ": header");
  const ObjectReader top(header, what + ": header");

  TrainState state;
  state.config = readConfig(
      ObjectReader(top.field("config"), what + ": header: 'config'"));
  state.step = top.integer("step", 0);
  const json &seed = top.field("seed");
  if (!seed.is_number_unsigned())
    top.wrongType("seed", "a non-negative integer", seed);
  state.seed = seed.get<std::uint64_t>();
  state.hyperparameters = top.field("hyperparameters").dump();

  const ObjectReader arrays(top.field("arrays"), what + ": header: 'arrays'");
  const std::int64_t elements = ParameterLayout(state.config).totalSize();
  for (const char *name : kArrayNames)
    if (std::int64_t stored = arrays.integer(name, 0); stored != elements)
      arrays.fail(std::string("'") + name + "' holds " +
                  std::to_string(stored) + " values, but the model (" +
                  state.config.describe() + ") has " +
                  std::to_string(elements));
  const std::uint64_t expectedSize =
      describedFileSize(headerSize, elements, what);
  if (fileSize < expectedSize)
    throw Error(what + ": truncated: " + std::to_string(fileSize) +
                " bytes where its header describes " +
                std::to_string(expectedSize));
  if (fileSize > expectedSize)
    throw Error(what + ": " + std::to_string(fileSize - expectedSize) +
                " bytes after the end its header describes (" +
                std::to_string(expectedSize) + " bytes)");

  // The arrays are as large as the file says: check them against the
  // checksum before allocating them, then read them again.
  const std::uint64_t arrayBytes =
      static_cast<std::uint64_t>(elements) * sizeof(float);
  verifyChecksum(file.get(), kArrayNames.size() * arrayBytes, hash, what);
  const off_t arraysOffset =
      static_cast<off_t>(kMagicSize + kWordSize + headerSize);
  if (::lseek(file.get(), arraysOffset, SEEK_SET) != arraysOffset)
    throw Error(what + ": cannot seek back to the arrays: " + systemError());
  for (std::size_t i = 0; i < kArrayNames.size(); ++i) {
    std::vector<float> &array = *stateArrays(state)[i];
    array.resize(static_cast<std::size_t>(elements));
    readAll(file.get(), array.data(), arrayBytes,
            what + ": reading the array '" + kArrayNames[i] + "'");
  }
  return state;
}

} // namespace fa::train
