// How much the training step's matrix products would gain from timing
// cuBLASLt's candidate algorithms instead of taking its heuristic's first.
//
// For each product of one GPT block (runtime/train/Matmul.cpp's mappings and
// epilogues as `fa-run train` uses them by default: forward with BIAS, the fc
// layer with GELU_AUX_BIAS, backward-input plain, backward-weight with
// BGRADB into f32), at M tokens and width C (MLP 4C), asks the heuristic for
// up to --candidates algorithms and times each (CUDA events, median of
// --runs after --warmup). Prints per product the heuristic's first, the
// fastest and its rank, and the sum over a block.
//
// --split-k: also tries each of the first four candidates with split-K
// (CUBLASLT_ALGO_CONFIG_SPLITK_NUM 2..16 and every reduction scheme the
// algorithm accepts, per cublasLtMatmulAlgoCheck), since the weight-gradient
// products have few output tiles (768 x 768: 36 of 128 x 128) for 132 SMs.
//
// --overlap: times the block's eight backward products in the step's order
// on one stream, then with each weight-gradient product on a second stream
// (forked when its dy is ready, joined at the end): what running the dW
// products beside the critical path could save, GEMMs against GEMMs only.
//
//   nvcc -O2 -std=c++17 bench/cublaslt_algos.cpp -lcublasLt -o cublaslt_algos
//   ./cublaslt_algos --tokens 16384 --width 768 [--candidates 16]
//       [--split-k] [--overlap]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "cublaslt_algos: %s: %s\n", what,
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublaslt_algos: %s: %s\n", what,
                 cublasLtGetStatusString(status));
    std::exit(1);
  }
}

struct Product {
  std::string name;
  cublasOperation_t transA, transB;
  int m, n, k; // column-major D (m x n) = op(A) (m x k) op(B) (k x n)
  cudaDataType_t dType;
  cublasLtEpilogue_t epilogue;
  bool inBlock = true; // Counted in the block's total (the default step's).
};

/// The block's products for y = x W^T with x [M, K], W [N, K] (Matmul.cpp):
/// forward A = W (K x N, T), B = x (K x M, N), D N x M; backward-input A = W
/// (K x N, N), B = dy (N x M, N), D K x M; backward-weight A = x (K x M, N),
/// B = dy (N x M, T), D K x N.
std::vector<Product> blockProducts(int tokens, int width) {
  struct Linear {
    const char *name;
    int in, out;
    bool gelu;
  };
  const Linear linears[] = {{"qkv", width, 3 * width, false},
                            {"proj", width, width, false},
                            {"fc", width, 4 * width, true},
                            {"fc_proj", 4 * width, width, false}};
  std::vector<Product> products;
  // fc_proj's backward-input with GELU's backward in the epilogue (D times
  // gelu'(aux)), with and without the bias gradient: off by default in
  // fa-run train (--epilogues), where the heuristic's DGELU_BGRAD cost more
  // product time than the GELU-backward kernel it saves.
  for (cublasLtEpilogue_t epilogue :
       {CUBLASLT_EPILOGUE_DGELU, CUBLASLT_EPILOGUE_DGELU_BGRAD})
    products.push_back({epilogue == CUBLASLT_EPILOGUE_DGELU
                            ? "fc_proj bwd-input DGELU"
                            : "fc_proj bwd-input DGELU_BGRAD",
                        CUBLAS_OP_N, CUBLAS_OP_N, 4 * width, tokens, width,
                        CUDA_R_16BF, epilogue, /*inBlock=*/false});
  for (const Linear &l : linears) {
    products.push_back(
        {std::string(l.name) + " forward", CUBLAS_OP_T, CUBLAS_OP_N, l.out,
         tokens, l.in, CUDA_R_16BF,
         l.gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS});
    products.push_back({std::string(l.name) + " backward-input", CUBLAS_OP_N,
                        CUBLAS_OP_N, l.in, tokens, l.out, CUDA_R_16BF,
                        CUBLASLT_EPILOGUE_DEFAULT});
    products.push_back({std::string(l.name) + " backward-weight", CUBLAS_OP_N,
                        CUBLAS_OP_T, l.in, l.out, tokens, CUDA_R_32F,
                        CUBLASLT_EPILOGUE_BGRADB});
  }
  return products;
}

