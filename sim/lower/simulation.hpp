// Lowering: a checked Program plus stage costs plus hardware becomes a task
// graph over resources (a compute and a communication stream per pipeline
// rank, a flow network for point-to-point transfers, a memory pool per GPU),
// ready for the engine.
//
// One pipeline is simulated: tensor-parallel peers and data-parallel replicas
// of a homogeneous cluster run the same program, so rank r stands for every GPU
// of stage r, and the collectives they share are costed for the whole group.
#pragma once

#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "core/task_graph.hpp"
#include "hw/cluster_spec.hpp"
#include "hw/flow_network.hpp"
#include "hw/memory_pool.hpp"
#include "hw/stream.hpp"
#include "schedule/action.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::lower {

enum class TaskKind { kCompute, kTransfer, kGradAllReduce, kOptimizer };
enum class StreamKind { kCompute = 0, kComm = 1 };
inline constexpr int kStreamsPerRank = 2;

struct TaskInfo {
  TaskKind kind = TaskKind::kCompute;
  schedule::Action action;  // compute: the action; transfer: the action that produced the data
  int rank = 0;             // the rank that runs it (the sender, for a transfer)
  int peer = -1;            // transfer: the receiving rank
  bool gradient = false;    // transfer: a gradient (backward) rather than an activation
};

struct Simulation {
  core::TaskGraph graph;
  std::vector<TaskInfo> info;
  std::vector<std::unique_ptr<hw::Stream>> streams;  // rank * kStreamsPerRank + StreamKind
  hw::FlowNetwork network;
  hw::MemoryTracker memory;  // pool r belongs to rank r's GPU
  std::vector<int> gpu_of_rank;
  core::Timeline timeline;  // filled by run()

  const hw::Stream& stream(int rank, StreamKind kind) const {
    return *streams[static_cast<std::size_t>(rank) * kStreamsPerRank + static_cast<int>(kind)];
  }
};

// `program` must have passed schedule::check.
std::unique_ptr<Simulation> lower(const schedule::Program& program, const schedule::Shape& shape,
                                  const workload::StageCosts& costs, const hw::ClusterSpec& cluster,
                                  const std::vector<int>& gpu_of_rank);

// Runs the engine over a lowered simulation and stores its timeline.
void run(Simulation& sim);

}  // namespace trainsim::lower
