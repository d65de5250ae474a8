// Causal self-attention, forward and backward, as the unfused pattern runs it
// (Megatron-LM before FlashAttention): batched BF16 GEMMs through cuBLAS
// around a softmax kernel, the s x s scores passing through memory. The
// toolkit has no fused attention kernel of its own (cuDNN's is a separate
// library), so this is what the harness measures.
#pragma once

#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include "measure.hpp"

namespace calibrate {

struct AttentionShape {
  int batch = 1, heads = 1, seq = 1, head_dim = 1;
};

// Times one shape; the point's JSON (see docs/calibration.md), or null
// when its buffers do not fit in free memory.
nlohmann::json measure_attention(const AttentionShape& shape, const Settings& s, cudaStream_t stream);

}  // namespace calibrate
