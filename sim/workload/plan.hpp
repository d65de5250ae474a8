// The parallel plan: how the model is split over the GPUs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/placement.hpp"
#include "workload/activation_offload.hpp"
#include "workload/fp8.hpp"
#include "workload/tp_overlap.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

// Activation recomputation (Korthikanti et al. 2022, arXiv 2205.05198):
//   none       keep every activation;
//   selective  drop the attention core's (scores, softmax, dropout) and redo
//              that part of the forward during backward;
//   full       keep only each layer's input and redo the whole layer forward;
//   selective-op  TorchTitan's per-op selective checkpointing (activation
//              checkpoint mode "selective", option "op"; torchtitan
//              parallelize_llama.py, _save_list and _custom_policy): the
//              outputs of attention and of every other matmul of the layer
//              (of wq, wk, wv, wo, w1, w3, w2 in that order: wq, wv, w1, w2)
//              are kept, everything else is redone before the backward (see
//              Op::op_sac_redo).
enum class Recompute { kNone, kSelective, kFull, kSelectiveOp };
// Its name in configs ("none", "selective", "full", "selective-op"), and back.
const char* recompute_name(Recompute r);
std::optional<Recompute> recompute_named(const std::string& name);

// The 16-bit type of the weights and activations. Both run the same GEMMs at
// the same speed; fp16 adds dynamic loss scaling, whose unscale-and-check pass
// over the gradients is part of every optimizer step.
// fp8: BF16 weights and activations with the linear layers' GEMMs in FP8
// (workload/fp8.hpp), scaled by Plan::fp8_recipe.
enum class Precision { kBf16, kFp16, kFp8 };

// The gradient buffer a rank accumulates its micro-batches in and reduces
// across replicas: 16-bit (bf16 or fp16: 2 bytes a value) or fp32 (4 bytes:
// Megatron-LM's main_grad under bf16, DeepSpeed's BF16 optimizer).
enum class GradDtype { kBf16, kFp16, kFp32 };
double grad_value_bytes(GradDtype d);

// The type Adam's two moments (momentum and variance) are kept in: FP32 by
// default; 16-bit or FP8 under Megatron-Core's precision-aware optimizer
// (--use-precision-aware-optimizer --exp-avg-dtype --exp-avg-sq-dtype,
// Transformer Engine's FusedAdam, which keeps them in that type and computes
// in FP32), as DeepSeek-V3's training kept them in BF16 (arXiv 2412.19437,
// low-precision optimizer states).
enum class MomentDtype { kFp32, kBf16, kFp16, kFp8 };
double moment_value_bytes(MomentDtype d);
const char* moment_dtype_name(MomentDtype d);

// How a micro-batch's weight gradients join those of the iteration's earlier
// micro-batches, and the HBM bytes a separate kernel moves per parameter,
// with g the gradient buffer's bytes a value:
//   fused     the weight-gradient GEMM accumulates into the gradient buffer
//             itself (Megatron-LM's gradient_accumulation_fusion,
//             TransformerEngine): nothing more;
//   add       a separate add of the 16-bit gradient into the buffer (PyTorch
//             autograd's AccumulateGrad; Megatron-LM's main_grad.add_ before
//             that fusion): read 2 + g, write g;
//   cast-add  a cast of the 16-bit gradient to the buffer's type, then the add
//             (DeepSpeed's BF16_Optimizer.update_hp_grads after every
//             micro-batch's backward): read 2, write g; read g + g, write g.
//             Into a 16-bit buffer the cast is no copy, so it costs what add does.
enum class GradAccumulation { kFused, kAdd, kCastAdd };
double grad_accumulation_bytes_per_param(GradAccumulation a, GradDtype d);

// What lives in host memory instead of the GPU's (ZeRO-Offload, FSDP's CPU
// offload):
//   optimizer         the FP32 master weights and Adam's moments, and the
//                     FP32 gradients they are stepped with: each reduced
//                     gradient shard is copied to the host over PCIe as soon
//                     as its reduction ends, the CPUs run Adam over the
//                     rank's shard at the host's memory bandwidth (shared by
//                     the node's GPUs), and the updated 16-bit shard is
//                     copied back (DeepSpeed's offload_optimizer, with its
//                     CPU Adam);
//   optimizer+params  ZeRO-3 only: the 16-bit parameter shard too, copied to
//                     the GPU before each of its unit's gathers
//                     (offload_param; FSDP's CPUOffload(offload_params=True)).
enum class Offload { kNone, kOptimizer, kOptimizerAndParams };

