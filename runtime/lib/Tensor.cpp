//===- Tensor.cpp ---------------------------------------------------------===//

#include "fa/runtime/Tensor.h"

#include "fa/runtime/CheckedMath.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace fa {

std::string formatShape(const Shape &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::int64_t elementCount(const Shape &shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) {
    if (extent < 0)
      throw Error("shape " + formatShape(shape) + " has a negative extent");
    count = checkedMultiply(
        count, extent, "counting the elements of shape " + formatShape(shape));
  }
  return count;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

std::size_t tensorBytes(const Shape &shape, DType dtype) {
  return checkedMultiply(
      static_cast<std::size_t>(elementCount(shape)), dtypeBytes(dtype),
      "sizing a " + formatShape(shape) + " " + dtypeName(dtype) + " tensor");
}

HostTensor download(const DeviceBuffer &buffer, const Shape &shape,
                    DType dtype) {
  return {shape, decode(buffer.download(), dtype)};
}

namespace {

// Elements drawn by one generator. Chunks are seeded from the caller's
// generator and their index, so a tensor's values depend on the seed only,
// not on how many threads drew them.
constexpr std::size_t kRandomChunk = std::size_t{1} << 20;

void fillChunk(std::vector<float> &values, std::size_t chunk,
               std::uint64_t seed, DType dtype) {
  std::mt19937_64 rng(seed + 0x9E3779B97F4A7C15ull * (chunk + 1));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::size_t end = std::min(values.size(), (chunk + 1) * kRandomChunk);
  for (std::size_t i = chunk * kRandomChunk; i < end; ++i)
    values[i] = roundToDType(normal(rng), dtype);
}

} // namespace

// Benchmarks draw hundreds of millions of samples (four 16k x 2048 tensors
// for the attention backward): one thread took seconds per fa-run call.
HostTensor randomTensor(const Shape &shape, DType dtype, std::mt19937_64 &rng) {
  std::vector<float> values(static_cast<std::size_t>(elementCount(shape)));
  std::uint64_t seed = rng();
  std::size_t chunks = (values.size() + kRandomChunk - 1) / kRandomChunk;
  std::size_t threads = std::min<std::size_t>(
      chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t chunk = next++; chunk < chunks; chunk = next++)
      fillChunk(values, chunk, seed, dtype);
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &thread : pool)
    thread.join();
  return {shape, std::move(values)};
}

} // namespace fa
