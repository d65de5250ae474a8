// The burst planner: how many GPUs each layer runs on, data-parallel over the
// layer's own GPUs, to minimise the iteration time without spending more than
// a given multiple of the GPU-time the model needs on one GPU.
//
// Placement: a layer on w GPUs uses GPUs 0 .. w-1 (the sets are nested, so a
// narrow layer's GPUs all hold the wider layers too) and gives GPU j the
// contiguous samples sample_range(batch, w, j). Between two layers whose
// widths differ the samples move, GPU to GPU (activations forward, their
// gradients backward); each layer's weight gradients are all-reduced over its
// own GPUs while the backward of the layers before it runs.
//
// Candidate widths are the divisors of the cluster's GPU count up to the
// global batch (no GPU without samples): 1, 2, 4, 8, 16 on 16 GPUs.
//
// Cost model (picoseconds, exact): with F_i(w) a layer's forward on its
// busiest GPU (ceil(batch / w) samples), B = 2F, X_i(a, b) the time to move
// layer i's output from width a to width b (a flow simulation of those
// transfers alone on the topology, the gradient's way back costed the same),
// and A_i(w) the layer's all-reduce (NCCL's analytic model),
//   time      = sum_i (F_i + B_i) + sum_i 2 X_i(w_i, w_i+1) + backlog_0
//   backlog   the all-reduce work still queued when the backward ends: walking
//             the backward from the last layer, each layer's transfer and
//             backward drain the queue, then its all-reduce joins it:
//             backlog_i = max(0, backlog_i+1 - X_i - B_i) + A_i
//             (GPU 0 is in every layer, so all reductions share its stream)
//   GPU-time  sum_i w_i (F_i + B_i) <= limit x sum_i (F_i(1) + B_i(1)).
// Dynamic programming over the layers, last to first, keeps for each layer
// and width the plans no other beats on all of (time so far, time so far +
// backlog, GPU-time): the final time grows with both the first and the
// backlog, never faster than the backlog, so a plan beaten on all three can
// never finish first. The result is the exact optimum of the cost model.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "hw/cluster_spec.hpp"
#include "workload/layer_table.hpp"

namespace trainsim::workload {

// The samples [first, last) of GPU j among w GPUs: the first batch % w GPUs
// take one more than the rest, so GPU 0 always has the most.
std::pair<int, int> sample_range(int batch, int width, int gpu);

// The moves that take a batch split over `from` GPUs to a split over `to`:
// (sending GPU, receiving GPU, samples), samples staying on a GPU left out.
struct SampleMove {
  int from = 0;
  int to = 0;
  int samples = 0;
};
std::vector<SampleMove> redistribution(int batch, int from, int to);

// Every cost the planner weighs.
struct BurstCosts {
  std::vector<std::string> names;  // layers
  std::vector<int> widths;         // candidate GPU counts, ascending
  // [layer][width index]: forward on the busiest GPU, and the all-reduce.
  std::vector<std::vector<core::Time>> forward;
  std::vector<std::vector<core::Time>> all_reduce;
  // [layer i][from width index][to width index]: layer i's output moving to
  // layer i + 1's GPUs (empty for the last layer).
  std::vector<std::vector<std::vector<core::Time>>> transfer;

  std::size_t layers() const { return forward.size(); }
  int width_index(int gpus) const;  // -1 if not a candidate
};

// The costs of `table` at `global_batch` on `cluster`; compute times are
// multiplied by `compute_scale` (a foreground slowed by a background job).
std::vector<int> candidate_widths(int cluster_gpus, int global_batch);
BurstCosts burst_costs(const LayerTable& table, const hw::ClusterSpec& cluster, int global_batch,
                       double compute_scale = 1.0);

struct BurstLayerPlan {
  int gpus = 1;
  core::Time compute;        // forward + backward on the busiest GPU
  core::Time transfer_in;    // moving the layer's input to its GPUs (one way)
  core::Time all_reduce;
  double amplification = 1.0;  // gpus x compute / compute on one GPU
};

struct BurstPlan {
  std::vector<BurstLayerPlan> layers;
  core::Time predicted;       // the cost model's iteration time
  core::Time exposed_reduce;  // of which all-reduce left after the backward
  double amplification = 1.0;  // GPU-time over one GPU's compute time
};

// The plan of given widths (each a candidate), under the cost model.
// Throws std::invalid_argument for a width that is not a candidate.
BurstPlan evaluate_plan(const BurstCosts& costs, const std::vector<int>& gpus);
// The fastest plan within the amplification limit (>= 1). Ties go to less GPU-time.
BurstPlan plan_burst(const BurstCosts& costs, double amplification_limit);

}  // namespace trainsim::workload