cublasLtMatrixLayout_t layout(cudaDataType_t type, cublasOperation_t op,
                              int opRows, int opCols) {
  const int rows = op == CUBLAS_OP_N ? opRows : opCols;
  const int cols = op == CUBLAS_OP_N ? opCols : opRows;
  cublasLtMatrixLayout_t result = nullptr;
  check(cublasLtMatrixLayoutCreate(&result, type, rows, cols, rows),
        "cublasLtMatrixLayoutCreate");
  return result;
}

float median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

bool boolFlag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0)
      return true;
  return false;
}

int intFlag(int argc, char **argv, const char *flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0)
      return std::atoi(argv[i + 1]);
  return fallback;
}

/// The device buffers every product reads and writes: big enough for every
/// operand (4C x M elements, f32 for D), two of each output and workspace
/// for the two streams of --overlap.
struct Buffers {
  size_t workspaceBytes = size_t{32} << 20;
  void *a = nullptr, *b = nullptr, *aux = nullptr, *bias = nullptr;
  void *d[2] = {nullptr, nullptr}, *workspace[2] = {nullptr, nullptr};

  explicit Buffers(size_t elems, int width) {
    check(cudaMalloc(&a, elems * 2), "cudaMalloc A");
    check(cudaMalloc(&b, elems * 2), "cudaMalloc B");
    check(cudaMalloc(&aux, elems * 2), "cudaMalloc aux");
    check(cudaMalloc(&bias, size_t{4} * width * 4), "cudaMalloc bias");
    for (int s = 0; s < 2; ++s) {
      check(cudaMalloc(&d[s], elems * 4), "cudaMalloc D");
      check(cudaMalloc(&workspace[s], workspaceBytes), "cudaMalloc workspace");
    }
    // Random operands (zeros would draw less power and time faster).
    std::vector<__nv_bfloat16> host(elems);
    unsigned state = 12345;
    for (__nv_bfloat16 &value : host) {
      state = state * 1664525u + 1013904223u;
      value =
          __float2bfloat16(static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
    }
    for (void *target : {a, b, aux})
      check(cudaMemcpy(target, host.data(), elems * 2, cudaMemcpyHostToDevice),
            "uploading an operand");
    check(cudaMemset(bias, 0, size_t{4} * width * 4), "cudaMemset bias");
  }
};

/// One product's descriptors and its heuristic candidates.
struct Prepared {
  Product p;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;

