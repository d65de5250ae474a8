// GEMM throughput through cuBLASLt: BF16 and FP16 (FP8 E4M3 where the GPU
// has it, compute capability 8.9 and newer), FP32 accumulation, A transposed
// ("TN", the layout cuBLASLt's FP8 kernels require; the same for all types).
#pragma once

#include <cublasLt.h>

#include <optional>
#include <string>
#include <vector>

#include "measure.hpp"

namespace calibrate {

enum class Dtype { kBf16, kFp16, kFp8 };
const char* dtype_name(Dtype d);

class GemmRunner {
 public:
  // Operand buffers hold up to `max_elements` values each.
  GemmRunner(std::size_t max_elements, cudaStream_t stream);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  std::size_t max_elements() const { return max_elements_; }
  // Milliseconds per GEMM, one per sample; nothing when cuBLASLt has no
  // algorithm for this type and shape. With `cool_down` (the grids), a call
  // of over 5 ms gets at most 5 samples, and a measurement over 100 TFLOP/s
  // is followed by twice its time idle, so that every shape runs at the
  // boost clock: the grid holds short-run figures, as the presets' curves
  // do, and the sustained section (sustained.hpp) measures what a long run
  // holds.
  std::optional<std::vector<double>> time(Dtype dtype, int m, int n, int k, const Settings& s, bool cool_down = true);

 private:
  std::size_t max_elements_;
  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
  void* workspace_ = nullptr;
  std::optional<Dtype> filled_;  // the type the operands now hold
};

}  // namespace calibrate
