// Lowering of burst parallelism: a layer table and a plan (GPUs per layer)
// become a task graph on every GPU of the cluster.
//
//   compute     each layer's forward and backward on each of its GPUs, for
//               that GPU's samples (workload::sample_range), in order on the
//               GPU's compute stream: all forwards, then the backwards from
//               the last layer to the first
//   transfers   where two consecutive layers' GPU sets differ, the samples
//               move GPU to GPU as flows on the topology: activations forward,
//               their gradients backward (workload::redistribution); a sample
//               that stays on its GPU moves nothing
//   all-reduce  each layer's weight gradients over that layer's GPUs, once
//               their backward of the layer has ended, while the backward of
//               earlier layers runs; a GPU's collectives run one after another,
//               as on one NCCL stream
//
// GPU multiplexing: with a background job, foreground compute is slowed by the
// interference factor, and every moment a GPU's compute stream is idle goes to
// the background job (strict priority: it yields at once when foreground work
// arrives, and never delays it beyond the stated interference). run_burst()
// records those spans in Simulation::background as the engine runs.
//
// Memory: each GPU holds the model state of its layers (16 bytes per
// parameter, mixed-precision Adam, as for transformers) and each layer's
// output for its samples from the layer's forward to its backward.
//
// Not modelled: the optimizer step (it is the same on GPU 0, which holds every
// layer, whatever the plan), data loading, and background work inside a
// foreground kernel that leaves part of the GPU unused.
#pragma once

#include <memory>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "lower/simulation.hpp"
#include "workload/layer_table.hpp"

namespace trainsim::lower {

struct BurstOptions {
  CollectiveModel collectives = CollectiveModel::kAnalytic;
  bool record_link_rates = false;
  std::vector<GpuSpeed> gpu_speed;
  std::vector<LinkFault> link_faults;
  bool background = false;    // a background job fills idle GPU time
  double interference = 0.0;  // foreground compute takes 1 + this as long (with a background job)
  std::int64_t cuda_context_bytes = 0;  // as Options::cuda_context_bytes
  WorkLimits limits;                    // as Options::limits
};

// `layer_gpus[i]` GPUs (at most the cluster's, at most `global_batch`) run
// layer i. Throws std::invalid_argument for a fault naming no link;
// hw::NoRoute when failed links leave two GPUs apart; WorkTooLarge, before
// building anything, past options.limits.
std::unique_ptr<Simulation> lower_burst(const workload::LayerTable& table, const std::vector<int>& layer_gpus,
                                        int global_batch, const hw::ClusterSpec& cluster,
                                        const BurstOptions& options = {});

// Runs the engine and stores the timeline; with a background job, also the
// spans each GPU gave to it (from time zero to the end of the iteration).
void run_burst(Simulation& sim, bool background);

}  // namespace trainsim::lower
