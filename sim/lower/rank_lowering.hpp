// One pipeline rank's actions lowered into tasks (lower_pipeline.cpp and,
// for compute actions, lower_compute.cpp): what a copy of the pipeline
// names its collectives by (PipelineKeys), and the rank's groups, queues and
// bookkeeping while its actions become tasks in order (RankLowering).
// Private to the lowering.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "lower/gather_prefetch.hpp"
#include "lower/issue_queue.hpp"
#include "lower/lowering.hpp"

namespace trainsim::lower::detail {

// A copy of the pipeline's keys: how many tasks join each kind of collective
// (every member in full fidelity, one in symmetric) and which instance of a
// group its GPUs' collectives name.
struct Lowering::PipelineKeys {
  PipelineKeys(const Lowering& lowering, int pipeline);

  int p;                 // the copy
  const Pipeline& pipe;  // its replica and tensor rank
  int R;                 // its ranks
  bool full;             // every GPU simulated
  int dp_participants, shard_participants, replica_participants;
  // Names a ZeRO-3 collective instance: the group's index in full fidelity.
  int shard_key, replica_key;
  // Whether MoE stages reduce and gather their routed experts' share over
  // an expert-data-parallel group of more than one GPU, and which group
  // (named by edp_index in full fidelity) this pipeline's GPUs are in.
  bool experts_replicated;
  int edp, edp_key, edp_participants;
  // ZeRO-3: the GPUs a unit's experts shard over (under HSDP the edp
  // group's part inside this GPU's shard group) and, under HSDP, the copies
  // of this GPU's expert shard across the shard groups.
  int expert_m;
  bool experts_sharded;
  int edp_place_of_gpu, expert_chunk, expert_place;
  int expert_shard_key, expert_replica_key, expert_shard_participants;
  // Flow collectives: MoE layers' dispatch and combine over the
  // expert-parallel group (or the expert-tensor group), as tasks.
  bool ep_flows;
  int ep_id, etp_id, ep_key, etp_key, ep_participants, etp_participants;
};

class Lowering::RankLowering : private Lowering::PipelineKeys {
 public:
  RankLowering(Lowering& lowering, const PipelineKeys& keys, int rank);
  // Every action of the rank in program order, then the queues' chains.
  void run();

 private:
  enum Kind {
    kBucket, kEmbedding, kGather, kBarrier, kParamGather, kGradScatter, kGradReplicate, kCopyGrads, kParamRegather,
    kBucketExperts, kGatherExperts, kParamGatherExperts, kEpExchange, kUnitGatherExperts, kGradScatterExperts,
    kGradReplicateExperts
  };
  // The first task of a collective and the last (where it runs as two).
  struct Tasks {
    core::TaskId first, last;
  };
  // ZeRO-3 by unit (workload::ShardUnit): per stage of this rank and unit,
  // its gather while the unit is held (from UNSHARD to RESHARD) and the
  // last compute part that used it.
  struct Held {
    std::optional<core::TaskId> gather;
    std::size_t index = 0;  // into `prefetch`
    std::optional<core::TaskId> last_use;
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::size_t kNoItem = GatherPrefetch::kNoItem;

  // A compute action (the action at index k of the rank's program), in
  // lower_compute.cpp as the three after it.
  void compute(std::size_t k);
  // The pieces (Lowering::pieces_, emptied first by the caller) a compute
  // action of `duration` runs as, each a share of its time: one per ZeRO-3
  // unit (`by_unit`: forward in order, backward in reverse), each after its
  // unit's gather; a stage's last backward one per gradient bucket
  // (`split`), its pieces after the first as a bucket train where a sweep
  // merges them; a stage's first forward one per parameter bucket, each
  // after its own gather (`by_bucket_gather`); else the whole action; then,
  // with flow collectives, cut again at each MoE layer's exchanges
  // (`ep_tasks`).
  void cut_into_pieces(std::size_t k, core::Time duration, bool by_unit, bool split, bool by_bucket_gather,
                       bool ep_tasks);
  // ZeRO-3: a backward's units' gradients to their owners (reduce-scatter,
  // and under HSDP the all-reduce across the shard groups), after the pieces
  // they are ready after (`by_unit`: the action was cut by unit).
  void scatter_unit_grads(std::size_t k, bool by_unit, bool first_of_stage, bool last_of_stage);
  // Full fidelity with tp > 1: the tensor peers meet after each compute
  // action (they all-reduce inside it), so that none runs ahead.
  void tp_barrier(std::size_t k);
  // The other kinds of action (lower_pipeline.cpp).
  void unshard(std::size_t k);
  void reshard(std::size_t k);
  void send(std::size_t k);
  void reduce_grad(std::size_t k);
  void optimizer(std::size_t k);

