//===- NpyTest.cpp - Reading and writing .npy files -----------------------===//

#include "fa/runtime/Npy.h"
#include "fa/runtime/Error.h"

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace fa;

namespace {

std::string tempPath(const std::string &name) {
  return testing::TempDir() + "fa_npy_test_" + name + ".npy";
}

std::string fileBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

/// A .npy file as NumPy would write it, with a chosen version and header.
std::string npyBytes(int major, const std::string &header,
                     const std::string &data) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  std::size_t length = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i, length >>= 8)
    bytes += static_cast<char>(length & 0xFF);
  return bytes + header + data;
}

std::string writeFile(const std::string &name, const std::string &bytes) {
  std::string path = tempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

template <typename T> std::string rawData(std::initializer_list<T> values) {
  std::string data(values.size() * sizeof(T), '\0');
  std::memcpy(data.data(), std::data(values), data.size());
  return data;
}

/// The message readNpy throws for a file with these bytes.
std::string readError(const std::string &name, const std::string &bytes) {
  std::string path = writeFile(name, bytes);
  try {
    readNpy(path);
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

TEST(NpyTest, F32RoundTrip) {
  HostTensor tensor{{2, 3}, {1, -2, 3.5f, 0, 1e-30f, -7}};
  std::string path = tempPath("f32");
  writeNpy(path, tensor, DType::F32);
  HostTensor read = readNpy(path);
  EXPECT_EQ(read.shape, tensor.shape);
  EXPECT_EQ(read.values, tensor.values);
}

TEST(NpyTest, F16RoundTripRoundsToHalf) {
  HostTensor tensor{{4}, {1, 0.1f, -65504, 3}};
  std::string path = tempPath("f16");
  writeNpy(path, tensor, DType::F16);
  HostTensor read = readNpy(path);
  EXPECT_EQ(read.shape, Shape{4});
  EXPECT_EQ(read.values[0], 1.0f);
  EXPECT_EQ(read.values[1], roundToDType(0.1f, DType::F16));
  EXPECT_EQ(read.values[2], -65504.0f);
}

TEST(NpyTest, WritesNumPysHeaderLayout) {
  std::string path = tempPath("layout");
  writeNpy(path, {{5}, {1, 2, 3, 4, 5}}, DType::F32);
  std::string bytes = fileBytes(path);
  std::size_t headerLength = static_cast<unsigned char>(bytes[8]) |
                             static_cast<unsigned char>(bytes[9]) << 8;
  std::string header = bytes.substr(10, headerLength);
  EXPECT_EQ((10 + headerLength) % 64, 0u) << "data must be 64-byte aligned";
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(header.find("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (5,), }"),
            std::string::npos)
      << header;
  EXPECT_EQ(bytes.size(), 10 + headerLength + 5 * 4);
}

TEST(NpyTest, ScalarAndEmptyShapes) {
  std::string path = tempPath("scalar");
  writeNpy(path, {{}, {42}}, DType::F32);
  HostTensor scalar = readNpy(path);
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.values, std::vector<float>{42});

  writeNpy(path, {{2, 0}, {}}, DType::F32);
  EXPECT_EQ(readNpy(path).shape, (Shape{2, 0}));
}

TEST(NpyTest, ReadsVersion2AndF64) {
  std::string header =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }\n";
  std::string path =
      writeFile("v2f8", npyBytes(2, header, rawData<double>({0.5, -1.25})));
  HostTensor read = readNpy(path);
  EXPECT_EQ(read.shape, (Shape{1, 2}));
  EXPECT_EQ(read.values, (std::vector<float>{0.5f, -1.25f}));
}

TEST(NpyTest, AcceptsKeysInAnyOrderAndSpacing) {
  std::string header = "{'shape':(3,),'fortran_order':False,'descr':'<f4'}\n";
  HostTensor read = readNpy(
      writeFile("order", npyBytes(1, header, rawData<float>({1, 2, 3}))));
  EXPECT_EQ(read.shape, Shape{3});
}

TEST(NpyTest, RejectsMalformedFiles) {
  auto header = [](const std::string &descr, const std::string &fortran,
                   const std::string &shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
           ", 'shape': " + shape + ", }\n";
  };
  std::string four = rawData<float>({1, 2, 3, 4});

  EXPECT_NE(readError("magic", "PK\x03\x04 this is a zip file")
                .find("not a NumPy .npy file (bad magic)"),
            std::string::npos);
  EXPECT_NE(readError("short", "\x93NU").find("too short"), std::string::npos);
  EXPECT_NE(
      readError("version", npyBytes(4, header("<f4", "False", "(4,)"), four))
          .find("unsupported .npy format version 4"),
      std::string::npos);
  EXPECT_NE(
      readError("bigendian", npyBytes(1, header(">f4", "False", "(4,)"), four))
          .find("big-endian data ('>f4') is not supported"),
      std::string::npos);
  EXPECT_NE(
      readError("fortran", npyBytes(1, header("<f4", "True", "(2, 2)"), four))
          .find("Fortran-ordered arrays are not supported"),
      std::string::npos);
  EXPECT_NE(
      readError("int", npyBytes(1, header("<i4", "False", "(4,)"), four))
          .find("unsupported dtype '<i4'; expected '<f2', '<f4' or '<f8'"),
      std::string::npos);
  EXPECT_NE(
      readError("truncated", npyBytes(1, header("<f4", "False", "(5,)"), four))
          .find("file is truncated: shape [5] of '<f4' needs 20 bytes"),
      std::string::npos);
  EXPECT_NE(readError("noshape", npyBytes(1,
                                          "{'descr': '<f4', 'fortran_order': "
                                          "False}\n",
                                          four))
                .find("header has no valid 'shape' entry"),
            std::string::npos);
  EXPECT_NE(
      readError("badshape", npyBytes(1, header("<f4", "False", "(2 2)"), four))
          .find("cannot parse shape (2 2)"),
      std::string::npos);
}

/// A version `major` file of '<f4' data with this shape text, e.g. "(5,)",
/// and no data at all.
std::string headerOnly(int major, const std::string &shape) {
  return npyBytes(major,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape +
                      ", }\n",
                  "");
}

TEST(NpyTest, DeclaredDataBeyondTheFileIsRejectedBeforeAllocating) {
  // 2^60 floats (4 EiB) and then 10^9 floats (4 GB), declared by files of a
  // few dozen bytes.
  for (const std::string extent : {"1152921504606846976", "1000000000"}) {
    std::string bytes = headerOnly(1, "(" + extent + ",)");
    std::string path = writeFile("huge", bytes);
    std::string declared = std::to_string(std::stoll(extent) * 4);
    EXPECT_EQ(readError("huge", bytes),
              "reading " + path + ": file is truncated: shape [" + extent +
                  "] of '<f4' needs " + declared +
                  " bytes of data, but 0 follow the header (the file has " +
                  std::to_string(bytes.size()) + " bytes)");
  }
}

TEST(NpyTest, ExtentsBeyondInt64AreRejected) {
  std::string path = tempPath("extent");
  EXPECT_EQ(readError("extent", headerOnly(1, "(99999999999999999999,)")),
            "reading " + path +
                ": cannot parse the header: shape extent "
                "99999999999999999999 is larger than 9223372036854775807");
}

TEST(NpyTest, ShapesWhoseByteCountOverflowsAreRejected) {
  // 2^32 * 2^32 elements wrapped to 0 in 64 bits: an empty tensor of that
  // shape. 2^62 elements of 4 bytes: the element count fits, the bytes do not.
  for (const std::string shape :
       {"(4294967296, 4294967296)", "(4611686018427387904,)"}) {
    std::string message = readError("overflow", headerOnly(1, shape));
    EXPECT_EQ(message.rfind("reading " + tempPath("overflow") + ": ", 0), 0u)
        << message;
    EXPECT_NE(message.find("overflows a 64-bit integer"), std::string::npos)
        << message;
  }
}

TEST(NpyTest, HeadersLongerThanNumPysLimitAreRejected) {
  // A regex over a long descr recursed once per character and overflowed
  // the stack.
  for (int major : {1, 2}) {
    std::string descr(major == 1 ? 60000 : 1 << 20, 'f');
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }\n";
    std::string path = tempPath("long");
    EXPECT_EQ(readError("long", npyBytes(major, header, "")),
              "reading " + path + ": header of " +
                  std::to_string(header.size()) +
                  " bytes is longer than 10000, NumPy's own limit for a "
                  "tensor's header");
  }
  // A 4 GiB header length in a file of 12 bytes.
  std::string bytes = npyBytes(2, "", "");
  bytes.replace(8, 4, "\xff\xff\xff\xff");
  EXPECT_EQ(readError("long", bytes),
            "reading " + tempPath("long") +
                ": header of 4294967295 bytes is "
                "longer than 10000, NumPy's own limit for a tensor's header");
}

