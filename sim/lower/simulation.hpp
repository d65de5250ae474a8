// Lowering: a checked Program plus stage costs plus hardware becomes a task
// graph over resources (a compute stream per simulated GPU, a flow network for
// point-to-point transfers, a collective runner, a memory pool per GPU), ready
// for the engine.
//
// What each action becomes, on every simulated copy of the pipeline:
//   F, B, I, W     a task on the GPU's compute stream, in program order; a
//                  stage's last backward is cut into one part per gradient bucket
//   SEND_F/SEND_B  a transfer on the network; transfers between one pair of
//                  GPUs go first-in first-out, as on an NCCL stream; the
//                  compute stream does not wait for them
//   RECV_F/RECV_B  nothing of its own: the consumer waits for the transfer
//   REDUCE_GRAD    one collective per gradient bucket over the stage's
//                  data-parallel group, each starting when its part of the
//                  backward ends (then, for a stage holding a tied embedding,
//                  its all-reduce with the other end of the pipeline)
//   OPTIMIZER      the optimizer step of the GPU's stages, on the compute
//                  stream (then, under ZeRO-1/2, the parameter all-gather)
// A GPU's collectives run one after another, as on one NCCL stream.
//
// Fidelity: `symmetric` simulates one pipeline (tensor rank 0 of replica 0):
// the other replicas and tensor peers of a homogeneous cluster run the same
// program, and the collectives are costed for the whole group. `full`
// simulates every GPU: every replica and tensor rank runs its own pipeline,
// collectives wait for all their members, and tensor peers meet after every
// compute action (they all-reduce inside it). When the placement is not
// uniform (see placement_is_uniform in lowering.hpp), or the network is a custom
// one (no structure says that the copies' paths look alike), or, with flow
// collectives, a MoE model's expert groups of one kind sit on the nodes
// unlike (expert_groups_alike), symmetric falls back to full.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "core/task_graph.hpp"
#include "hw/cluster_spec.hpp"
#include "hw/collective_runner.hpp"
#include "hw/flow_network.hpp"
#include "hw/memory_pool.hpp"
#include "hw/stream.hpp"
#include "hw/topology.hpp"
#include "lower/wiring.hpp"
#include "lower/work_limits.hpp"
#include "schedule/action.hpp"
#include "schedule/check.hpp"
#include "workload/plan.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::lower {

enum class Fidelity { kSymmetric, kFull };
enum class CollectiveModel {
  kAnalytic,  // each collective takes NCCL's modelled time, alone
  kFlow,      // each collective's algorithm runs as flows on the topology
};

// A GPU that computes at `factor` times the others' speed (a straggler at 0.8).
struct GpuSpeed {
  int gpu = 0;
  double factor = 1.0;
};
// A degraded (bandwidth times `factor`) or failed link, by Topology name.
struct LinkFault {
  std::string where;  // where the user gave it, for messages (e.g. "options.links[0]")
  std::string link;
  double factor = 1.0;
  bool failed = false;
};

