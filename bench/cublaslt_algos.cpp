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
//   nvcc -O2 -std=c++17 bench/cublaslt_algos.cpp -lcublasLt -o cublaslt_algos
//   ./cublaslt_algos --tokens 16384 --width 768 [--candidates 16]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

int intFlag(int argc, char **argv, const char *flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0)
      return std::atoi(argv[i + 1]);
  return fallback;
}

} // namespace

int main(int argc, char **argv) {
  const int tokens = intFlag(argc, argv, "--tokens", 16384);
  const int width = intFlag(argc, argv, "--width", 768);
  const int candidates = intFlag(argc, argv, "--candidates", 16);
  const int warmup = intFlag(argc, argv, "--warmup", 5);
  const int runs = intFlag(argc, argv, "--runs", 20);
  const size_t workspaceBytes = size_t{32} << 20;

  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  // Buffers big enough for every operand (4C x M elements, f32 for D).
  const size_t elems = size_t{4} * width * tokens;
  void *a = nullptr, *b = nullptr, *d = nullptr, *bias = nullptr,
       *aux = nullptr, *workspace = nullptr;
  check(cudaMalloc(&a, elems * 2), "cudaMalloc A");
  check(cudaMalloc(&b, elems * 2), "cudaMalloc B");
  check(cudaMalloc(&d, elems * 4), "cudaMalloc D");
  check(cudaMalloc(&aux, elems * 2), "cudaMalloc aux");
  check(cudaMalloc(&bias, size_t{4} * width * 4), "cudaMalloc bias");
  check(cudaMalloc(&workspace, workspaceBytes), "cudaMalloc workspace");
  // Random operands (zeros would draw less power and time faster).
  {
    std::vector<__nv_bfloat16> host(elems);
    unsigned state = 12345;
    for (__nv_bfloat16 &value : host) {
      state = state * 1664525u + 1013904223u;
      value =
          __float2bfloat16(static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
    }
    check(cudaMemcpy(a, host.data(), elems * 2, cudaMemcpyHostToDevice),
          "uploading A");
    check(cudaMemcpy(b, host.data(), elems * 2, cudaMemcpyHostToDevice),
          "uploading B");
    check(cudaMemcpy(aux, host.data(), elems * 2, cudaMemcpyHostToDevice),
          "uploading aux");
  }
  check(cudaMemset(bias, 0, size_t{4} * width * 4), "cudaMemset bias");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");

  double firstTotal = 0, bestTotal = 0, flopsTotal = 0;
  std::printf("tokens %d width %d, up to %d candidates, median of %d\n", tokens,
              width, candidates, runs);
  std::printf("%-24s %6s %6s %6s %10s %10s %5s %8s %8s\n", "product", "m", "n",
              "k", "first ms", "best ms", "rank", "first TF", "best TF");
  for (const Product &p : blockProducts(tokens, width)) {
    cublasLtMatmulDesc_t desc = nullptr;
    check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    int32_t transA = p.transA, transB = p.transB;
    uint32_t epilogue = p.epilogue;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                         &transA, sizeof(transA)),
          "TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                         &transB, sizeof(transB)),
          "TRANSB");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                         &epilogue, sizeof(epilogue)),
          "EPILOGUE");
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
      check(cublasLtMatmulDescSetAttribute(desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                           &biasType, sizeof(biasType)),
            "BIAS_DATA_TYPE");
      check(cublasLtMatmulDescSetAttribute(
                desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
            "BIAS_POINTER");
    }
    if (hasAux) {
      int64_t ld = p.m;
      check(cublasLtMatmulDescSetAttribute(
                desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)),
            "AUX_LD");
      check(cublasLtMatmulDescSetAttribute(
                desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                sizeof(aux)),
            "AUX_POINTER");
    }
    cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, p.transA, p.m, p.k);
    cublasLtMatrixLayout_t lb = layout(CUDA_R_16BF, p.transB, p.k, p.n);
    cublasLtMatrixLayout_t ld = layout(p.dType, CUBLAS_OP_N, p.m, p.n);
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
              sizeof(workspaceBytes)),
          "MAX_WORKSPACE_BYTES");
    auto destroy = [&] {
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(ld);
      cublasLtMatmulDescDestroy(desc);
    };
    std::vector<cublasLtMatmulHeuristicResult_t> results(candidates);
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle, desc, la, lb, ld, ld, pref, candidates, results.data(), &found);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::printf("%-24s %6d %6d %6d no algorithm (%s)\n", p.name.c_str(), p.m,
                  p.n, p.k, cublasLtGetStatusString(status));
      destroy();
      continue;
    }
    const float alpha = 1, beta = 0;
    std::vector<float> times;
    for (int i = 0; i < found; ++i) {
      auto launch = [&] {
        return cublasLtMatmul(handle, desc, &alpha, a, la, b, lb, &beta, d, ld,
                              d, ld, &results[i].algo, workspace,
                              workspaceBytes, nullptr);
      };
      if (launch() != CUBLAS_STATUS_SUCCESS) {
        times.push_back(1e30f);
        continue;
      }
      for (int w = 0; w < warmup; ++w)
        launch();
      std::vector<float> samples;
      for (int r = 0; r < runs; ++r) {
        check(cudaEventRecord(start), "cudaEventRecord");
        launch();
        check(cudaEventRecord(stop), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        samples.push_back(ms);
      }
      times.push_back(median(samples));
    }
    check(cudaDeviceSynchronize(), p.name.c_str());
    const int best = static_cast<int>(
        std::min_element(times.begin(), times.end()) - times.begin());
    const double flops = 2.0 * p.m * p.n * p.k;
    std::printf("%-24s %6d %6d %6d %10.4f %10.4f %5d %8.1f %8.1f\n",
                p.name.c_str(), p.m, p.n, p.k, times[0], times[best], best,
                flops / times[0] / 1e9, flops / times[best] / 1e9);
    if (p.inBlock) {
      firstTotal += times[0];
      bestTotal += times[best];
      flopsTotal += flops;
    }
    destroy();
  }
  std::printf("block total (the default step's 12 products): first %.4f ms "
              "(%.1f TFLOP/s), best %.4f ms (%.1f "
              "TFLOP/s), %.3fx\n",
              firstTotal, flopsTotal / firstTotal / 1e9, bestTotal,
              flopsTotal / bestTotal / 1e9, firstTotal / bestTotal);
  return 0;
}
