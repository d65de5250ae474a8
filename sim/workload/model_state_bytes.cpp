#include "workload/model_state_bytes.hpp"

namespace trainsim::workload {

double model_state_bytes_per_param(int zero_stage, int dp, double grad_bytes, double moment_bytes, double weight_bytes) {
  const double d = dp, g = grad_bytes, k = 4.0 + 2.0 * moment_bytes, w = weight_bytes;
  switch (zero_stage) {
    case 1: return w + g + k / d;
    case 2: return w + (g + k) / d;
    case 3: return (w + g + k) / d;
    default: return w + g + k;
  }
}

double optimizer_bytes_per_param(double grad_bytes, Precision precision, double moment_bytes, bool sixteen_bit_copy) {
  const double to_main_grads = grad_bytes < 4.0 ? 2.0 + 4.0 : 0.0;
  const double unscale = precision == Precision::kFp16 ? 4.0 + 4.0 : 0.0;
  const double norm = 4.0;
  const double adam = (8.0 + 2.0 * moment_bytes) + (4.0 + 2.0 * moment_bytes);
  const double to_model_params = sixteen_bit_copy ? 4.0 + 2.0 : 0.0;
  return to_main_grads + unscale + norm + adam + to_model_params;
}

}  // namespace trainsim::workload
