// Lowering: a checked Program plus stage costs plus hardware becomes a task
// graph over resources (a compute and a communication stream per pipeline
// rank, a flow network for point-to-point transfers, a memory pool per GPU),
// ready for the engine.
//
// What each action becomes:
//   F, B, I, W     a task on the rank's compute stream, in program order; a
//                  stage's last backward is cut into one part per gradient bucket
//   SEND_F/SEND_B  a transfer on the network; transfers between one pair of
//                  ranks go first-in first-out, as on an NCCL stream; the
//                  compute stream does not wait for them
//   RECV_F/RECV_B  nothing of its own: the consumer waits for the transfer
//   REDUCE_GRAD    the stage's gradient reduction across data-parallel replicas,
//                  one collective per bucket on the communication stream, each
//                  starting when its part of the backward ends (then, for a stage
//                  holding a tied embedding, its all-reduce with the other end
//                  of the pipeline)
//   OPTIMIZER      the optimizer step of the rank's stages, on the compute
//                  stream (then, under ZeRO-1/2, the parameter all-gather)
//
// One pipeline is simulated: tensor-parallel peers and data-parallel replicas
// of a homogeneous cluster run the same program, so rank r stands for every GPU
// of its stages, and the collectives they share are costed for the whole group.
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

enum class TaskKind { kCompute, kTransfer, kGradReduce, kEmbeddingAllReduce, kOptimizer, kParamAllGather };
enum class StreamKind { kCompute = 0, kComm = 1 };
inline constexpr int kStreamsPerRank = 2;

struct TaskInfo {
  TaskKind kind = TaskKind::kCompute;
  schedule::Action action;  // the action the task comes from
  int rank = 0;             // the rank that runs it (the sender, for a transfer)
  int peer = -1;            // transfer: the receiving rank
  int part = 0;             // a compute action cut by gradient bucket, or a bucket's reduction:
  int parts = 1;            //   which piece of how many
};

struct Simulation {
  core::TaskGraph graph;
  std::vector<TaskInfo> info;
  std::vector<std::unique_ptr<hw::Stream>> streams;  // rank * kStreamsPerRank + StreamKind
  hw::FlowNetwork network;
  hw::MemoryTracker memory;  // pool r belongs to rank r's GPU
  std::vector<int> gpu_of_rank;
  core::Timeline timeline;  // filled by run()
};

// `program` must have passed schedule::check.
std::unique_ptr<Simulation> lower(const schedule::Program& program, const schedule::Shape& shape,
                                  const workload::StageCosts& costs, const hw::ClusterSpec& cluster,
                                  const std::vector<int>& gpu_of_rank);

// Runs the engine over a lowered simulation and stores its timeline.
void run(Simulation& sim);

}  // namespace trainsim::lower
