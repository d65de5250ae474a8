#include "workload/model_state_bytes.hpp"

#include <algorithm>

#include "workload/transformer.hpp"

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

double sharded_share(const Plan& plan, double params, double expert_params) {
  const int shard = plan.shard_group_size(), expert_shard = plan.expert_shard_group_size();
  return expert_params > 0.0 ? (params - expert_params) / shard + expert_params / expert_shard : params / shard;
}

double host_copy_seconds(const Plan& plan, const hw::NodeSpec& node, double bytes) {
  return plan.offload != Offload::kNone ? bytes / (node.pcie_gb_per_s * 1e9) : 0.0;
}

core::Time optimizer_step_time(const Plan& plan, const hw::NodeSpec& node, double updated, double held_grads,
                               double params, double grad_bytes, double shard_grad_bytes, double moment_bytes) {
  const double g = grad_bytes, m = moment_bytes;
  if (plan.offload == Offload::kNone) {
    return core::Time::seconds(
        (updated * optimizer_bytes_per_param(shard_grad_bytes, plan.precision, m, !plan.fsdp_fp32_shards) + held_grads * g) /
            (node.gpu.hbm_achievable_tb_per_s * 1e12) +
        node.gpu.kernel_overhead_us * 1e-6);
  }
  const double host_share = node.host_memory_tb_per_s * 1e12 / node.gpus_per_node;
  double host_step_s = updated * optimizer_bytes_per_param(4.0, plan.precision, m) / host_share;
  if (node.host_cores > 0 && node.host_adam_params_per_s_per_core > 0.0) {
    const double cores = static_cast<double>(node.host_cores) / node.gpus_per_node;
    host_step_s = std::max(host_step_s, updated / (cores * node.host_adam_params_per_s_per_core));
  }
  const bool params_on_host = plan.offload == Offload::kOptimizerAndParams;
  const double gpu_grads = plan.zero_stage == 1 ? params * g : 0.0;
  return core::Time::seconds(host_step_s + (params_on_host ? 0.0 : host_copy_seconds(plan, node, updated * kActivationBytes)) +
                             gpu_grads / (node.gpu.hbm_achievable_tb_per_s * 1e12) + node.gpu.kernel_overhead_us * 1e-6);
}

}  // namespace trainsim::workload