struct Options {
  Fidelity fidelity = Fidelity::kSymmetric;
  CollectiveModel collectives = CollectiveModel::kAnalytic;
  // How flow collectives run (analytic ones take the stage costs' times,
  // which should be costed with the same algorithm).
  hw::CollectiveAlgorithm collective_algorithm = hw::CollectiveAlgorithm::kAuto;
  bool record_link_rates = false;  // keep each link's rate over time (for the trace)
  std::vector<GpuSpeed> gpu_speed;   // full fidelity only
  std::vector<LinkFault> link_faults;  // full fidelity only
  // While a data-parallel collective runs on a GPU, its compute takes this
  // much longer (0.1: 10% longer); 0 for no interference.
  double comm_slowdown = 0.0;
  // Each compute action waits for the pipeline sends its rank made before it
  // to arrive: a send blocks the compute stream, as Megatron-LM's p2p of
  // 2021-2023 did (batch_isend_irecv, wait, torch.cuda.synchronize()).
  bool blocking_sends = false;
  // Device memory held outside tensors on every GPU (the CUDA context): the
  // memory pools get what is left of the GPU's capacity.
  std::int64_t cuda_context_bytes = 0;
  // A stage's gradient buckets, reduced as its last backward produces them
  // (options.overlap_grad_reduce), run as a train (hw/bucket_train.hpp): the
  // backward's pieces after the first as one task, the reductions as one
  // collective, with the times of a task per bucket; where a train's premise
  // fails as it runs, hw::TrainBroken (driver::simulate lowers again without
  // trains). For a sweep, which reads the times and the memory but never
  // shows each bucket: a trace would show one reduction where there were
  // many, and Summary::grad_all_reduce_s the collective's span, not the sum.
  bool merge_bucket_trains = false;
  // Off: the GPUs' memory pools keep their peaks but no timeline (for a
  // caller that shows none, as a sweep; a trace draws it).
  bool memory_timelines = true;
  // Off: each task keeps a TaskBrief, what the summary's totals read, in
  // place of its TaskInfo (for a caller that shows no task, as a sweep:
  // 8 bytes a task written, not 48).
  bool task_info = true;
  // Work past these is refused before it is built (WorkTooLarge); none by default.
  WorkLimits limits;
  // (copies of the pipeline lowered, copies in all), after each copy: for a
  // progress line while a large full-fidelity run is built.
  std::function<void(std::size_t, std::size_t)> progress;
};

// What a GPU's tensors may use: its memory less the CUDA context.
std::int64_t tensor_capacity_bytes(const hw::GpuSpec& gpu, std::int64_t cuda_context_bytes);

// kEpExchange: a MoE layer's dispatch or combine as a collective of its own
// (options.collectives "flow"), blocking the compute stream; elsewhere they
// run inside the compute tasks (CommInside::ep_s).
enum class TaskKind : std::uint8_t {
  kCompute, kTransfer, kGradReduce, kEmbeddingAllReduce, kOptimizer, kParamAllGather, kTpBarrier, kEpExchange
};

// Communication inside a compute task (it blocks the compute stream), its
// part's share of its action's: for the trace and the summary's exposed times.
struct CommInside {
  double tp_s = 0.0;  // the tensor-parallel collectives
  double cp_s = 0.0;  // the context-parallel exchange not hidden behind attention
  double ep_s = 0.0;  // a MoE model's dispatch and combine
};

struct TaskInfo {
  TaskKind kind = TaskKind::kCompute;
  schedule::Action action;  // the action the task comes from
  int rank = 0;             // the simulated GPU (index into gpu_of_rank) that runs it; the sender of a transfer
  int peer = -1;            // transfer: the receiving simulated GPU
  int part = 0;             // a compute action cut by gradient bucket, or a bucket's reduction:
  int parts = 1;            //   which piece of how many
  // ZeRO-3 by unit (workload::ShardUnit): the unit a compute part, a gather
  // or a gradient scatter is of, and the stage's units; -1 and 0 otherwise.
  int unit = -1;
  int units = 0;
  // The flags below take a bit each (TaskInfo's size, below).
  // HSDP: a unit's gradient shard all-reduced across the shard groups (a
  // kGradReduce after that unit's reduce-scatter).
  bool across_shard_groups : 1 = false;
  // DualPipe: a stage's reduced gradients added to its copy's in the other
  // direction (a kGradReduce after the stage's buckets).
  bool across_copies : 1 = false;
  // ZeRO-3 with Plan::fsdp_copy_out: a compute task that copies a unit's
  // gathered parameters out of the gather's buffer before the unit runs.
  bool copy_out : 1 = false;
  // DeepSpeed's second gather of a recomputed unit's weights before its
  // backward (a kParamAllGather on no stream's queue; workload/zero3_reuse.hpp).
  bool regather : 1 = false;
  // A MoE stage's gradient bucket or parameter gather, the routed experts'
  // part: over the expert-data-parallel group, after the dense part over dp.
  bool experts : 1 = false;
  // kEpExchange: a dispatch (on the tokens' way to the experts), else a
  // combine; the MoE layer is `part` of `parts`.
  bool dispatch : 1 = false;
  // kEpExchange: over the expert-tensor-parallel group, else the expert-parallel one.
  bool over_etp : 1 = false;
  // Compute: a piece of no time that stands for its action's start where the
  // action's first exchanges come before any of its compute (flow
  // collectives: a MoE backward's first combine). It waits for what the
  // action waits for and the exchanges wait for it; no part of the compute
  // (part 0 of the other parts' count), the trace leaves it out.
  bool entry : 1 = false;
  // Compute: where its CommInside sits in Simulation::comm_inside, kNoComm
  // when nothing runs inside it. Out of line: the values repeat (every copy
  // of the pipeline and micro-batch of an action has the same), and a
  // full-fidelity run keeps one TaskInfo for each of tens of millions of tasks.
  static constexpr std::uint32_t kNoComm = 0xFFFFFFFFu;
  std::uint32_t comm = kNoComm;
  // ZeRO-3's gathers before each use run on a stream of their own (UNSHARD);
  // ZeRO-1/2's after the optimizer step run on the communication stream.
  bool on_gather_stream() const { return kind == TaskKind::kParamAllGather && action.op == schedule::Op::kUnshard; }
};
// 48 bytes: with 144 bytes a task in all (lower/work_limits.cpp), a task's
// info is the largest part of a large run's memory.
static_assert(sizeof(TaskInfo) <= 48, "TaskInfo grew: update the work estimate's bytes per task");

