//===- attention_common.cuh - Warp-level pieces of the attention kernels --===//
//
// What attention_forward.cu and attention_backward.cu share: tensor-core
// fragments (mma.sync m16n8k16 with f32 accumulation), ldmatrix loads from
// XOR-swizzled shared memory, cp.async tile copies, and the launch-side
// checks.
//
// Fragment layouts of mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), for lane = 4 * g + t (g = lane / 4, t = lane % 4), each
// 32-bit register holding two consecutive 16-bit elements:
//   A (16 x 16, row major)  a0 = A[g][2t..2t+1]    a1 = A[g+8][2t..2t+1]
//                           a2 = A[g][2t+8..2t+9]  a3 = A[g+8][2t+8..2t+9]
//   B (16 x 8, "col")       b0 = B[2t..2t+1][g]    b1 = B[2t+8..2t+9][g]
//   C (16 x 8, f32)         c0, c1 = C[g][2t..2t+1]  c2, c3 = C[g+8][2t..2t+1]
// ldmatrix.x4 loads four 8 x 8 matrices, lanes 8i..8i+7 giving the row
// addresses of matrix i, which lands in register i; lane 4g + t receives
// row g, columns 2t..2t+1 of each (with .trans: rows 2t..2t+1 of column g).
// So a C fragment is, register for register, half of an A fragment: the
// accumulator of one product feeds the next without shared memory.
//
// Shared-memory tiles hold rows of 16-bit elements, at least 64 per row, in
// 16-byte chunks; chunk c of row r is stored at chunk c ^ (r % 8). The eight
// row addresses of an ldmatrix matrix (eight rows, one chunk) and the eight
// rows a warp's C-fragment store touches then fall in eight different
// groups of four banks: no bank conflicts, for rows of 128 or 256 bytes.
//
//===----------------------------------------------------------------------===//

#ifndef FA_BENCH_HANDWRITTEN_ATTENTION_COMMON_CUH
#define FA_BENCH_HANDWRITTEN_ATTENTION_COMMON_CUH

#include "attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace fa::handwritten::detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarpSize = 32;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

template <typename T> struct Element;

template <> struct Element<__nv_bfloat16> {
  static __device__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&pair);
  }
  static __device__ float2 unpack(uint32_t bits) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&bits));
  }
  /// c += a * b, one m16n8k16 tile.
  static __device__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <> struct Element<__half> {
  static __device__ uint32_t pack(float lo, float hi) {
    __half2 pair = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&pair);
  }
  static __device__ float2 unpack(uint32_t bits) {
    return __half22float2(*reinterpret_cast<__half2 *>(&bits));
  }
  static __device__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

/// C fragments of the n-tiles 2kk and 2kk+1 of one row block (16 x 16 of a
/// product's result), rounded, as the A fragment of k-step kk of the next.
template <typename T>
__device__ void accumulatorsToA(uint32_t (&a)[4], const float (&lo)[4],
                                const float (&hi)[4]) {
  a[0] = Element<T>::pack(lo[0], lo[1]);
  a[1] = Element<T>::pack(lo[2], lo[3]);
  a[2] = Element<T>::pack(hi[0], hi[1]);
  a[3] = Element<T>::pack(hi[2], hi[3]);
}

template <int N> __device__ void zero(float (&c)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      c[i][e] = 0.f;
}

//===----------------------------------------------------------------------===//
// Swizzled shared-memory tiles
//===----------------------------------------------------------------------===//

