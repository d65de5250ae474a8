// The harness's own kernels (kernels.cu), launched from host code.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace calibrate {

// Fills `count` 2-byte (BF16 or FP16, `bf16`) or 1-byte FP8 E4M3 values with
// small pseudo-random numbers, the same every run.
void fill_random(void* data, std::size_t count, int bytes_per_value, bool bf16, cudaStream_t stream);

// STREAM-like kernels over float4 arrays of `count` float4s.
void stream_copy(const void* a, void* b, std::size_t count, cudaStream_t stream);
void stream_triad(void* a, const void* b, const void* c, std::size_t count, cudaStream_t stream);

// One block of one thread that does nothing: what a launch costs.
void empty_kernel(cudaStream_t stream);

// Causal softmax over each of `rows` rows of `cols` BF16 scores, in place,
// after scaling by `scale`; entries above the diagonal (column > row mod cols)
// become 0.
void causal_softmax(void* scores, std::size_t rows, int cols, float scale, cudaStream_t stream);
// Its backward, in place on dP: dS = P * (dP - sum(P * dP)) * scale.
void causal_softmax_backward(const void* probs, void* grad, std::size_t rows, int cols, float scale,
                             cudaStream_t stream);

}  // namespace calibrate