// How an offloaded gradient shard reaches the host under ZeRO-3
// (parallel.offload_grad_copy):
//   async     on the communication stream beside the compute, which goes on
//             (ZeRO-1/2's and FSDP's CPU offload: non-blocking copies);
//   blocking  DeepSpeed's stage 3 (stage3.py partition_grads): the 16-bit
//             shard to its host buffer and back to the GPU after every
//             backward; after the last of the iteration (the accumulation
//             boundary) an FP32 copy to the host's gradient that is not
//             non-blocking, so the gradient hook's host thread waits for
//             that unit's reduction and copies before it launches any more
//             of that backward: the next unit's backward starts after them.
enum class OffloadGradCopy { kAsync, kBlocking };

// How a stage's output crosses to the next pipeline stage (and its gradient
// back) when tensor parallelism replicates it on every tensor rank (no
// sequence parallelism; with it each rank holds 1/tp of the sequence and
// sends that):
//   scatter-gather  each tensor rank sends 1/tp of it and the receiving
//                   stage all-gathers the pieces in its tensor group before
//                   using them: Megatron-LM 2021-2022
//                   (--scatter-gather-tensors-in-pipeline, on by default;
//                   Narayanan et al., arXiv 2104.04473, section 4.1) and
//                   DeepSpeed's pipeline engine (PartitionedTensor);
//   full            each tensor rank sends all of it to its peer and nothing
//                   is gathered: Megatron-Core, whose tensor shapes divide the
//                   sequence by tp only under sequence parallelism
//                   (pipeline_parallel/schedules.py, get_tensor_shapes).
enum class PipelineSendSplit { kScatterGather, kFull };

// The communication a framework hides under compute, each as the framework
// runs it (read from options.overlap_grad_reduce, options.overlap_param_gather
// and options.tp_comm_overlap).
struct Overlap {
  // Each stage's gradient buckets are reduced as its last backward produces
  // them (true), or all of them once the rank's whole backward has ended
  // (false). Megatron-LM's default is false (--overlap-grad-reduce is a flag);
  // PyTorch DDP and FSDP always overlap, and true is what trainsim has always
  // simulated, so it stays the default.
  bool grad_reduce = true;
  // ZeRO-1/2 and the distributed optimizer: the all-gather of the updated
  // parameters runs under the next iteration's forward, bucket by bucket,
  // each bucket's forward waiting only for its own gather, one bucket
  // gathered ahead (Megatron-LM's --overlap-param-gather, default false:
  // the gather follows the optimizer step, exposed).
  bool param_gather = false;
  // Tensor-parallel communication split into tp chunks and pipelined with
  // the GEMM it feeds or follows: Transformer Engine's userbuffers
  // (Megatron-LM's --tp-comm-overlap, default false) and TorchTitan's async
  // TP (default false).
  bool tp_comm = false;
  // With tp_comm: the backward's collectives pipelined too (true, options.
  // tp_comm_overlap true: Transformer Engine overlaps its dgrad GEMMs'
  // gathers and reduce-scatters as well), or only the forward's (false,
  // options.tp_comm_overlap "forward": PyTorch's async TP, whose authors
  // measured up to 29% on the forward pass and 8% end to end, what the
  // forward alone gives); the backward and what recompute redoes then run
  // their collectives as without overlap.
  bool tp_comm_backward = true;
  // A MoE model's dispatch and combine under compute: each forward paired
  // with the backward beside it, one's exchanges hidden under the other's
  // compute (Megatron-Core's --overlap-moe-expert-parallel-comm, its "1F1B
  // A2A overlap", default false; DeepSeek-V3's overlapped chunks).
  bool moe_a2a = false;
  // How much longer compute takes while communication kernels share the
  // GPU with it (options.comm_slowdown): the data-parallel and ZeRO
  // collectives beside the compute stream, the chunks of tp_comm and the
  // exchanges moe_a2a pairs with compute all take it.
  double compute_slowdown = kOverlapComputeSlowdown;
};

