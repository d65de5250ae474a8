// The answer to a what-if: iteration time, throughput, utilisation, bubbles and
// memory, as text for people and as JSON (stable keys) for machines.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lower/simulation.hpp"
#include "report/burst_stats.hpp"
#include "schedule/placement.hpp"

namespace trainsim::report {

// What the summary needs to know beyond the simulation itself.
struct RunInfo {
  std::string config;    // the config file, as given
  std::string model;     // model name
  std::string schedule;  // schedule name
  int tp = 1, pp = 1, dp = 1, cp = 1;
  std::string cp_algorithm;  // with cp > 1
  std::string precision = "bf16";  // bf16, fp16 or fp8
  std::string fp8_recipe, fp8_library;  // with fp8
  std::vector<std::string> offload_modules;  // activations offloaded to the host (Megatron-Core's names)
  bool checkpoint_in_cpu = false;  // full recompute's checkpoints in host memory (DeepSpeed's CPU checkpointing)
  std::string offload = "none";               // parallel.offload: none, optimizer or optimizer+params
  std::string offload_grad_copy;              // with offload: async or blocking (the one that applied)
  std::string moment_dtype = "fp32";          // Adam's momentum and variance
  int ep = 1;                  // expert-parallel ranks (a MoE model's)
  int etp = 1;                 // expert tensor-parallel ranks (a MoE model's)
  bool moe = false;            // a MoE model: the exposed-communication line has its ep kind
  int vp = 1;  // virtual stages per pipeline rank
  schedule::Placement placement = schedule::Placement::kLooped;  // where the stages run (for the picture's legend)
  int microbatch_size = 1;
  int global_batch = 1;
  int microbatches = 1;
  int seq = 1;
  int gpus = 1;
  double peak_tflops = 0.0;  // per GPU
  double model_flops_per_iteration = 0.0;
  double hardware_flops_per_iteration = 0.0;  // with recomputed FLOPs
  // One transformer layer, one micro-batch, one GPU (workload::StageCosts):
  // forward, and backward with what recompute redoes and a separate add of
  // its weight gradients. 0 for a layer-table model.
  double layer_forward_s = 0.0;
  // The share of the GPU's short-run tensor-core figures the costs hold and
  // the tensor work's share of the compute time that sets it
  // (workload/duty_clock.hpp); 1 and 0 on a GPU that does not throttle.
  double tensor_clock_fraction = 1.0;
  double tensor_duty = 0.0;
  double burn_fraction = 1.0;  // the GPU's sustained_tensor_fraction
  double layer_backward_s = 0.0;
  std::string recompute = "none";
  int zero_stage = 0;
  bool sequence_parallel = false;
  std::string attention = "flash";
  double sim_wall_s = 0.0;
  // Offloading (workload::Offload): the most host memory any node's GPUs put
  // there, and the node's DRAM; both 0 without offloading.
  double host_memory_per_node_bytes = 0.0;
  double host_memory_capacity_bytes = 0.0;
  // The calibration profile the run used ("FILE (GPU, DATE)"); empty for the presets alone.
  std::string calibration;
};

// Communication time during which the compute stream had nothing to do.
struct ExposedComm {
  double tp = 0.0;  // tensor-parallel collectives (blocking)
  double pp = 0.0;  // waiting for pipeline transfers to arrive
  double dp = 0.0;  // data-parallel gradient reduction and parameter gathering
  double cp = 0.0;  // the context-parallel exchange before attention, where not hidden
  double ep = 0.0;  // a MoE model's token dispatch and combine (blocking)
};

struct StageSummary {
  int rank = 0;
  int gpu = 0;
  double busy_s = 0.0;
  double bubble_fraction = 0.0;
  std::int64_t peak_memory_bytes = 0;
  // Of the peak, the model state held all iteration (weights, gradients,
  // optimizer state of the rank's stages); the rest is activations and
  // transient buffers at the moment of the peak.
  std::int64_t model_state_bytes = 0;
  bool oom = false;
  ExposedComm exposed;
};

// Traffic on the links of the simulated part of the cluster. Analytic
// collectives move no bytes on links; flow collectives and transfers do.
struct LinkUse {
  std::string name;
  std::string link_class;  // "nvlink", "nic" or "uplink"
  double bytes = 0.0;
  double utilisation = 0.0;  // bytes / (bandwidth x iteration time)
};
struct LinkClassUse {
  std::string link_class;
  int links_used = 0;
  double bytes = 0.0;
  double mean_utilisation = 0.0;  // over the links that carried traffic
  double busiest_utilisation = 0.0;
};

struct Summary {
  RunInfo info;
  double iteration_time_s = 0.0;
  double tokens_per_s = 0.0;
  double samples_per_s = 0.0;
  double model_tflops_per_gpu = 0.0;
  double mfu = 0.0;
  double hardware_tflops_per_gpu = 0.0;  // counting recomputed FLOPs
  double hfu = 0.0;
  double bubble_fraction = 0.0;  // mean over simulated GPUs
  // The most time one rank spends in data-parallel collectives, two kinds
  // apart: the gradients' (buckets, ZeRO-3's reduce-scatters, the tied
  // embedding's all-reduce, all on the communication stream) and the
  // parameters' all-gathers (ZeRO-1/2: after the optimizer step, on that
  // stream too; ZeRO-3: before each use, on a stream of their own).
  double grad_all_reduce_s = 0.0;
  double param_all_gather_s = 0.0;
  bool param_gather_stream = false;  // the gathers had a stream of their own (ZeRO-3)
  bool shard_queue = false;          // ZeRO-3's gathers and scatters queued on one group (Simulation::shard_queue)
  ExposedComm exposed;             // the most over ranks, kind by kind
  std::vector<StageSummary> stages;
  std::int64_t peak_memory_bytes = 0;      // the tensors' peak on the fullest GPU
  std::int64_t memory_capacity_bytes = 0;  // the GPU's memory
  std::int64_t cuda_context_bytes = 0;     // held outside the tensors; OOM when peak + this > capacity
  bool oom = false;
  std::vector<LinkClassUse> link_classes;  // nvlink, nic, uplink
  std::vector<LinkUse> busiest_links;      // the five busiest, busiest first
  bool flow_collectives = false;           // collectives' bytes counted on the links (else point-to-point only)
  std::uint64_t events = 0;
  std::size_t tasks = 0;
  int simulated_gpus = 0;
  std::string fidelity;  // "symmetric", "full", or "full (placement not uniform)"
  int slowest_gpu = 0;  // the GPU with the most compute time
  std::optional<BurstStats> burst;  // a layer-table model (report/burst_stats.hpp)
};

// What summarize works out: everything, or (kTotals) only the figures a
// sweep ranks plans by (iteration time, throughput, MFU, bubble fraction,
// peak memory, out of memory), leaving out the exposed communication and
// the links, which cost a sort of every GPU's busy time.
enum class Detail { kFull, kTotals };
Summary summarize(const lower::Simulation& sim, const RunInfo& info, Detail detail = Detail::kFull);
nlohmann::json to_json(const Summary& s);
std::string to_text(const Summary& s);

}  // namespace trainsim::report