  Prepared(cublasLtHandle_t handle, const Product &product,
           const Buffers &buffers, int maxCandidates)
      : p(product) {
    check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    int32_t transA = p.transA, transB = p.transB;
    uint32_t epilogue = p.epilogue;
    setAttribute(CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof(transA));
    setAttribute(CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof(transB));
    setAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
    const bool hasBias = p.epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
                         p.epilogue != CUBLASLT_EPILOGUE_DGELU;
    const bool hasAux = p.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
                        p.epilogue == CUBLASLT_EPILOGUE_DGELU ||
                        p.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    if (hasBias) {
      // Forward biases in D's type (bf16); bias gradients in f32.
      int32_t biasType = p.epilogue == CUBLASLT_EPILOGUE_BGRADB ||
                                 p.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD
                             ? CUDA_R_32F
                             : CUDA_R_16BF;
      setAttribute(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                   sizeof(biasType));
      setAttribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &buffers.bias,
                   sizeof(buffers.bias));
    }
    if (hasAux) {
      int64_t auxLd = p.m;
      setAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof(auxLd));
      setAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &buffers.aux,
                   sizeof(buffers.aux));
    }
    la = layout(CUDA_R_16BF, p.transA, p.m, p.k);
    lb = layout(CUDA_R_16BF, p.transB, p.k, p.n);
    ld = layout(p.dType, CUBLAS_OP_N, p.m, p.n);
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
              &buffers.workspaceBytes, sizeof(buffers.workspaceBytes)),
          "MAX_WORKSPACE_BYTES");
    candidates.resize(maxCandidates);
    int found = 0;
    status = cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, pref,
                                            maxCandidates, candidates.data(),
                                            &found);
    candidates.resize(status == CUBLAS_STATUS_SUCCESS ? found : 0);
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~Prepared() {
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
  }
  Prepared(const Prepared &) = delete;
  Prepared &operator=(const Prepared &) = delete;

  void setAttribute(cublasLtMatmulDescAttributes_t attribute, const void *value,
                    size_t bytes) {
    check(cublasLtMatmulDescSetAttribute(desc, attribute, value, bytes),
          "cublasLtMatmulDescSetAttribute");
  }
  double flops() const { return 2.0 * p.m * p.n * p.k; }

  cublasStatus_t launch(cublasLtHandle_t handle, const Buffers &buffers,
                        const cublasLtMatmulAlgo_t &algo, int slot,
                        cudaStream_t stream) const {
    const float alpha = 1, beta = 0;
    return cublasLtMatmul(handle, desc, &alpha, buffers.a, la, buffers.b, lb,
                          &beta, buffers.d[slot], ld, buffers.d[slot], ld,
                          &algo, buffers.workspace[slot],
                          buffers.workspaceBytes, stream);
  }
};

/// Median milliseconds of `run` (which enqueues on the default stream or
/// joins its streams back to it) over `runs` after `warmup`.
template <typename Run> float timeMedian(int warmup, int runs, Run &&run) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int w = 0; w < warmup; ++w)
    run();
  std::vector<float> samples;
  for (int r = 0; r < runs; ++r) {
    check(cudaEventRecord(start), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    samples.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(samples);
}

/// The candidate's time, or 1e30 where it does not launch.
float timeAlgo(cublasLtHandle_t handle, const Buffers &buffers,
               const Prepared &product, const cublasLtMatmulAlgo_t &algo,
               int warmup, int runs) {
  if (product.launch(handle, buffers, algo, 0, nullptr) !=
      CUBLAS_STATUS_SUCCESS) {
    cudaGetLastError();
    return 1e30f;
  }
  const float ms = timeMedian(
      warmup, runs, [&] { product.launch(handle, buffers, algo, 0, nullptr); });
  check(cudaDeviceSynchronize(), product.p.name.c_str());
  return ms;
}

/// The fastest split-K variant of the first four candidates: (ms, splits,
/// reduction scheme, candidate), or ms 1e30 where none is accepted.
struct SplitChoice {
  float ms = 1e30f;
  int splits = 0;
  uint32_t scheme = 0;
  int candidate = -1;
};

SplitChoice bestSplitK(cublasLtHandle_t handle, const Buffers &buffers,
                       const Prepared &product, int warmup, int runs) {
  SplitChoice best;
  const int tried = std::min<int>(4, product.candidates.size());
  for (int c = 0; c < tried; ++c) {
    const cublasLtMatmulAlgo_t base = product.candidates[c].algo;
    uint32_t schemes = 0;
    size_t written = 0;
    cublasLtMatmulAlgoCapGetAttribute(&base,
                                      CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                      &schemes, sizeof(schemes), &written);
    int splitSupport = 0;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                      &splitSupport, sizeof(splitSupport),
                                      &written);
    if (!splitSupport)
      continue;
    for (int splits : {2, 3, 4, 6, 8, 12, 16}) {
      for (uint32_t scheme : {CUBLASLT_REDUCTION_SCHEME_INPLACE,
                              CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                              CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}) {
        if (!(schemes & scheme))
          continue;
        cublasLtMatmulAlgo_t algo = base;
        int32_t splitNum = splits;
        cublasLtMatmulAlgoConfigSetAttribute(&algo,
                                             CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &splitNum, sizeof(splitNum));
        cublasLtMatmulAlgoConfigSetAttribute(
            &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
            sizeof(scheme));
        cublasLtMatmulHeuristicResult_t result{};
        if (cublasLtMatmulAlgoCheck(handle, product.desc, product.la,
                                    product.lb, product.ld, product.ld, &algo,
                                    &result) != CUBLAS_STATUS_SUCCESS ||
            result.workspaceSize > buffers.workspaceBytes)
          continue;
        const float ms = timeAlgo(handle, buffers, product, algo, warmup, runs);
        if (ms < best.ms)
          best = {ms, splits, scheme, c};
      }
    }
  }
  return best;
}