__device__ inline uint32_t sharedAddress(const void *pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

/// A tile of kRows x kCols 16-bit elements at shared address `base`, which
/// is a multiple of kRowBytes.
template <int kRows, int kCols> struct Tile {
  static_assert(kCols % 64 == 0, "the swizzle permutes 8 chunks of a row");
  static constexpr int kChunks = kCols / 8; // 16-byte chunks per row.
  static constexpr int kRowBytes = kCols * 2;
  static constexpr int kBytes = kRows * kRowBytes;

  uint32_t base;

  /// Shared address of the 16-byte chunk holding columns 8c..8c+7 of row r.
  __device__ uint32_t chunk(int r, int c) const {
    return base + r * kRowBytes + ((c ^ (r & 7)) << 4);
  }
  /// Shared address of element (r, col).
  __device__ uint32_t element(int r, int col) const {
    return chunk(r, col >> 3) + ((col & 7) << 1);
  }
};

/// Keeps the compiler from hoisting values computed from `value` out of the
/// loop this is called in. Without it, the address of every fragment of
/// every unrolled k-step is loop-invariant and gets its own register for the
/// whole kernel (dozens), which is what made the D = 128 kernels spill.
__device__ inline void opaque(uint32_t &value) {
  asm volatile("" : "+r"(value));
}

//===----------------------------------------------------------------------===//
// ldmatrix: one lane address per pattern, offsets by XOR and add
//===----------------------------------------------------------------------===//

/// The address one lane gives ldmatrix for the fragment at (0, 0) of a
/// tile; the fragment at (rows, cols), both multiples of 16, is at
/// (address ^ (cols / 8 * 16)) + rows * kRowBytes. Moving by whole groups of
/// 8 rows keeps every row's swizzle, and the lane's own chunk offset is 0 or
/// 1, so adding an even number of chunks before the swizzle equals XORing
/// it in after: one LOP3 per fragment, no per-fragment register. `bytes`
/// (a multiple of 256, such as another tile of the same shape at a fixed
/// offset) is added last, where it becomes the instruction's immediate.
template <typename TileType> struct LaneAddress {
  uint32_t address;

  __device__ uint32_t at(int rows, int cols, int bytes = 0) const {
    return (address ^ ((cols >> 3) << 4)) + rows * TileType::kRowBytes + bytes;
  }
};

/// For A = the tile ([M][K], loadA) and for B = the tile ([K][N],
/// loadBPairFromColumns): lanes 0-15 address rows 0-15 at chunk 0, lanes
/// 16-31 the same rows at chunk 1.
template <typename TileType>
__device__ LaneAddress<TileType> rowsOf16(TileType tile, int row0, int lane) {
  return {tile.chunk(row0 + (lane & 15), lane >> 4)};
}

/// For B = the tile transposed ([N][K], loadBPairFromRows) and for A = the
/// tile transposed ([K][M], loadATransposed): lanes 0-7 address rows 0-7 at
/// chunk 0, lanes 8-15 rows 0-7 at chunk 1, lanes 16-23 rows 8-15 at chunk
/// 0, lanes 24-31 rows 8-15 at chunk 1.
template <typename TileType>
__device__ LaneAddress<TileType> pairsOf8(TileType tile, int row0, int lane) {
  return {tile.chunk(row0 + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1)};
}

__device__ inline void ldmatrixX4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ inline void ldmatrixX4Trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
               "{%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

/// A fragment of rows m0..m0+15, columns k0..k0+15 of a tile holding A
/// itself ([M][K]); `lanes` from rowsOf16. Matrices (m, k) = (0, 0), (8, 0),
/// (0, 8), (8, 8) land in a0..a3.
template <typename TileType>
__device__ void loadA(uint32_t (&a)[4], LaneAddress<TileType> lanes, int m0,
                      int k0, int bytes = 0) {
  ldmatrixX4(a, lanes.at(m0, k0, bytes));
}

/// A fragment of A = X^T from a tile holding X ([K][M]); `lanes` from
/// pairsOf8. Transposed loads of X's matrices (k, m) = (0, 0), (0, 8),
/// (8, 0), (8, 8), which are A's (0, 0), (8, 0), (0, 8), (8, 8).
template <typename TileType>
__device__ void loadATransposed(uint32_t (&a)[4], LaneAddress<TileType> lanes,
                                int m0, int k0, int bytes = 0) {
  ldmatrixX4Trans(a, lanes.at(k0, m0, bytes));
}

/// B fragments of two n-tiles, n0..n0+7 in b[0..1] and n0+8..n0+15 in
/// b[2..3], over k0..k0+15, for B = X^T from a tile holding X ([N][K], as K
/// is held for Q K^T): B's columns are X's rows, so no transpose; `lanes`
/// from pairsOf8.
template <typename TileType>
__device__ void loadBPairFromRows(uint32_t (&b)[4], LaneAddress<TileType> lanes,
                                  int n0, int k0, int bytes = 0) {
  ldmatrixX4(b, lanes.at(n0, k0, bytes));
}

/// The same two n-tiles for B itself held [K][N] (as V is held for P V):
/// transposed loads of the matrices (k, n) = (0, 0), (8, 0), (0, 8), (8, 8);
/// `lanes` from rowsOf16.
template <typename TileType>
__device__ void loadBPairFromColumns(uint32_t (&b)[4],
                                     LaneAddress<TileType> lanes, int k0,
                                     int n0, int bytes = 0) {
  ldmatrixX4Trans(b, lanes.at(k0, n0, bytes));
}

//===----------------------------------------------------------------------===//
// cp.async
//===----------------------------------------------------------------------===//

/// 16 bytes from global to shared memory, or 16 zero bytes when !valid (the
/// source is then not read, but is kept a valid address all the same).
__device__ inline void copyAsync16(uint32_t to, const void *from, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :
               : "r"(to), "l"(from), "r"(valid ? 16 : 0)
               : "memory");
}

/// 4 bytes, or 4 zero bytes when !valid.
__device__ inline void copyAsync4(uint32_t to, const void *from, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
               :
               : "r"(to), "l"(from), "r"(valid ? 4 : 0)
               : "memory");
}

__device__ inline void commitCopies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