// How context parallelism moves the keys and values that a rank's queries
// need from the other ranks' parts of the sequence (parallel.cp_algorithm):
//   ring        Megatron-Core / Transformer Engine: cp - 1 point-to-point
//               steps around the cp ring, each sending the K/V block on while
//               attention runs on the block that arrived; backward sends K/V
//               and their gradients;
//   all-gather  Llama 3, TorchTitan: K and V all-gathered before attention,
//               their gradients reduce-scattered after its backward;
//   all-to-all  DeepSpeed Ulysses: Q, K, V redistributed from sequence shards
//               to head shards before attention and the output back after
//               it (and the same four backward); heads must divide by cp.
enum class CpAlgorithm { kRing, kAllGather, kAllToAll };
// Its name in configs ("ring", "all-gather", "all-to-all"), and back.
const char* cp_algorithm_name(CpAlgorithm a);
std::optional<CpAlgorithm> cp_algorithm_named(const std::string& name);

// How the partial results of attention over each block of keys become one
// (parallel.cp_merge):
//   fused    inside the kernels (one attention call over the gathered keys,
//            or the ring's fused correction): nothing beyond attention;
//   pytorch  PyTorch's experimental context_parallel, as TorchTitan runs it:
//            one SDPA call per block, merged by eager FP32 element-wise ops,
//            the gradients accumulated in FP32 and dK/dV passed around the
//            ring a block behind (workload/cp_merge.hpp).
enum class CpMerge { kFused, kPyTorch };

