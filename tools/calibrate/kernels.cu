#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "check.hpp"
#include "kernels.hpp"

namespace calibrate {

namespace {

constexpr int kThreads = 256;

__device__ float hash_value(std::size_t i) {
  // A small integer hash to values in [-0.5, 0.5): deterministic, no state.
  unsigned int x = static_cast<unsigned int>(i) * 2654435761u + 12345u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<float>(x & 0xffffu) / 65536.0f - 0.5f;
}

__global__ void fill_kernel(void* data, std::size_t count, int bytes, bool bf16) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = hash_value(i);
    if (bytes == 1) {
      static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(v);
    } else if (bf16) {
      static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
    } else {
      static_cast<__half*>(data)[i] = __float2half(v);
    }
  }
}

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    b[i] = a[i];
  }
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             std::size_t n) {
  const float s = 3.0f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void nothing() {}

// Sum over the block; every thread gets the result.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += shared[w];
  __syncthreads();
  return total;
}

__device__ float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, shared[w]);
  __syncthreads();
  return m;
}

// One block per row; a row's query position is row mod cols.
__global__ void softmax_kernel(__nv_bfloat16* scores, int cols, float scale) {
  __shared__ float shared[kThreads / 32];
  __nv_bfloat16* row = scores + blockIdx.x * static_cast<std::size_t>(cols);
  const int limit = static_cast<int>(blockIdx.x % cols);  // the last column this query may see
  float m = -INFINITY;
  for (int j = threadIdx.x; j <= limit; j += blockDim.x) m = fmaxf(m, scale * __bfloat162float(row[j]));
  m = block_max(m, shared);
  float sum = 0.0f;
  for (int j = threadIdx.x; j <= limit; j += blockDim.x) sum += __expf(scale * __bfloat162float(row[j]) - m);
  sum = block_sum(sum, shared);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float p = j <= limit ? __expf(scale * __bfloat162float(row[j]) - m) / sum : 0.0f;
    row[j] = __float2bfloat16(p);
  }
}

__global__ void softmax_backward_kernel(const __nv_bfloat16* probs, __nv_bfloat16* grad, int cols, float scale) {
  __shared__ float shared[kThreads / 32];
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(cols);
  float dot = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    dot += __bfloat162float(probs[base + j]) * __bfloat162float(grad[base + j]);
  }
  dot = block_sum(dot, shared);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float p = __bfloat162float(probs[base + j]);
    grad[base + j] = __float2bfloat16(scale * p * (__bfloat162float(grad[base + j]) - dot));
  }
}

unsigned int blocks_for(std::size_t n) {
  // Enough blocks to fill any current GPU several times over; the loops stride.
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(wanted < 65536 ? (wanted == 0 ? 1 : wanted) : 65536);
}

}  // namespace

void fill_random(void* data, std::size_t count, int bytes_per_value, bool bf16, cudaStream_t stream) {
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, bytes_per_value, bf16);
  CAL_CHECK(cudaGetLastError());
}

void stream_copy(const void* a, void* b, std::size_t count, cudaStream_t stream) {
  copy_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const float4*>(a), static_cast<float4*>(b), count);
  CAL_CHECK(cudaGetLastError());
}

void stream_triad(void* a, const void* b, const void* c, std::size_t count, cudaStream_t stream) {
  triad_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<float4*>(a), static_cast<const float4*>(b),
                                                           static_cast<const float4*>(c), count);
  CAL_CHECK(cudaGetLastError());
}

void empty_kernel(cudaStream_t stream) {
  nothing<<<1, 1, 0, stream>>>();
  CAL_CHECK(cudaGetLastError());
}

void causal_softmax(void* scores, std::size_t rows, int cols, float scale, cudaStream_t stream) {
  softmax_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(scores), cols,
                                                                           scale);
  CAL_CHECK(cudaGetLastError());
}

void causal_softmax_backward(const void* probs, void* grad, std::size_t rows, int cols, float scale,
                             cudaStream_t stream) {
  softmax_backward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(probs), static_cast<__nv_bfloat16*>(grad), cols, scale);
  CAL_CHECK(cudaGetLastError());
}

}  // namespace calibrate