TEST(NpyTest, HeaderLengthBeyondTheFileIsTruncation) {
  std::string bytes = npyBytes(1, "{'descr': '<f4', ", "");
  bytes[8] = static_cast<char>(200); // Claims 200 bytes of header.
  EXPECT_EQ(readError("cut", bytes),
            "reading " + tempPath("cut") + ": file is truncated: its " +
                std::to_string(bytes.size()) +
                " bytes end inside the 200-byte header");
}

TEST(NpyTest, OnlyRegularFilesAreRead) {
  // Opening a pipe blocked until a writer came, and its size is unknown.
  std::string path = tempPath("fifo");
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(errortest::errorOf([&] { readNpy(path); }),
            "reading " + path + ": not a regular file");
}

TEST(NpyTest, ErrorsNameTheFile) {
  std::string path = tempPath("does_not_exist");
  try {
    readNpy(path);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "reading " + path + ": cannot open the file");
  }
}

TEST(NpyTest, ShapeMismatchSaysWhatWasExpected) {
  HostTensor tensor{{2, 4, 8}, std::vector<float>(64)};
  EXPECT_NO_THROW(expectNpyShape("k.npy", tensor, {2, 4, 8}, "keys"));
  try {
    expectNpyShape("k.npy", tensor, {2, 4, 8, 64}, "k must be [B, Hk, M, D]");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "k.npy has shape [2, 4, 8], expected "
                               "[2, 4, 8, 64] (k must be [B, Hk, M, D])");
  }
}

TEST(NpyTest, Bfloat16CannotBeWritten) {
  EXPECT_THROW(writeNpy(tempPath("bf16"), {{1}, {1}}, DType::BF16), Error);
}

} // namespace