struct Plan {
  int tp = 1;  // tensor parallel
  int pp = 1;  // pipeline parallel (stages)
  int dp = 1;  // data parallel (replicas)
  // Context parallel: each of cp ranks holds 1/cp of every sequence's tokens
  // (Megatron-Core's order tp-cp-dp-pp: the cp ranks of a replica sit tp
  // GPUs apart). Gradients are reduced, and ZeRO shards, over dp x cp ranks;
  // the batch is split over dp only.
  int cp = 1;
  CpAlgorithm cp_algorithm = CpAlgorithm::kRing;
  CpMerge cp_merge = CpMerge::kFused;
  // The ranks that hold one tensor and pipeline rank's parameters, each a
  // pipeline of its own in the simulation: dp x cp. Replica r is data-parallel
  // rank r / cp, context rank r % cp.
  int replicas() const { return dp * cp; }
  // Expert parallelism (a MoE model's; Megatron-Core's parallel folding):
  // the tp x cp x dp GPUs of a pipeline stage that run attention as those
  // groups also run the MoE blocks as ep x edp, with edp = tp x cp x dp / ep;
  // an expert-parallel group is ep consecutive GPUs of the stage in
  // tp-cp-dp order. Each holds experts / ep of every layer's routed experts,
  // whose gradients are reduced, and under ZeRO sharded, over edp.
  int ep = 1;
  // Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size;
  // 1 here by default, as the published runs set it): each expert's MLP
  // split over etp GPUs; the MoE layers' groups in etp-ep-edp order.
  int etp = 1;
  int expert_replicas() const { return tp * replicas() / (ep * etp); }
  // The GPUs a routed expert's ZeRO-3 shards spread over: under HSDP the
  // expert-data-parallel group's members inside one shard group (each shard
  // group holds whole expert-parallel groups; TorchTitan's dp_shard_mod_ep),
  // its copies across the groups as the rest's; elsewhere all of edp.
  int expert_shard_group_size() const { return expert_replicas() / shard_replicas(); }
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // The busiest expert-parallel rank's routed tokens over the mean, drop-less
  // (options.moe_imbalance): 1 is balanced, as Megatron-Core's
  // --moe-router-force-load-balancing makes it.
  double moe_imbalance = 1.0;
  // Virtual stages per pipeline rank (interleaved 1F1B, breadth-first, zb-v):
  // the model is cut into pp x vp stages, placed as the schedule says.
  int vp = 1;
  int microbatch_size = 1;
  int global_batch = 1;
  std::string schedule = "1f1b";
  // For a "csv:PATH" schedule, the placement its file implies (the config
  // loader reads it); a registered schedule names its own.
  schedule::Placement csv_placement = schedule::Placement::kLooped;
  // 2BP: run each rank's deferred weight-gradient passes as one op over the
  // concatenated micro-batches (one larger GEMM per weight) instead of one per
  // micro-batch.
  bool twobp_concat = false;
  Recompute recompute = Recompute::kNone;
  // Full recompute of only this many layers of each stage, its first ones,
  // the others keeping all their activations: Megatron-LM's
  // --recompute-method block --recompute-num-layers, fms-fsdp's selective
  // checkpointing of a fraction of the blocks. 0: every layer. A stage with
  // fewer layers recomputes them all.
  int recompute_layers = 0;
  // Selective recompute's parts (RecomputeModule bits): the attention core
  // alone by default, as Korthikanti et al. and Megatron-Core's default
  // --recompute-modules core_attn.
  unsigned recompute_modules = kModuleCoreAttn;
  // Megatron-Core's fine-grained activation offloading: the OffloadModule
  // bits (workload/activation_offload.hpp) whose saved inputs go to the host
  // after the forward and come back before the backward; 0 for none.
  unsigned offload_modules = 0;
  // DeepSpeed's CPU checkpointing (parallel.checkpoint_in_cpu: its
  // activation_checkpointing cpu_checkpointing, Megatron-DeepSpeed's
  // --checkpoint-in-cpu): under full recompute each layer's checkpoint, its
  // input, is copied to host memory as the layer's forward starts and back
  // as its recomputation starts, both with blocking copies
  // (deepspeed/runtime/activation_checkpointing/checkpointing.py: .to() to
  // and from the CPU, not non_blocking), so each copy holds the pass back
  // whole and the GPU keeps one layer's checkpoint at a time.
  bool checkpoint_in_cpu = false;
  // Layers of a stage of `layers` that are recomputed.
  int recomputed_layers(int layers) const {
    if (recompute == Recompute::kNone) return 0;
    return recompute_layers > 0 && recompute_layers < layers ? recompute_layers : layers;
  }
  // Sequence parallelism: the parts of a layer outside the tensor-parallel
  // GEMMs (norms, dropouts) work on 1/tp of the sequence, and each TP
  // all-reduce becomes a reduce-scatter plus an all-gather.
  bool sequence_parallel = false;
  // The attention core's kernels (see Attention): FlashAttention by default;
  // "unfused" for Megatron-LM's kernels before it (runs of 2021-2022).
  Attention attention = Attention::kFlash;
  // The element-wise kernels (see Elementwise): fused by default (Megatron-LM,
  // Transformer Engine, torch.compile); eager for PyTorch without torch.compile.
  Elementwise elementwise = Elementwise::kFused;
  // Grouped-query K and V copied out to every query head before attention
  // (parallel.kv_repeat): an attention call that takes as many K/V heads as
  // query heads (torch's scaled_dot_product_attention as TorchTitan, before
  // its January 2026 change, and fms call it). False: the kernel reads the
  // grouped K and V itself (FlashAttention-2, Transformer Engine, cuDNN).
  bool kv_repeat = false;
  // Q, K and V, and SwiGLU's gate and up projections, as linear layers of
  // their own (parallel.separate_projections: TorchTitan's and Hugging
  // Face's Llama) rather than one fused GEMM each (Megatron-LM, Transformer
  // Engine, fms, MPT): each GEMM at its own width's rate, their input
  // gradients summed by an add, and async TP cannot pipeline the sum's
  // reduce-scatter with a GEMM.
  bool separate_projections = false;
  // Sequence parallelism on [b, s, h] tensors (parallel.sp_batch_first:
  // TorchTitan's DTensor SequenceParallel shards dim 1), where Megatron-LM
  // keeps [s, b, h] and gathers along the first dimension: every
  // all-gather's output is copied into [b, s, h] order and every
  // reduce-scatter's input out of it (the functional collectives' torch.cat
  // of the chunks), on the compute stream. Async TP's fused kernels take
  // their operands restrided instead and copy nothing.
  bool sp_batch_first = false;
  // Context parallelism run through PyTorch's context_parallel (cp_merge.hpp).
  bool cp_pytorch_merge() const { return cp > 1 && cp_merge == CpMerge::kPyTorch; }
  LayerCode layer_code() const { return {kv_repeat, separate_projections, sp_batch_first, cp_pytorch_merge()}; }
  // ZeRO (Rajbhandari et al. 2020, arXiv 1910.02054) across the data-parallel
  // replicas: 0 replicates everything; 1 shards the optimizer state; 2 also the
  // gradients. Gradients are then reduce-scattered instead of all-reduced, and
  // the updated parameters all-gathered after the optimizer step.
  int zero_stage = 0;
  // ZeRO-3 as FSDP and DeepSpeed run it, unit by unit (StageCost::shard_units):
  // a unit is this many transformer layers (FSDP2 wraps each block: 1); the
  // embedding and the output head are units of their own.
  int fsdp_unit_layers = 1;
  // Units whose all-gather may run ahead of the compute: unit u+1 (and up
  // to u+depth) is gathered while unit u computes (FSDP2's default: 1).
  int fsdp_prefetch = 1;
  // DeepSpeed's window instead (stage3_prefetch_bucket_size, 5e7 by default
  // there): gathers run ahead of the unit computing as long as the
  // parameters gathered ahead of it (on one GPU) stay within this many. 0:
  // count units by fsdp_prefetch.
  double fsdp_prefetch_params = 0.0;
  // DeepSpeed's stage3_max_live_parameters (1e9 by default there): a gather
  // waits until the units still held and its own hold at most this many
  // parameters (on one GPU); one unit larger than it is gathered alone, with
  // nothing ahead. 0: no limit.
  double fsdp_max_live_params = 0.0;
  // DeepSpeed's stage3_param_persistence_threshold (1e5 by default there;
  // FSDP has none): a tensor of at most this many parameters (on one tensor
  // rank) is never sharded, so neither gathered nor freed. 0: every tensor
  // is sharded.
  double fsdp_persistence_threshold = 0.0;
  // DeepSpeed's stage3_max_reuse_distance (1e9 by default there): a layer
  // recomputed in the backward releases, after the recomputation's forward,
  // the parameters not used again within this many parameters, and gathers
  // them again for its backward (workload/zero3_reuse.hpp; 0 releases them
  // all). None: the unit stays gathered from its backward's gather through
  // recomputation and backward, as FSDP holds it.
  std::optional<double> fsdp_max_reuse_distance;
  // Free each unit's gathered parameters after its forward (true, FSDP2's
  // default), or keep them until the stage's backward has used them.
  bool reshard_after_forward = true;
  // FSDP2's copy-out (parallel.fsdp_copy_out): each unit's all-gather lands
  // in one flat buffer, from which the compute stream copies every
  // parameter into a tensor of its own before the unit runs
  // (torch.split_with_sizes_copy in foreach_all_gather_copy_out): the
  // gathered bytes read and written once each gather. False: the gathered
  // buffer is used in place (FSDP1's flat parameters, DeepSpeed's stage 3,
  // Megatron-Core's parameter buffers).
  bool fsdp_copy_out = false;
  // What a ZeRO-3 shard holds of the parameters (parallel.fsdp_param_shards):
  // a 16-bit copy beside the optimizer's FP32 master weights (false:
  // DeepSpeed's stage 3, 2 + g + 12 bytes a parameter over the shards), or
  // the FP32 weights themselves (true: PyTorch's FSDP and FSDP2 under mixed
  // precision keep the sharded parameters in FP32, cast to 16 bits as each
  // unit is gathered, and the optimizer steps them directly; their gradients
  // reach the shard in FP32 whatever the reduction's type: 4 + 4 + 8).
  bool fsdp_fp32_shards = false;
  // Whether ZeRO-3's reduce-scatters run over a process group of their own
  // (parallel.fsdp_reduce_scatter_group: "separate", FSDP2's opt-in
  // set_separate_reduce_scatter_group, Megatron-FSDP's
  // --create-all-gather-group) and so beside the gathers; false (every
  // framework's default): one group, whose collectives run one at a time in
  // the order they are issued (lower/issue_queue.hpp).
  bool fsdp_separate_reduce_scatter_group = false;
  // When a stage's gradients leave for their owners (parallel.fsdp_grad_sync):
  // after each run of backwards (false: DeepSpeed's stage 3, FSDP without a
  // pipeline), or once, after the stage's last backward of the iteration
  // (true: FSDP2 stages under torch.distributed.pipelining, which runs every
  // backward with set_requires_gradient_sync(False) and
  // set_reshard_after_backward(False)). Then gradients accumulate unsharded
  // in grad_dtype until that scatter, and parameters stay gathered from
  // their first use after a backward until the optimizer step.
  bool grad_sync_after_last_backward = false;
  // HSDP (FSDP2's 2-D mesh, DeepSpeed's ZeRO++ hpZ left aside): parameters,
  // gradients and optimizer state are sharded within groups of this many
  // consecutive data-parallel replicas and replicated across the dp /
  // fsdp_shard_size groups. Gathers and gradient reduce-scatters stay inside
  // a group; each unit's gradient shard is then all-reduced across the
  // groups. 0: one group of all dp replicas (plain FSDP).
  int fsdp_shard_size = 0;
  // Megatron-LM's --use-distributed-optimizer (off by default there):
  // gradients reduce-scattered in buckets, each replica steps 1/dp of the
  // optimizer state, the updated parameters all-gathered: ZeRO-1 as
  // Megatron-Core runs it. The config sets zero_stage = 1 with it.
  bool distributed_optimizer = false;
  // The replicas a ZeRO-3 unit is sharded over.
  int shard_group_size() const { return zero_stage == 3 && fsdp_shard_size > 0 ? fsdp_shard_size : replicas(); }
  // How many copies of each shard there are (1 without HSDP).
  int shard_replicas() const { return replicas() / shard_group_size(); }
  // Gradients are reduced in buckets of this many MiB, each as soon as the
  // backward has produced it (PyTorch DDP's default bucket is 25 MiB).
  double grad_bucket_mib = 25.0;
  // How each micro-batch's weight gradients join the iteration's (see
  // GradAccumulation): inside the weight-gradient GEMM by default, into a
  // 16-bit buffer.
  GradAccumulation grad_accumulation = GradAccumulation::kFused;
  Precision precision = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;  // read under Precision::kFp8 only
  // The library running the recipe, when named (parallel.fp8_library);
  // fp8_runtime() gives the one that counts.
  std::optional<Fp8Library> fp8_library;
  Fp8Library fp8_runtime() const { return fp8_library.value_or(default_fp8_library(fp8_recipe)); }
  // ZeRO-3 / FSDP gathers the linear layers' weights in FP8 (torchao's
  // enable_fsdp_float8_all_gather; Megatron-LM's --fp8-param-gather): one
  // byte a parameter instead of two.
  bool fp8_param_gather = false;
  GradDtype grad_dtype = GradDtype::kBf16;  // bf16 or fp32 under bf16, fp16 or fp32 under fp16
  MomentDtype moment_dtype = MomentDtype::kFp32;  // Adam's momentum and variance
  PipelineSendSplit send_split = PipelineSendSplit::kScatterGather;
  Overlap overlap;
  Offload offload = Offload::kNone;
  // Unset, DeepSpeed's blocking copy where ZeRO-3 offloads the optimizer
  // alone (only DeepSpeed's stage 3 does: FSDP's CPU offload takes the
  // parameters too), else async; grad_copy() gives the one that counts.
  std::optional<OffloadGradCopy> offload_grad_copy;
  OffloadGradCopy grad_copy() const {
    return offload_grad_copy.value_or(zero_stage == 3 && offload == Offload::kOptimizer ? OffloadGradCopy::kBlocking
                                                                                         : OffloadGradCopy::kAsync);
  }
  // Offloaded gradients copied as DeepSpeed's stage 3 copies them, waiting.
  bool blocking_grad_copy() const { return offload != Offload::kNone && grad_copy() == OffloadGradCopy::kBlocking; }
  LossKernel loss = LossKernel::kVocabParallel;
  // Layers of each pipeline stage (pp x vp of them); empty for an even split.
  // (Llama 3 405B, for one, gave its first and last stages a layer less.)
  std::vector<int> stage_layers;

