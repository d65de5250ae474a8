#include "workload/activation_offload.hpp"

#include <algorithm>

namespace trainsim::workload {

double offloaded_bytes_per_moe_layer(unsigned modules, double copies, int local_experts, double hidden,
                                     double expert_ffn, double fc1_input_bytes) {
  double bytes = 0.0;
  // A tensor below Megatron-Core's size floor stays: the first GEMM's input
  // is a tensor an expert, its output one tensor.
  const double fc1_input = copies * hidden;
  if ((modules & kOffloadExpertFc1) != 0 && fc1_input / std::max(local_experts, 1) >= kMinOffloadedElements) {
    bytes += fc1_input * fc1_input_bytes;
  }
  const double act_input = copies * 2.0 * expert_ffn;
  if ((modules & kOffloadMoeAct) != 0 && act_input >= kMinOffloadedElements) bytes += act_input * 2.0;
  return bytes;
}

double exposed_copy_seconds(double bytes, double link_bytes_per_s, double layer_pass_s) {
  if (bytes <= 0.0 || link_bytes_per_s <= 0.0) return 0.0;
  return std::max(0.0, bytes / link_bytes_per_s - layer_pass_s);
}

}  // namespace trainsim::workload
