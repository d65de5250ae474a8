// What each pipeline stage costs per micro-batch on the hardware at hand: the
// durations of F, I and W, the activation memory a micro-batch holds between
// its forward and its backward, the resident model state, the messages to the
// neighbouring stages, and the end-of-iteration work (gradient all-reduce across
// data-parallel replicas, optimizer step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/activation_bytes.hpp"
#include "workload/model_state_bytes.hpp"
#include "workload/op_cost.hpp"
#include "workload/plan.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

// A ZeRO-3 / FSDP sharding unit of a stage: the parameters gathered, used
// and given back together. In forward order: the embedding (first stage),
// the layers parallel.fsdp_unit_layers at a time, the output head and final
// norm (last stage).
struct ShardUnit {
  int layers = 0;             // transformer layers; 0 for the embedding or the head
  double params = 0.0;        // its parameters on one GPU (1/tp of them), whole; the persistent ones not counted
  double gather_bytes = 0.0;  // those parameters in 16 bits
  core::Time gather;          // their all-gather across the data-parallel replicas
  // A unit recomputed under DeepSpeed's reuse distance
  // (Plan::fsdp_max_reuse_distance): what each of its backwards gathers a
  // second time after the recomputation's forward released it, and how long
  // that takes (its share of `gather`). Its peak is still gather_bytes.
  double regather_bytes = 0.0;
  core::Time regather;
  // Plan::fsdp_copy_out: after each gather, the compute stream copies the
  // gathered bytes out of the flat buffer into each parameter's own tensor
  // (read and written once, one kernel) before the unit runs. Zero otherwise.
  core::Time copy_out;
  double grad_bytes = 0.0;    // its gradients on one GPU, whole
  core::Time grad_scatter;    // their reduce-scatter after its backward
  // A MoE unit's routed experts: their part of gather_bytes and grad_bytes,
  // gathered and scattered over the expert-data-parallel group (under HSDP
  // its part in the shard group) after the rest over the sharding group, and
  // that part of gather and grad_scatter
  // (zero where the experts have no replicas to share them with). Zero
  // without experts.
  double gather_expert_bytes = 0.0, grad_expert_bytes = 0.0;
  core::Time gather_experts, grad_scatter_experts;
  // HSDP: the all-reduce of its gradient shard (grad_bytes / fsdp_shard_size)
  // across the shard groups, after the reduce-scatter. Zero without HSDP.
  // A MoE unit's experts' shard (grad_expert_bytes /
  // Plan::expert_shard_group_size) goes over their own copies after the
  // rest's: that part of it in grad_replicate_experts.
  core::Time grad_replicate, grad_replicate_experts;
  // DeepSpeed's blocking copy (Plan::grad_copy): the FP32 copy of the reduced
  // shard into the host optimizer's gradient, made after the stage's last
  // backward of the iteration only (the gradient-accumulation boundary); the
  // round trip of the 16-bit shard every backward makes is in the scatter
  // (or replicate) time above. Zero otherwise.
  core::Time grad_fp32_copy;
  // Offloading (Plan::offload): the copies over the host link inside the
  // times above, which collectives run as flows move after their data: the
  // parameter shard from the host (in `gather`) and the reduced gradient
  // shard to it (in grad_scatter, or grad_replicate under HSDP). Zero
  // otherwise.
  core::Time gather_host_copy, grad_host_copy;
  // Its part of the stage's F, I and W (each set sums to 1 over the units):
  // its layers' (or embedding's, head's) own times; what the stage adds as a
  // whole (the all-gather a scatter-gather send needs) goes to the unit that
  // runs first in that pass.
  double forward_share = 0.0, input_grad_share = 0.0, weight_grad_share = 0.0;
  bool operator==(const ShardUnit&) const = default;
};

