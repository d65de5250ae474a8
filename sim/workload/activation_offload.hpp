// Megatron-Core's fine-grained activation offloading
// (--fine-grained-activation-offloading --offload-modules, parallel.offload_modules).
//
// Each named module's input, saved for the backward, is copied to the host on
// a device-to-host stream of its own as soon as the module's forward has
// saved it, and its GPU memory is given back; during the backward each
// layer's tensors are copied back on a host-to-device stream a layer ahead
// of the backward that reads them (megatron/core/pipeline_parallel/
// fine_grained_activation_offload.py: PipelineOffloadManager's d2h_stream and
// h2d_stream, one offload group a module). The copies run beside the compute;
// what a layer's copy takes beyond that layer's pass holds the pass back.
//
// Modelled modules are the MoE block's two: "expert_fc1" (the routed copies
// going into the experts' first GEMM) and "moe_act" (the first GEMM's output,
// the activation function's input). Megatron-Core's other choices
// (attn_norm, core_attn, attn_proj, mlp_norm) are refused by the config reader.
#pragma once

namespace trainsim::workload {

enum OffloadModule : unsigned {
  kOffloadExpertFc1 = 1u,
  kOffloadMoeAct = 2u,
};

// Megatron-Core's min_offloaded_tensor_size: a saved tensor of fewer elements
// stays on the GPU (init_model_chunk_offload_handler's default, 1024 x 1024).
inline constexpr double kMinOffloadedElements = 1024.0 * 1024.0;

// What one MoE layer offloads per micro-batch on one GPU, in bytes, for
// `copies` routed token copies the GPU's `local_experts` receive (tokens x
// top_k x the busiest rank's load), `hidden` the model width times the
// expert tensor parallel size (a copy stands for etp rows), `expert_ffn` one
// expert's MLP width, `fc1_input_bytes` the bytes a value of the first GEMM's
// saved input takes (2, or 1 where an FP8 recipe keeps it in FP8). The first
// GEMM saves its input an expert at a time (Transformer Engine's grouped
// linear layer splits it by expert), so the size floor applies to one
// expert's share; its output, gate and up, 2 x expert_ffn values a copy in
// BF16, is one tensor.
double offloaded_bytes_per_moe_layer(unsigned modules, double copies, int local_experts, double hidden,
                                     double expert_ffn, double fc1_input_bytes);

// The time a pass is held back per layer when that layer's copy of `bytes`
// over a host link of `link_bytes_per_s` outlasts the layer's own pass of
// `layer_pass_s` seconds (0 when the copy hides).
double exposed_copy_seconds(double bytes, double link_bytes_per_s, double layer_pass_s);

}  // namespace trainsim::workload
