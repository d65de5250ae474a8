#include "attention.hpp"

#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "check.hpp"
#include "kernels.hpp"
#include "profile_json.hpp"

namespace calibrate {

namespace {

// C = op(A) op(B) for each of `count` matrices, BF16 in and out, FP32
// accumulation; column-major, as cuBLAS sees the row-major tensors.
struct Batched {
  cublasHandle_t handle;
  int count;
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, int lda, long long sa,
            const void* b, int ldb, long long sb, void* c, int ldc, long long sc) const {
    const float alpha = 1.0f, beta = 0.0f;
    CAL_CHECK(cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, &alpha, a, CUDA_R_16BF, lda, sa, b, CUDA_R_16BF, ldb,
                                         sb, &beta, c, CUDA_R_16BF, ldc, sc, count, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT));
  }
};

}  // namespace

nlohmann::json measure_attention(const AttentionShape& shape, const Settings& s, cudaStream_t stream) {
  const int sq = shape.seq, d = shape.head_dim;
  const int count = shape.batch * shape.heads;
  const long long tensor = static_cast<long long>(sq) * d;    // one head's Q, K, V, O
  const long long scores = static_cast<long long>(sq) * sq;   // one head's S (then P), dP (then dS)
  const std::size_t bytes = 2u * static_cast<std::size_t>(count) * (8 * tensor + 2 * scores);
  std::size_t free_bytes = 0, total = 0;
  CAL_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (bytes > free_bytes / 10 * 9) return nullptr;

  std::vector<void*> t(8);  // Q K V O dO dQ dK dV
  for (void*& p : t) CAL_CHECK(cudaMalloc(&p, 2u * count * tensor));
  void* sp = nullptr;  // S, then P in place
  void* dp = nullptr;  // dP, then dS in place
  CAL_CHECK(cudaMalloc(&sp, 2u * count * scores));
  CAL_CHECK(cudaMalloc(&dp, 2u * count * scores));
  for (int i = 0; i < 5; ++i) fill_random(t[i], static_cast<std::size_t>(count) * tensor, 2, true, stream);
  void *q = t[0], *k = t[1], *v = t[2], *o = t[3], *dout = t[4], *dq = t[5], *dk = t[6], *dv = t[7];

  cublasHandle_t handle = nullptr;
  CAL_CHECK(cublasCreate(&handle));
  CAL_CHECK(cublasSetStream(handle, stream));
  const Batched g{handle, count};
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const std::size_t rows = static_cast<std::size_t>(count) * sq;
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  // Row-major Q (s x d) is column-major d x s; row-major S (s x s) holds
  // query rows. S = Q K^T; O = P V.
  auto forward = [&] {
    g.gemm(T, N, sq, sq, d, k, d, tensor, q, d, tensor, sp, sq, scores);
    causal_softmax(sp, rows, sq, scale, stream);
    g.gemm(N, N, d, sq, sq, v, d, tensor, sp, sq, scores, o, d, tensor);
  };
  // dV = P^T dO; dP = dO V^T; dS = softmax'(dP); dQ = dS K; dK = dS^T Q.
  auto backward = [&] {
    g.gemm(N, T, d, sq, sq, dout, d, tensor, sp, sq, scores, dv, d, tensor);
    g.gemm(T, N, sq, sq, d, v, d, tensor, dout, d, tensor, dp, sq, scores);
    causal_softmax_backward(sp, dp, rows, sq, scale, stream);
    g.gemm(N, N, d, sq, sq, k, d, tensor, dp, sq, scores, dq, d, tensor);
    g.gemm(N, T, d, sq, sq, q, d, tensor, dp, sq, scores, dk, d, tensor);
  };
  forward();  // P must hold probabilities before backward runs alone
  const Stat f = summarize(time_ms(forward, stream, s));
  const Stat b = summarize(time_ms(backward, stream, s));

  // FLOPs as FlashAttention-2 counts causal work (arXiv 2307.08691 §4.1):
  // forward 4 b h s^2 d / 2, backward 2.5 times that; 1.75 x 4 b h s^2 d in all.
  const double work = 1.75 * 4.0 * count * static_cast<double>(sq) * sq * d;
  nlohmann::json point = attention_point_json(shape.batch, shape.heads, sq, d, f, b, work);
  CAL_CHECK(cublasDestroy(handle));
  for (void* p : t) CAL_CHECK(cudaFree(p));
  CAL_CHECK(cudaFree(sp));
  CAL_CHECK(cudaFree(dp));
  return point;
}

}  // namespace calibrate