struct StageCost {
  int layers = 0;           // transformer layers the stage holds
  core::Time forward;       // per micro-batch, including blocking TP collectives
  core::Time input_grad;    // I: gradient w.r.t. inputs
  core::Time weight_grad;   // W: gradient w.r.t. weights
  core::Time tp_comm_forward;   // the TP collective part of `forward`
  core::Time tp_comm_backward;  // the TP collective part of `input_grad`
  core::Time cp_comm_forward;   // the context-parallel exchange's exposed part of `forward`
  core::Time cp_comm_backward;  // and of `input_grad`
  core::Time ep_comm_forward;   // a MoE model's dispatch and combine in `forward`
  core::Time ep_comm_backward;  // and in `input_grad`
  // A MoE stage's F and B cut where its layers' dispatch and combine fall,
  // summed over its layers: the experts' compute between them (mlp), the
  // dispatch and the combine, and the rest (attention and everything else,
  // the stage's extras included). Forward runs attention, dispatch, experts,
  // combine; backward the reverse (B: I and W, with what recompute redoes).
  // What options.moe_a2a_overlap interleaves (lower/lower_compute.cpp).
  struct EpChunks {
    double rest = 0.0, dispatch = 0.0, mlp = 0.0, combine = 0.0;
    bool operator==(const EpChunks&) const = default;
  };
  EpChunks ep_forward_chunks, ep_backward_chunks;
  int moe_layers = 0;  // of its layers, those with a MoE block (the chunks' sums run over them)
  int moe_layers_redone = 0;  // of those, the ones recompute redoes (the stage's first ones)
  // One MoE layer's dispatch and combine as collectives, for
  // options.collectives "flow" (lower/lower_compute.cpp runs them as tasks
  // of their own there): in the order each pass runs them, the forward's,
  // the backward's (input gradient), and what recompute redoes of the
  // forward's in the backward. Their analytic times add up to the layer's
  // part of ep_comm_forward and ep_comm_backward. Empty without experts.
  struct EpCollective {
    hw::CollectiveKind kind = hw::CollectiveKind::kAllToAll;
    double bytes = 0.0;     // as hw::collective_time takes them
    bool over_etp = false;  // over the expert-tensor group; else the expert-parallel group
    bool dispatch = false;  // on the tokens' way to the experts; else on their way back (combine)
    // DeepEP: what crosses the NICs over the all-to-all's (deepep_network_share;
    // hw::lay_out forwards the rest over NVLink); 1 for a plain collective.
    double across_share = 1.0;
    core::Time analytic;
    bool operator==(const EpCollective&) const = default;
  };
  std::vector<EpCollective> ep_forward_collectives, ep_backward_collectives, ep_redo_collectives;
  std::int64_t activation_bytes = 0;   // held from F start until the backward ends
  // Of activation_bytes, what Plan::offload_modules sends to the host after
  // F and brings back for the backward (workload/activation_offload.hpp).
  std::int64_t offloaded_activation_bytes = 0;
  // Plan::checkpoint_in_cpu: the recomputed layers' checkpoints, on the host
  // from F's end until the backward (B or I) starts, none of them in
  // activation_bytes; and the one a layer's pass is using, on the GPU while
  // F and the backward run (checkpoint_transient_bytes).
  std::int64_t host_checkpoint_bytes = 0;
  std::int64_t checkpoint_transient_bytes = 0;
  // When the backward is split, what W still needs once I has ended: each
  // weight GEMM's input and output gradient (X and dY of dW = X^T dY). I's
  // end gives back activation_bytes and takes these until W ends.
  std::int64_t weight_grad_bytes = 0;
  // The part of weight_grad_bytes that activation_bytes already holds (the
  // GEMM inputs F kept): I's start adds only the rest, its end keeps this part.
  std::int64_t weight_grad_kept_bytes = 0;
  // parallel.twobp_concat: W of all the pipeline's micro-batches run as one op
  // (GEMMs m times taller, hence more efficient). Zero otherwise.
  core::Time weight_grad_concat;
  std::int64_t model_state_bytes = 0;  // weights, gradients, optimizer state
  std::int64_t host_state_bytes = 0;   // what Plan::offload moves to the host, per GPU
  // What the last stage's loss holds beyond what it keeps, while its
  // forward runs and while its backward does (loss_memory). 0 on other stages.
  std::int64_t loss_forward_transient_bytes = 0;
  std::int64_t loss_backward_transient_bytes = 0;
  // PyTorch's context parallelism (Plan::cp_merge): what a layer's attention
  // holds while it runs (cp_merge.hpp), through each F and backward of the
  // stage. 0 otherwise.
  std::int64_t attention_transient_bytes = 0;
  // Recomputation (Plan::recompute): what one recomputed layer holds beyond
  // what it keeps, while a backward of the stage redoes it. 0 without
  // recomputation.
  std::int64_t recompute_transient_bytes = 0;
  double params = 0.0;                 // parameters held per GPU
  // Of those, the routed experts': reduced over Plan::expert_replicas(),
  // sharded over Plan::expert_shard_group_size().
  double expert_params = 0.0;
  double send_forward_bytes = 0.0;     // activations to the next stage, per GPU
  double send_backward_bytes = 0.0;    // gradients to the previous stage, per GPU
  // Gradient reduction across data-parallel replicas, bucket by bucket in the
  // order the backward produces them: each bucket's share of the stage's
  // gradients and the time of its collective (all-reduce; reduce-scatter under
  // ZeRO-1/2). One zero-time bucket when there is a single replica.
  std::vector<double> grad_bucket_share;
  double grad_bytes = 0.0;   // the stage's gradients per GPU (2 or 4 bytes a value: Plan::grad_dtype)
  double param_bytes = 0.0;  // and its 16-bit parameters, which ZeRO gathers
  hw::CollectiveKind grad_reduce_kind = hw::CollectiveKind::kAllReduce;
  std::vector<core::Time> grad_bucket_reduce;
  // Offloading: each bucket's reduced shard to the host, inside its time above.
  std::vector<core::Time> grad_bucket_host_copy;
  core::Time param_all_gather;  // ZeRO-1/2: updated parameters, after the optimizer step
  // With Overlap::param_gather: that gather bucket by bucket (the gradient
  // buckets' sizes, in the order the forward uses them), each under the
  // next iteration's forward. Empty otherwise.
  std::vector<core::Time> param_bucket_gather;
  // A MoE stage's collectives above run in two parts, one after the other:
  // the dense parameters' share over dp, then the routed experts'
  // (expert_share) over the expert-data-parallel group. Each time above is
  // the whole; these are the experts' parts (zero with one expert replica),
  // one per bucket where the stage has experts, empty where it has none.
  std::vector<core::Time> grad_bucket_reduce_experts;
  core::Time param_all_gather_experts;
  std::vector<core::Time> param_bucket_gather_experts;
  double expert_share() const { return params > 0.0 ? expert_params / params : 0.0; }
  // ZeRO-3: the stage's parameters are sharded too, and gathered unit by
  // unit before each forward and each backward; each unit's gradients are
  // reduce-scattered after its backward. Empty otherwise.
  std::vector<ShardUnit> shard_units;
  bool sharded() const { return !shard_units.empty(); }
  // Tied input/output embeddings with pp > 1: the first and last stages each
  // hold a copy and all-reduce its gradient between them (Megatron-LM's
  // embedding group). Zero on other stages.
  core::Time embedding_grad_all_reduce;
  double embedding_grad_bytes = 0.0;
  // DualPipe's two directions hold two copies of the stage's layers, on
  // ranks r and pp - 1 - r: once each has reduced its gradients over its data
  // parallel group, the pair adds them (an all-reduce of what each GPU keeps
  // of them), so both copies step alike. Zero with one direction.
  core::Time copy_grad_all_reduce;
  double copy_grad_bytes = 0.0;
  core::Time optimizer_step;

