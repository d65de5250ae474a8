#include "workload/grad_buckets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

#include "workload/transformer.hpp"

namespace trainsim::workload {

void add_grad_buckets(StageCost& c, const Plan& plan, const hw::NodeSpec& node, hw::CollectiveAlgorithm algorithm,
                      const StageGroups& groups, double grad_value_bytes) {
  const double g = grad_value_bytes;
  const int expert_shard = plan.expert_shard_group_size();
  const bool offload = plan.offload != Offload::kNone;
  const hw::CollectiveGroup& dp_group = groups.dp;
  const hw::CollectiveGroup& edp_group = groups.edp;
  // Gradient buckets, in the order backward fills them.
  const double grad_bytes = c.params * g;
  c.param_bytes = c.params * kActivationBytes;
  const double bucket_bytes = plan.grad_bucket_mib * 1048576.0;
  // A MoE stage's buckets hold its mix of gradients: the routed experts'
  // share reduced (and gathered) over the expert-data-parallel group, the
  // rest over the data-parallel one.
  const double expert_share = c.expert_share();
  const bool reduces = plan.replicas() > 1 || (expert_share > 0.0 && expert_shard > 1);
  // The routed experts' part of such a collective, over edp (zero without
  // experts or with one expert replica); the whole is the dense part over
  // dp, then this.
  auto expert_collective = [&](hw::CollectiveKind kind, double bytes) {
    return expert_share > 0.0 && expert_shard > 1
               ? hw::collective_time(kind, bytes * expert_share, edp_group, node, algorithm)
               : core::Time{};
  };
  auto dp_collective = [&](hw::CollectiveKind kind, double bytes) {
    if (expert_share == 0.0) return hw::collective_time(kind, bytes, dp_group, node, algorithm);
    core::Time time;
    if (plan.replicas() > 1) time += hw::collective_time(kind, bytes * (1.0 - expert_share), dp_group, node, algorithm);
    return time + expert_collective(kind, bytes);
  };
  // ZeRO-3 reduces every backward's gradients at once (below), not in buckets.
  const auto buckets = reduces && plan.zero_stage < 3
                           ? std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(grad_bytes / bucket_bytes)))
                           : 1;
  if (buckets > 1'000'000) {
    throw std::overflow_error(fmt::format("{} gradient buckets on one stage ({:.3g} GB of gradients a GPU: is the model "
                                          "that large?); raise parallel.grad_bucket_mib, or split the model over "
                                          "more GPUs",
                                          buckets, grad_bytes / 1e9));
  }
  const auto reduce = plan.zero_stage >= 1 ? hw::CollectiveKind::kReduceScatter : hw::CollectiveKind::kAllReduce;
  c.grad_bytes = grad_bytes;
  c.grad_reduce_kind = reduce;
  // Every bucket but the last is full: cost each distinct size once.
  double costed_bytes = -1.0;
  core::Time costed, costed_experts, costed_copy;
  for (std::size_t k = 0; k < buckets; ++k) {
    const double bytes = reduces && plan.zero_stage < 3
                             ? std::min(bucket_bytes, grad_bytes - static_cast<double>(k) * bucket_bytes)
                             : 0.0;
    c.grad_bucket_share.push_back(buckets == 1 ? 1.0 : bytes / grad_bytes);
    if (bytes != costed_bytes) {
      // Offloaded, the bucket's reduced shard then goes to the host.
      // (With no replica to reduce with, the stage's gradients still go
      // to the host optimizer, as one bucket.)
      const double copied = reduces || plan.zero_stage == 3 ? bytes : grad_bytes;
      costed_copy = core::Time::seconds(host_copy_seconds(plan, node, sharded_share(plan, copied, copied * expert_share)));
      costed = dp_collective(reduce, bytes) + costed_copy;
      costed_experts = expert_collective(reduce, bytes);
      costed_bytes = bytes;
    }
    c.grad_bucket_reduce.push_back(costed);
    if (offload) c.grad_bucket_host_copy.push_back(costed_copy);
    if (expert_share > 0.0) c.grad_bucket_reduce_experts.push_back(costed_experts);
  }
  if (plan.zero_stage == 1 || plan.zero_stage == 2) {
    c.param_all_gather = dp_collective(hw::CollectiveKind::kAllGather, c.param_bytes);
    c.param_all_gather_experts = expert_collective(hw::CollectiveKind::kAllGather, c.param_bytes);
    if (plan.overlap.param_gather && reduces) {
      // The forward uses the buckets last-filled first.
      for (auto share = c.grad_bucket_share.rbegin(); share != c.grad_bucket_share.rend(); ++share) {
        c.param_bucket_gather.push_back(dp_collective(hw::CollectiveKind::kAllGather, *share * c.param_bytes));
        if (expert_share > 0.0) {
          c.param_bucket_gather_experts.push_back(
              expert_collective(hw::CollectiveKind::kAllGather, *share * c.param_bytes));
        }
      }
    }
  }
}

}  // namespace trainsim::workload