// What report::summarize's totals read of a task (Detail::kTotals), where
// the lowering keeps no TaskInfo (Options::task_info off).
struct TaskBrief {
  TaskKind kind = TaskKind::kCompute;
  bool regather = false;      // TaskInfo::regather
  bool gather_stream = false;  // TaskInfo::on_gather_stream()
  int rank = 0;               // TaskInfo::rank
};
static_assert(sizeof(TaskBrief) == 8);
inline TaskBrief brief_of(const TaskInfo& ti) { return {ti.kind, ti.regather, ti.on_gather_stream(), ti.rank}; }

// (A field added here is copied in lower::copy_unrun, shared_lowering.cpp.)
struct Simulation {
  int pipelines = 1;       // simulated copies of the pipeline
  bool every_gpu = false;  // full fidelity, asked or fallen back to (one pipeline may be every GPU)
  WorkEstimate estimate;   // the work foreseen before building (checked against Options::limits)
  bool fell_back_to_full = false;  // symmetric was asked, but could not stand for the cluster:
  std::string fell_back_because;   //   "placement not uniform", "custom network", "expert groups laid out
                                   //   unlike" or "shard groups laid out unlike"
  int pipeline_ranks = 1;  // ranks per pipeline; simulated GPU q is rank q % pipeline_ranks
  bool blocking_sends = false;  // Options::blocking_sends: a send holds its sender's compute too
  // ZeRO-3's gathers, second gathers and reduce-scatters share the sharding
  // group's one queue (lower/issue_queue.hpp); false without ZeRO-3 or with
  // parallel.fsdp_reduce_scatter_group = "separate".
  bool shard_queue = false;
  // HSDP (parallel.fsdp_shard_size below dp): ZeRO-3's gathers and
  // reduce-scatters run over a shard group, not over all of dp.
  bool shard_groups = false;
  bool flow_collectives = false;  // Options::collectives is kFlow: collectives' bytes cross the links
  std::int64_t gpu_memory_bytes = 0;    // one GPU's memory
  std::int64_t cuda_context_bytes = 0;  // Options::cuda_context_bytes; each pool gets the rest of the memory
  double comm_slowdown = 0.0;           // Options::comm_slowdown (`interference` made from it)
  core::TaskGraph graph;
  std::vector<TaskInfo> info;    // by task; empty where Options::task_info is off
  std::vector<TaskBrief> brief;  // by task where Options::task_info is off; else empty
  std::vector<CommInside> comm_inside;  // TaskInfo::comm's table
  // The communication inside a task (zeros for none).
  CommInside comm_in(const TaskInfo& ti) const {
    return ti.comm == TaskInfo::kNoComm ? CommInside{} : comm_inside[ti.comm];
  }
  std::vector<std::unique_ptr<hw::Stream>> streams;  // the compute stream of each simulated GPU
  hw::FlowNetwork network;
  std::unique_ptr<hw::Topology> topology;
  std::unique_ptr<hw::CollectiveRunner> collectives;
  std::unique_ptr<hw::CollectiveListener> interference;  // slows compute beside collectives
  // Options::merge_bucket_trains: the trains a stream's task and a
  // collective stand for (hw/bucket_train.hpp).
  std::vector<hw::BucketTrain> trains;
  hw::MemoryTracker memory;  // pool q belongs to simulated GPU q
  // Activations offloaded to the host (Plan::offload_modules): a task whose
  // end sends bytes there (> 0: a forward's last piece) or whose start takes
  // them back (< 0: a backward's first); for the host memory in reports.
  struct HostOffload {
    core::TaskId task = 0;
    std::int64_t bytes = 0;
    int rank = 0;  // the simulated GPU whose activations they are
  };
  std::vector<HostOffload> host_offloads;
  std::vector<int> gpu_of_rank;  // simulated GPU -> GPU id in the cluster
  // Per simulated copy of the pipeline, the data-parallel replica and tensor
  // rank its GPUs hold (symmetric fidelity: one copy, {0, 0}, standing for
  // the rest), and per stage its transformer layers: for reports. Both empty
  // for burst parallelism.
  struct Coordinates {
    int replica = 0;
    int tensor = 0;
  };
  std::vector<Coordinates> pipeline_coordinates;
  std::vector<int> stage_layers;
  // A MoE model's stages (empty for a dense one), for the trace's dispatch
  // and combine slices (report/ep_slices.hpp): each pass's chunks, its MoE
  // layers, its I alone; and whether options.moe_a2a_overlap paired
  // forwards with backwards (lower/a2a_pairs.hpp).
  struct EpStage {
    workload::StageCost::EpChunks forward, backward;
    int moe_layers = 0;
    double input_grad_s = 0.0;
  };
  std::vector<EpStage> ep_stages;
  bool a2a_overlap = false;
  double a2a_slowdown = 0.0;  // Overlap::compute_slowdown, where a2a_overlap
  core::Timeline timeline;       // filled by run()
  // Burst parallelism (lower/burst.hpp): the layers' names, for stage labels,
  // and per simulated GPU the spans its compute stream left to a background
  // job. Both empty for a pipeline.
  std::vector<std::string> stage_names;
  std::vector<std::vector<std::pair<core::Time, core::Time>>> background;