  // A stage's data-parallel collective (a gradient bucket's reduction, a
  // parameter gather) of `bytes` in all, `whole` its analytic time: on a
  // MoE stage whose experts have replicas, the dense parameters' share
  // over dp, then the routed experts' share over their
  // expert-data-parallel group (its time `experts_time`, StageCost's
  // *_experts), two tasks one after the other on `stream`; elsewhere one
  // task over dp, of the dense share where the experts have no replicas.
  // A copy to the host inside `whole` (offloading: `host_copy`) follows the
  // last's data as flows.
  Tasks dp_collectives(std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes,
                       core::Time whole, std::optional<core::Time> experts_time, const TaskInfo& info,
                       CommStream stream, core::Time host_copy = core::Time::zero());
  // ZeRO-3's collective of a unit (its gather or its gradients' scatter) of
  // `bytes` in all, `whole` its analytic time: with flow collectives a MoE
  // unit's routed experts' share (`expert_bytes`, its time `experts_time`)
  // runs over the expert-data-parallel group after the rest over the
  // sharding group, two tasks one after the other; none where the experts
  // have no replicas. The second is another group's: the caller queues it
  // on that group's queue (expert_queue), at the point the host issues the
  // first (one group's collectives run one at a time, in the order issued:
  // lower/issue_queue.hpp). Elsewhere one task of the whole time.
  Tasks unit_collectives(std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes,
                         core::Time whole, double expert_bytes, core::Time experts_time, const TaskInfo& info,
                         CommStream stream, core::Time host_copy);
  // A unit collective's experts' part, queued as the host issues its first.
  std::size_t queue_experts(IssueQueue& on, const Tasks& t, std::size_t point, IssueHook hook);
  // The rank's compute tasks issued so far.
  std::size_t issued() const;
  std::vector<Held>& units_held(int stage, std::size_t units);

  Lowering& lw;
  const int r;  // the pipeline rank
  const int q;  // its simulated GPU
  const std::vector<Action>& actions;
  // By stage (kNone where the rank has none): the index of its last and
  // first backward-ending action and of its first forward.
  std::vector<std::size_t> last_backward, first_forward, first_backward;
  std::optional<std::size_t> last_compute;  // the rank's last compute action
  const std::vector<int> partner;           // Overlap::moe_a2a's pairs (a2a_pairs.hpp)
  // Overlap::grad_reduce off: the reductions wait for the rank's whole backward.
  std::vector<core::TaskId> after_backward;
  std::vector<std::vector<core::TaskId>> backward_parts;
  // Per stage: its bucket train's number in sim_->trains plus one, or 0 (merges_bucket_train).
  std::vector<std::size_t> train_of_stage;
  // The rank's groups.
  const std::vector<std::vector<int>> peers_groups;
  const std::vector<int> group;
  const std::vector<int> shard_group;
  const std::vector<std::vector<int>> shard_copies;
  const bool replicated;  // HSDP
  const std::vector<int> replica_group;
  const std::vector<std::vector<int>> replica_copies;
  const RankGroup dp, shard, replica;
  const std::vector<int> expert_group;
  const std::vector<std::vector<int>> expert_copies;
  const RankGroup experts;
  const bool expert_hsdp;
  const std::vector<int> expert_shard_members;
  const std::vector<std::vector<int>> expert_shard_copies;
  const std::vector<int> expert_replica_members;
  const std::vector<std::vector<int>> expert_replica_copies;
  const RankGroup hsdp_expert_shards;
  const RankGroup& expert_shards;  // one group where it is edp's
  const RankGroup expert_replicas;
  const std::vector<int> ep_members, etp_members;
  const std::vector<std::vector<int>> ep_copies, etp_copies;
  const RankGroup ep_rank_group, etp_rank_group;
  int ep_exchanges = 0;  // names each exchange's collective
  // The exchange the rank's next compute piece waits for: the last after
  // the piece before it, in its action or (a forward's final combine) the
  // one before; the exchanges block the compute stream.
  std::optional<core::TaskId> after_exchange;
  std::optional<core::TaskId> barrier;  // the tensor peers' meeting after the previous compute action
  std::vector<core::TaskId> unsent;     // options.blocking_sends: sends the next compute action waits for
  std::vector<std::vector<Held>> held;  // by stage
  // ZeRO-3's gathers and scatters on the sharding group's one queue
  // (IssueQueue), in the order the host issues them; unless the plan gives
  // the scatters a group of their own (Simulation::shard_queue false),
  // when the gathers queue on a stream of their own and the scatters on the
  // communication stream.
  const bool one_queue;
  IssueQueue& queue;
  // The experts' parts (unit_collectives) on their group's queue; with the
  // scatters on a group of their own, the experts' scatters on another.
  IssueQueue& expert_queue;
  IssueQueue& expert_scatter_queue;
  // The rank's gathers in issue order, each waiting for an earlier one's
  // first use as the plan's prefetch rules say (FSDP's depth, DeepSpeed's
  // prefetch bucket and live-parameter limit).
  GatherPrefetch prefetch;
  int scatters = 0;   // names each gradient scatter's collective
  int regathers = 0;  // and each second gather after a recomputation
};

}  // namespace trainsim::lower::detail
