#include "gemm.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "check.hpp"
#include "kernels.hpp"

namespace calibrate {

namespace {

// The workspace the cuBLAS API reference recommends for Hopper (cublasSetWorkspace:
// 32 MiB; 4 MiB for earlier GPUs).
constexpr std::size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t input_type(Dtype d) {
  switch (d) {
    case Dtype::kBf16: return CUDA_R_16BF;
    case Dtype::kFp16: return CUDA_R_16F;
    case Dtype::kFp8: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

// FP8 GEMMs write BF16, as training frameworks use them.
cudaDataType_t output_type(Dtype d) { return d == Dtype::kFp16 ? CUDA_R_16F : CUDA_R_16BF; }

}  // namespace

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8: return "fp8";
  }
  return "?";
}

GemmRunner::GemmRunner(std::size_t max_elements, cudaStream_t stream) : max_elements_(max_elements), stream_(stream) {
  CAL_CHECK(cublasLtCreate(&handle_));
  CAL_CHECK(cudaMalloc(&a_, max_elements * 2));
  CAL_CHECK(cudaMalloc(&b_, max_elements * 2));
  CAL_CHECK(cudaMalloc(&c_, max_elements * 2));
  CAL_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
}

GemmRunner::~GemmRunner() {
  cudaFree(a_);
  cudaFree(b_);
  cudaFree(c_);
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

std::optional<std::vector<double>> GemmRunner::time(Dtype dtype, int m, int n, int k, const Settings& s,
                                                    bool cool_down) {
  if (filled_ != dtype) {
    // Random values, not zeros: tensor cores draw less power on zeros and
    // would run faster than on real data.
    const int bytes = dtype == Dtype::kFp8 ? 1 : 2;
    for (void* p : {a_, b_}) fill_random(p, max_elements_, bytes, dtype != Dtype::kFp16, stream_);
    filled_ = dtype;
  }
  const cudaDataType_t in = input_type(dtype), out = output_type(dtype);
  cublasLtMatmulDesc_t desc = nullptr;
  CAL_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  CAL_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
  CAL_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)));
  // D (m x n) = A^T (m x k) B (k x n), column-major: A is stored k x m.
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  CAL_CHECK(cublasLtMatrixLayoutCreate(&la, in, k, m, k));
  CAL_CHECK(cublasLtMatrixLayoutCreate(&lb, in, k, n, k));
  CAL_CHECK(cublasLtMatrixLayoutCreate(&lc, out, m, n, m));
  cublasLtMatmulPreference_t pref = nullptr;
  CAL_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t workspace = kWorkspaceBytes;
  CAL_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  // No algorithm is an answer, not an error: the caller records the gap.
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, desc, la, lb, lc, lc, pref, 1, &heuristic, &found);
  std::optional<std::vector<double>> result;
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) {
    const float alpha = 1.0f, beta = 0.0f;
    auto call = [&] {
      CAL_CHECK(cublasLtMatmul(handle_, desc, &alpha, a_, la, b_, lb, &beta, c_, lc, c_, lc, &heuristic.algo,
                               workspace_, kWorkspaceBytes, stream_));
    };
    // A 700 W Hopper GPU reaches its power limit within a fraction of a
    // second of large GEMMs and lowers its clock (seen on an H200: 1,980 MHz
    // falling to about 1,500). A call of over 5 ms gets fewer samples, so
    // that its measurement ends before the limit bites (16384^3 takes about
    // 11 ms on an H200); each sample is one call then.
    Settings settings = s;
    if (cool_down) {
      const std::vector<double> first = time_ms(call, stream_, {1, 1, 0.0});
      if (first.front() > 5.0) settings = {1, std::min(s.samples, 5), 0.0};
    }
    const auto start = std::chrono::steady_clock::now();
    result = time_ms(call, stream_, settings);
    const auto busy = std::chrono::steady_clock::now() - start;
    // Then idle twice as long as a measurement that drew tensor-core power
    // (over 100 TFLOP/s: small GEMMs draw little and idle not at all), so
    // that the next shape starts at the boost clock too.
    const double tflops = 2.0 * m * n * static_cast<double>(k) / (summarize(*result).median * 1e-3) / 1e12;
    if (cool_down && tflops > 100.0) std::this_thread::sleep_for(2 * busy);
  }
  CAL_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  CAL_CHECK(cublasLtMatrixLayoutDestroy(la));
  CAL_CHECK(cublasLtMatrixLayoutDestroy(lb));
  CAL_CHECK(cublasLtMatrixLayoutDestroy(lc));
  CAL_CHECK(cublasLtMatmulDescDestroy(desc));
  return result;
}

}  // namespace calibrate
