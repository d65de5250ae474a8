// A what-if, fully resolved: the cluster, the model, the plan and the options.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "schedule/schedule.hpp"
#include "workload/burst_spec.hpp"
#include "workload/layer_table.hpp"
#include "workload/plan.hpp"
#include "workload/transformer.hpp"

namespace trainsim::config {

struct Options {
  // Exit with an error when a GPU runs out of memory, instead of reporting it.
  bool strict_memory = false;
  // Simulate every GPU, not one per pipeline stage (see lower/simulation.hpp).
  bool full_fidelity = false;
  // Run collectives as flows on the topology, not as their analytic time.
  bool flow_collectives = false;
  // How collectives run: what NCCL would choose, or a forced algorithm.
  hw::CollectiveAlgorithm collective_algorithm = hw::CollectiveAlgorithm::kAuto;
  // Full fidelity only: stragglers (gpu, speed factor) and link faults.
  struct GpuSpeed {
    int gpu = 0;
    double factor = 1.0;
  };
  struct LinkFault {
    std::string where;  // "options.links[i]"
    std::string link;
    double bandwidth_factor = 1.0;
    bool failed = false;
  };
  std::vector<GpuSpeed> gpu_speed;
  std::vector<LinkFault> links;
  // Compute slows by this fraction while a data-parallel collective runs on the GPU.
  double comm_slowdown = 0.0;
  bool comm_slowdown_given = false;  // false: a transformer's default (see driver/whatif.cpp)
  // A rank's compute waits for each pipeline send it made to arrive
  // (Megatron-LM before overlapped p2p, DeepSpeed's pipeline engine).
  bool blocking_sends = false;
  // About 400 MB with CUDA 11.7 or later and lazy module loading, PyTorch's
  // default since 1.13 (pytorch/pytorch issue 109888, NVIDIA's ptrblck: 'the
  // CUDA context ... uses around 400MB if CUDA >= 11.7 is used and lazy module
  // loading enabled'; PR 86509 measured 287 MB in use with lazy loading
  // against 667 MB without).
  static constexpr double kDefaultCudaContextMib = 400.0;
  // Device memory each GPU's process holds outside its tensors: the CUDA
  // context with the kernels it has loaded (options.cuda_context_mib). The
  // capacity check counts it; the reported peak (what PyTorch's
  // max_memory_allocated would say) does not.
  double cuda_context_bytes = kDefaultCudaContextMib * 1048576.0;
};

struct Scenario {
  std::string file;  // where it was read from, for messages
  // Every other file the config made trainsim read (a model or node given
  // as a .json path, a calibration profile, a CSV schedule): outputs must
  // not replace them.
  std::vector<std::string> input_files;
  hw::ClusterSpec cluster;
  workload::TransformerSpec model;
  workload::Plan plan;
  Options options;
  // The schedule read from a file when plan.schedule is "csv:PATH"; null when
  // plan.schedule names a registered plugin.
  std::shared_ptr<const schedule::Schedule> csv_schedule;
  // model.arch = "layers": a per-layer table (a CNN), run data-parallel on
  // every GPU or with parallel.schedule = "burst"; `model` then holds only
  // its name.
  std::optional<workload::LayerTable> layer_model;
  workload::BurstSpec burst;  // parallel.burst
};

}  // namespace trainsim::config
