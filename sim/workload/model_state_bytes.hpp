// Per parameter of a GPU's shard: the bytes of model state mixed-precision
// Adam keeps under each ZeRO stage, and the HBM bytes its step moves.
#pragma once

#include "core/time.hpp"
#include "hw/cluster_spec.hpp"
#include "workload/plan.hpp"

namespace trainsim::workload {

// Bytes of model state per parameter of a GPU's model shard for mixed-precision
// Adam: a 16-bit weight (2), the gradient (g: 2, or 4 for fp32 gradients) and
// FP32 master weight, momentum and variance (K = 12) (ZeRO, arXiv 1910.02054
// §3.1); under ZeRO stage 0-3 over `dp` replicas (§5.1): 2 + g + 12;
// 2 + g + 12/dp; 2 + (g + 12)/dp; (2 + g + 12)/dp. With 16-bit gradients 16;
// 4 + 12/dp; 2 + 14/dp; 16/dp. With the moments in m bytes a value
// (MomentDtype) K is 4 + 2m: 8 with BF16 moments. `weight_bytes` is the
// 16-bit weight's 2, or 0 where the FP32 master is the weight itself
// (PyTorch FSDP's FP32 shards, Plan::fsdp_fp32_shards: 0 + 4 + 12 = 16 over
// the shards, their gradients FP32).
double model_state_bytes_per_param(int zero_stage, int dp, double grad_bytes = 2.0, double moment_bytes = 4.0,
                                   double weight_bytes = 2.0);
// The HBM bytes a mixed-precision Adam step moves per parameter it updates,
// pass by pass as Megatron-LM's MixedPrecisionOptimizer.step runs them
// (megatron/optimizer/optimizer.py; DeepSpeed's fp16 and BF16 optimizers
// make the same passes over their partitions), g the gradient's bytes:
//   16-bit gradients into fp32 main gradients (_copy_model_grads_to_main_grads):
//     read 2, write 4; none when the gradient buffer is fp32 already;
//   fp16 only, dynamic loss scaling (_unscale_main_grads_and_check_for_nan):
//     read 4, write 4;
//   the global gradient norm for clipping (clip_grad_norm_fp32): read 4 (the
//     rescale that follows only when the norm is over the limit is left out);
//   Adam (apex FusedAdam): read fp32 weight, gradient, momentum, variance
//     (16), write weight, momentum, variance (12);
//   16-bit weights from the fp32 ones (_copy_main_params_to_model_params):
//     read 4, write 2.
// 16-bit gradients: 52 bytes with fp16, 44 with bf16; fp32 gradients: 46 and
// 38. Under ZeRO-1/2 each replica updates only its 1/dp of the parameters.
// With the moments in m bytes a value Adam reads 8 + 2m and writes 4 + 2m
// (Transformer Engine's FusedAdam reads and writes them in their own type):
// 8 bytes less a parameter with BF16 moments. Without `sixteen_bit_copy`
// (PyTorch FSDP's FP32 shards are the weights the model gathers) the last
// pass is not made: 32 bytes with FP32 gradients and moments.
double optimizer_bytes_per_param(double grad_bytes, Precision precision, double moment_bytes = 4.0,
                                 bool sixteen_bit_copy = true);

// Of `params` (or their bytes), `expert_params` of them the routed experts',
// what one GPU holds under ZeRO's sharding: the rest over the sharding group
// (Plan::shard_group_size), the experts over theirs
// (Plan::expert_shard_group_size).
double sharded_share(const Plan& plan, double params, double expert_params);
// A copy of `bytes` over the host link (PCIe, one way) where the plan
// offloads (Plan::offload); zero where it does not.
double host_copy_seconds(const Plan& plan, const hw::NodeSpec& node, double bytes);

// The optimizer step of one GPU: its `updated` parameters stepped (those
// optimizer_bytes_per_param passes over them at the achievable HBM
// bandwidth, `shard_grad_bytes` a gradient), then the `held_grads` gradients
// of its buffer zeroed for the next iteration (`grad_bytes` each), and one
// kernel's overhead. Offloaded (Plan::offload), the step runs on the host:
// the same passes with FP32 gradients at the DRAM bandwidth the node's GPUs'
// processes share, all stepping at once, and no faster than the process's
// share of the cores steps at the node's measured rate where it has one
// (DeepSpeed binds a rank's CPU Adam threads to its cores); then the updated
// 16-bit shard back to the GPU over PCIe (unless the parameters live on the
// host), and under ZeRO-1 the GPU's buffer of all `params` gradients zeroed.
core::Time optimizer_step_time(const Plan& plan, const hw::NodeSpec& node, double updated, double held_grads,
                               double params, double grad_bytes, double shard_grad_bytes, double moment_bytes);

}  // namespace trainsim::workload