  // Where the schedule places its stages (looped for an unknown name).
  schedule::Placement placement() const;
  // Pipelines of the same layers laid over the stages: DualPipe's two
  // directions, each with a copy of the model's layers; otherwise one.
  int pipelines() const { return schedule::pipelines_of(placement()); }
  // The stages simulated: pp x vp a pipeline.
  int stages() const { return pp * vp * pipelines(); }
  // The pipeline rank that runs `stage`.
  int rank_of_stage(int stage) const { return schedule::rank_of_stage(placement(), stage, pp); }
  // A stage's layers; stage_layers gives a pipeline's pp x vp (every pipeline's alike).
  int layers_of_stage(int stage, int model_layers) const {
    const int length = pp * vp;
    return stage_layers.empty() ? model_layers / length : stage_layers[stage % length];
  }
  // The stage that holds the same layers in the other direction (DualPipe's
  // copy, as Shape::copy_of); the stage itself with one pipeline.
  int copy_of_stage(int stage) const { return pipelines() == 1 ? stage : (stage + stages() / 2) % stages(); }

  int gpus() const { return tp * cp * pp * dp; }
  // Micro-batches each pipeline runs per iteration.
  int microbatches() const { return global_batch / (dp * microbatch_size); }
  // GPU id of pipeline rank `rank`, replica `replica` (of replicas()), tensor
  // rank `tensor`. Megatron-LM's order: tensor ranks fastest, then context
  // ranks, then data-parallel ranks, then pipeline ranks, so a tensor group
  // shares a node.
  int gpu_of(int rank, int replica = 0, int tensor = 0) const {
    return (rank * replicas() + replica) * tp + tensor;
  }
};

}  // namespace trainsim::workload