/// The block's backward products in the step's order (GptModel's
/// backwardLayer with every epilogue on): a dx product, then the dW product
/// of the same dy, per linear from fc_proj down to qkv.
std::vector<Product> backwardProducts(const std::vector<Product> &all) {
  const char *order[] = {"fc_proj bwd-input DGELU", "fc_proj backward-weight",
                         "fc backward-input",       "fc backward-weight",
                         "proj backward-input",     "proj backward-weight",
                         "qkv backward-input",      "qkv backward-weight"};
  std::vector<Product> result;
  for (const char *name : order)
    for (const Product &p : all)
      if (p.name == name)
        result.push_back(p);
  return result;
}

/// Sequential against dW products on a second stream (each forked when the
/// dx product before it is enqueued, all joined at the end).
void timeOverlap(cublasLtHandle_t handle, const Buffers &buffers,
                 const std::vector<Product> &all, int warmup, int runs) {
  std::vector<std::unique_ptr<Prepared>> products;
  for (const Product &p : backwardProducts(all)) {
    products.push_back(std::make_unique<Prepared>(handle, p, buffers, 1));
    if (products.back()->candidates.empty()) {
      std::printf("overlap: %s has no algorithm\n", p.name.c_str());
      return;
    }
  }
  cudaStream_t side = nullptr;
  check(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
        "cudaStreamCreate");
  std::vector<cudaEvent_t> forks(products.size());
  cudaEvent_t join;
  for (cudaEvent_t &event : forks)
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreate");
  check(cudaEventCreateWithFlags(&join, cudaEventDisableTiming),
        "cudaEventCreate");
  auto isWeight = [](const Prepared &p) { return p.p.dType == CUDA_R_32F; };
  const float sequential = timeMedian(warmup, runs, [&] {
    for (const auto &p : products)
      p->launch(handle, buffers, p->candidates[0].algo, isWeight(*p), nullptr);
  });
  const float overlapped = timeMedian(warmup, runs, [&] {
    for (size_t i = 0; i < products.size(); ++i) {
      const Prepared &p = *products[i];
      if (!isWeight(p)) {
        p.launch(handle, buffers, p.candidates[0].algo, 0, nullptr);
        continue;
      }
      // dy is ready once the dx product before this one is enqueued.
      check(cudaEventRecord(forks[i], nullptr), "cudaEventRecord fork");
      check(cudaStreamWaitEvent(side, forks[i]), "cudaStreamWaitEvent fork");
      p.launch(handle, buffers, p.candidates[0].algo, 1, side);
    }
    check(cudaEventRecord(join, side), "cudaEventRecord join");
    check(cudaStreamWaitEvent(nullptr, join), "cudaStreamWaitEvent join");
  });
  check(cudaDeviceSynchronize(), "overlap");
  double flops = 0;
  for (const auto &p : products)
    flops += p->flops();
  std::printf("overlap: the block's 8 backward products, sequential %.4f ms "
              "(%.1f TFLOP/s), dW on a second stream %.4f ms (%.1f TFLOP/s), "
              "%.3fx\n",
              sequential, flops / sequential / 1e9, overlapped,
              flops / overlapped / 1e9, sequential / overlapped);
  for (cudaEvent_t event : forks)
    cudaEventDestroy(event);
  cudaEventDestroy(join);
  cudaStreamDestroy(side);
}

const char *schemeName(uint32_t scheme) {
  switch (scheme) {
  case CUBLASLT_REDUCTION_SCHEME_INPLACE:
    return "inplace";
  case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE:
    return "compute";
  case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE:
    return "output";
  default:
    return "none";
  }
}

} // namespace