  int pipeline_rank(int q) const { return q % pipeline_ranks; }
  // Burst parallelism (lower/burst.hpp) rather than a pipeline: its stages are named layers.
  bool burst() const { return !stage_names.empty(); }
  // Where simulated GPU q sits in the plan; {0, 0} for burst parallelism.
  Coordinates coordinates(int q) const {
    const auto copy = static_cast<std::size_t>(q / pipeline_ranks);
    return copy < pipeline_coordinates.size() ? pipeline_coordinates[copy] : Coordinates{};
  }
};

// `program` must have passed schedule::check, and `wiring` be
// wire(program, shape, the dependencies check gave). Throws
// std::invalid_argument for a fault naming no link, or asked of symmetric
// fidelity; std::runtime_error when failed links leave two GPUs apart;
// WorkTooLarge, before building anything, when the work exceeds
// options.limits.
std::unique_ptr<Simulation> lower(const schedule::Program& program, const schedule::Shape& shape,
                                  const Wiring& wiring, const workload::StageCosts& costs,
                                  const hw::ClusterSpec& cluster, const workload::Plan& plan, const Options& options = {});

// Degrades or fails the named links; throws std::invalid_argument naming the
// fault's config path when no built link has that name.
void apply_link_faults(hw::Topology& topology, const std::vector<LinkFault>& faults);

// Runs the engine over a lowered simulation and stores its timeline;
// `observer`, if given, also sees every task start and end; `progress`, if
// given, hears (tasks finished, tasks in all) every 1,024 events.
void run(Simulation& sim, core::TaskObserver* observer = nullptr,
         const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace trainsim::lower