  // Field by field (lower::SharedLowering compares two plans' stages).
  bool operator==(const StageCost&) const = default;
  core::Time backward() const { return input_grad + weight_grad; }
  core::Time grad_reduce() const {
    core::Time t;
    for (core::Time b : grad_bucket_reduce) t += b;
    return t;
  }
};

// One transformer layer as StageCosts::layer_forward and layer_backward
// cost it, op by op (what `trainsim run --ops` prints): one micro-batch on
// one GPU, each op's time in the three passes (compute, and the
// communication its stream waits for), the share of its forward that
// recompute redoes in the backward, and the work behind it.
struct LayerOpCost {
  std::string name;
  OpKind kind = OpKind::kElementwise;
  OpTiming forward, input_grad, weight_grad;
  // The forward as the backward redoes it (its collectives pipelined only
  // where the backward's are), and the share of it recompute redoes (0 to 1).
  OpTiming redo;
  double redone = 0.0;
};
struct LayerOps {
  std::vector<LayerOpCost> ops;  // in the forward's order
  double grad_add_s = 0.0;       // the add of the layer's weight gradients, where a kernel of its own
  bool empty() const { return ops.empty(); }
};
// What recompute adds to the backward for the op.
inline double recompute_seconds(const LayerOpCost& op) { return op.redone * op.redo.seconds(); }

struct StageCosts {
  std::vector<StageCost> stages;
  // The share of the GPU's short-run tensor-core figures the costs hold
  // (workload/duty_clock.hpp), and the tensor cores' share of the compute
  // time that sets it; 1 and 0 where the GPU does not throttle (or has no
  // tensor work).
  double tensor_clock_fraction = 1.0;
  double tensor_duty = 0.0;
  double model_flops_per_iteration = 0.0;     // whole cluster, no recompute
  double hardware_flops_per_iteration = 0.0;  // including recomputed FLOPs
  // One transformer layer, one micro-batch, one GPU, its tensor-parallel
  // collectives included (costed in the first stage's tensor group): the
  // forward, and the backward (I + W, what recompute redoes, and the add of
  // its weight gradients where that is a kernel of its own). What a profile
  // of one layer measures, e.g. Korthikanti et al.'s Table 4. A stage of n
  // layers costs n times these, plus its embedding or output head and the
  // all-gather of what scatter-gather sends bring it (a cost of the stage).
  core::Time layer_forward;
  core::Time layer_backward;
  // The same layer op by op; and a MoE model's dense layer, where it has
  // dense ones (empty otherwise). Only when asked for (stage_costs'
  // with_layer_ops).
  LayerOps layer_ops;
  LayerOps dense_layer_ops;
};

// Collectives (tensor-parallel, data-parallel, the tied embedding's) are
// costed as run by `algorithm` (see hw::CollectiveAlgorithm). `with_layer_ops`:
// also the layer op by op (StageCosts::layer_ops; left empty otherwise, as a
// sweep, which prints none, leaves it).
StageCosts stage_costs(const TransformerSpec& model, const Plan& plan, const hw::ClusterSpec& cluster,
                       hw::CollectiveAlgorithm algorithm = hw::CollectiveAlgorithm::kAuto, bool with_layer_ops = false);

}  // namespace trainsim::workload