int main(int argc, char **argv) {
  const int tokens = intFlag(argc, argv, "--tokens", 16384);
  const int width = intFlag(argc, argv, "--width", 768);
  const int candidates = intFlag(argc, argv, "--candidates", 16);
  const int warmup = intFlag(argc, argv, "--warmup", 5);
  const int runs = intFlag(argc, argv, "--runs", 20);
  const bool splitK = boolFlag(argc, argv, "--split-k");
  const bool overlap = boolFlag(argc, argv, "--overlap");

  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  const Buffers buffers(size_t{4} * width * tokens, width);
  std::vector<Product> products = blockProducts(tokens, width);
  if (splitK) {
    // The weight gradients without their bias gradient too: split-K may be
    // refused with BGRADB (the bias would then need a kernel of its own).
    for (size_t i = 0, n = products.size(); i < n; ++i)
      if (products[i].epilogue == CUBLASLT_EPILOGUE_BGRADB) {
        Product plain = products[i];
        plain.name += " plain";
        plain.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        plain.inBlock = false;
        products.push_back(plain);
      }
  }

  double firstTotal = 0, bestTotal = 0, splitTotal = 0, flopsTotal = 0;
  std::printf("tokens %d width %d, up to %d candidates, median of %d\n", tokens,
              width, candidates, runs);
  std::printf("%-30s %6s %6s %6s %10s %10s %5s %8s %8s%s\n", "product", "m",
              "n", "k", "first ms", "best ms", "rank", "first TF", "best TF",
              splitK ? "  split-K ms (splits, scheme, candidate)  TF" : "");
  for (const Product &p : products) {
    const Prepared product(handle, p, buffers, candidates);
    if (product.candidates.empty()) {
      std::printf("%-30s %6d %6d %6d no algorithm (%s)\n", p.name.c_str(), p.m,
                  p.n, p.k, cublasLtGetStatusString(product.status));
      continue;
    }
    std::vector<float> times;
    for (const cublasLtMatmulHeuristicResult_t &candidate : product.candidates)
      times.push_back(
          timeAlgo(handle, buffers, product, candidate.algo, warmup, runs));
    const int best = static_cast<int>(
        std::min_element(times.begin(), times.end()) - times.begin());
    const double flops = product.flops();
    std::printf("%-30s %6d %6d %6d %10.4f %10.4f %5d %8.1f %8.1f",
                p.name.c_str(), p.m, p.n, p.k, times[0], times[best], best,
                flops / times[0] / 1e9, flops / times[best] / 1e9);
    float bestWithSplit = times[best];
    if (splitK) {
      const SplitChoice split =
          bestSplitK(handle, buffers, product, warmup, runs);
      if (split.candidate < 0)
        std::printf("  no split-K variant accepted");
      else
        std::printf("  %.4f (%d, %s, %d) %.1f", split.ms, split.splits,
                    schemeName(split.scheme), split.candidate,
                    flops / split.ms / 1e9);
      bestWithSplit = std::min(bestWithSplit, split.ms);
    }
    std::printf("\n");
    if (p.inBlock) {
      firstTotal += times[0];
      bestTotal += times[best];
      splitTotal += bestWithSplit;
      flopsTotal += flops;
    }
  }
  std::printf("block total (the default step's 12 products): first %.4f ms "
              "(%.1f TFLOP/s), best %.4f ms (%.1f "
              "TFLOP/s), %.3fx\n",
              firstTotal, flopsTotal / firstTotal / 1e9, bestTotal,
              flopsTotal / bestTotal / 1e9, firstTotal / bestTotal);
  if (splitK)
    std::printf("block total with split-K variants: %.4f ms (%.1f TFLOP/s), "
                "%.3fx the first\n",
                splitTotal, flopsTotal / splitTotal / 1e9,
                firstTotal / splitTotal);
  if (overlap)
    timeOverlap(handle, buffers, products, warmup, runs);
  return 0;
}
