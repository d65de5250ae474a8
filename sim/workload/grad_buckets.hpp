// A stage's data-parallel gradient reduction and parameter gathers outside
// ZeRO-3: its gradients cut into parallel.grad_bucket_mib buckets in the
// order the backward fills them, each bucket's all-reduce (ZeRO-0) or
// reduce-scatter (ZeRO-1/2 and the distributed optimizer) over the
// data-parallel group, and under ZeRO-1/2 the updated parameters'
// all-gather after the step (whole, or bucket by bucket before the next
// forward's use with Overlap::param_gather). A MoE stage's buckets hold its
// mix of gradients: the routed experts' share over the expert-data-parallel
// group after the rest over dp. Offloaded (Plan::offload), each bucket's
// reduced shard then goes to the host.
#pragma once

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/plan.hpp"
#include "workload/stage_costs.hpp"
#include "workload/stage_groups.hpp"

namespace trainsim::workload {

// Sets c's param_bytes, grad_bytes, grad_reduce_kind, the buckets' shares,
// reductions and host copies, and ZeRO-1/2's gathers, from c.params and
// c.expert_params; `grad_value_bytes` a gradient's bytes (Plan::grad_dtype).
// std::overflow_error past a million buckets.
void add_grad_buckets(StageCost& c, const Plan& plan, const hw::NodeSpec& node, hw::CollectiveAlgorithm algorithm,
                      const StageGroups& groups, double grad_value_bytes);

}  // namespace trainsim::workload