__device__ inline void waitAllCopies() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/// One thread's share of copying a [kRows][kCols] block of global memory
/// (row stride kCols elements) into a tile of that shape: the chunk
/// (row0 + step * kRowsPerStep, column) for each step, so that a warp
/// reads whole rows and every step's rows have the same swizzle.
template <int kThreads, typename TileType> struct TileCopy {
  static constexpr int kChunks = TileType::kChunks;
  static_assert(kThreads % kChunks == 0 && (kThreads / kChunks) % 8 == 0,
                "every step covers whole groups of 8 rows");
  static constexpr int kRowsPerStep = kThreads / kChunks;

  int row0;        // This thread's row in step 0.
  int offset;      // Its chunk's element offset in step 0, global.
  uint32_t shared; // Its chunk's byte offset in step 0, in the tile.

  __device__ TileCopy() {
    row0 = threadIdx.x / kChunks;
    const int c = threadIdx.x % kChunks;
    offset = row0 * TileType::kChunks * 8 + c * 8;
    shared = row0 * TileType::kRowBytes + ((c ^ (row0 & 7)) << 4);
  }

  /// Rows 0..rows-1 of `from` into `tile` (rows >= 1), zeros after them.
  template <int kRows, typename T>
  __device__ void copy(TileType tile, const T *from, int rows) const {
    static_assert(kRows % kRowsPerStep == 0, "whole steps");
#pragma unroll
    for (int step = 0; step < kRows / kRowsPerStep; ++step) {
      const int row = row0 + step * kRowsPerStep;
      // Rows past the end read a valid row and write zeros.
      const int source = min(row, rows - 1) - row0;
      copyAsync16(tile.base + shared +
                      step * kRowsPerStep * TileType::kRowBytes,
                  from + offset + source * TileType::kChunks * 8, row < rows);
    }
  }
};

/// The first `rows` rows of a warp's own `warpRows` rows of `tile` (from
/// row `row0`) to global memory, 16 bytes per lane per step; the caller has
/// written them to the tile and synchronised the warp.
template <typename TileType, typename T>
__device__ void storeWarpRows(TileType tile, int row0, int warpRows, T *to,
                              int rows, int lane) {
  constexpr int kChunks = TileType::kChunks;
  for (int i = lane; i < warpRows * kChunks; i += kWarpSize) {
    const int r = i / kChunks, c = i % kChunks;
    if (r >= rows)
      break;
    uint4 chunk;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(chunk.x), "=r"(chunk.y), "=r"(chunk.z), "=r"(chunk.w)
                 : "r"(tile.chunk(row0 + r, c)));
    *reinterpret_cast<uint4 *>(to + r * kChunks * 8 + c * 8) = chunk;
  }
}

/// Stores the C fragment `c` (rows row0 + g and row0 + g + 8, columns col0 +
/// 2t, +1), times the factor of its row, rounded to T, into `tile`.
template <typename T, typename TileType>
__device__ void storeAccumulator(TileType tile, int row0, int col0,
                                 const float (&c)[4], float topFactor,
                                 float bottomFactor, int lane) {
  const int r = row0 + (lane >> 2), col = col0 + 2 * (lane & 3);
  const uint32_t top = Element<T>::pack(c[0] * topFactor, c[1] * topFactor);
  const uint32_t bottom =
      Element<T>::pack(c[2] * bottomFactor, c[3] * bottomFactor);
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(tile.element(r, col)),
               "r"(top));
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(tile.element(r + 8, col)),
               "r"(bottom));
}

//===----------------------------------------------------------------------===//
// Launch side
//===----------------------------------------------------------------------===//

/// Sets the kernel's dynamic shared-memory limit (above the default 48 KiB
/// it must be asked for) and launches it.
template <typename Kernel, typename Params>
cudaError_t launchWithSharedMemory(Kernel kernel, dim3 grid, dim3 block,
                                   int sharedBytes, cudaStream_t stream,
                                   const Params &params) {
  cudaError_t error = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sharedBytes);
  if (error != cudaSuccess)
    return error;
  kernel<<<grid, block, sharedBytes, stream>>>(params);
  return cudaGetLastError();
}

inline bool aligned16(const void *pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

__host__ __device__ constexpr int ceilDiv(int a, int b) {
  return (a + b - 1) / b;
}

/// 2^x, flushing denormals: the exponentials of softmax, where exp2(-inf)
/// must be 0 and the ulp of ex2.approx is far below bf16's.
__device__ inline float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/// The sum of `value` over the four lanes holding one row of a C fragment.
__device__ inline float quadSum(float value) {
  value += __shfl_xor_sync(0xffffffffu, value, 1);
  return value + __shfl_xor_sync(0xffffffffu, value, 2);
}

__device__ inline float quadMax(float value) {
  value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 1));
  return fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 2));
}

template <typename T> struct TypeTag {
  using type = T;
};
template <int D> struct DimTag {
  static constexpr int value = D;
};

/// Calls launch(TypeTag<T>{}, DimTag<D>{}) with the element type and head
/// dimension as compile-time types; the problem has been validated.
template <typename Launch>
cudaError_t dispatch(AttentionDType dtype, int headDim, Launch &&launch) {
  if (dtype == AttentionDType::BF16)
    return headDim == 64 ? launch(TypeTag<__nv_bfloat16>{}, DimTag<64>{})
                         : launch(TypeTag<__nv_bfloat16>{}, DimTag<128>{});
  return headDim == 64 ? launch(TypeTag<__half>{}, DimTag<64>{})
                       : launch(TypeTag<__half>{}, DimTag<128>{});
}

} // namespace fa::handwritten::detail

#endif // FA_BENCH_HANDWRITTEN_ATTENTION_COMMON_CUH
