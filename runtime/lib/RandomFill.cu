//===- RandomFill.cu - Random normal tensors generated on the GPU ---------===//
//
// fa-run's random inputs are drawn where they are used, so that a benchmark
// of a large problem needs no host memory and no upload. Element i of tensor
// `stream` under `seed` is a pure function of (seed, stream, i):
//
//   h  = mix(mix(seed ^ mix(stream)) + i)            (splitmix64's finaliser)
//   u1 = ((h >> 32) + 1) / 2^32,  u2 = (h & 0xFFFFFFFF) / 2^32
//   x  = sqrt(-2 ln u1) cos(2 pi u2)                 (Box-Muller, in f32)
//
// rounded to the element type (round to nearest even), so every thread
// count and launch shape gives the same tensor.
//
//===----------------------------------------------------------------------===//

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ float normalAt(std::uint64_t key, std::int64_t i) {
  std::uint64_t h = mix(key + static_cast<std::uint64_t>(i));
  float u1 = (static_cast<float>(h >> 32) + 1.0f) * 2.3283064365386963e-10f;
  float u2 = static_cast<float>(h & 0xFFFFFFFFull) * 2.3283064365386963e-10f;
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <typename T> __device__ T fromFloat(float x);
template <> __device__ float fromFloat<float>(float x) { return x; }
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}

template <typename T>
__device__ void fill(T *out, std::int64_t count, std::uint64_t seed,
                     std::uint64_t stream) {
  std::uint64_t key = mix(seed ^ mix(stream));
  std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i =
           static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    out[i] = fromFloat<T>(normalAt(key, i));
}

} // namespace

extern "C" __global__ void random_normal_f32(float *out, std::int64_t count,
                                             std::uint64_t seed,
                                             std::uint64_t stream) {
  fill(out, count, seed, stream);
}

extern "C" __global__ void random_normal_bf16(__nv_bfloat16 *out,
                                              std::int64_t count,
                                              std::uint64_t seed,
                                              std::uint64_t stream) {
  fill(out, count, seed, stream);
}

extern "C" __global__ void random_normal_f16(__half *out, std::int64_t count,
                                             std::uint64_t seed,
                                             std::uint64_t stream) {
  fill(out, count, seed, stream);
}
