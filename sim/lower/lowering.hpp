// The lowering's internal state, shared by the files that build it:
// simulation.cpp (setup, resources, memory), lower_pipeline.cpp and
// lower_compute.cpp (each rank's actions into tasks, rank_lowering.hpp) and
// wiring.cpp (dependencies between ranks, 2BP's concatenated W's). Not part
// of the library's interface.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lower/issue_queue.hpp"
#include "lower/simulation.hpp"
#include "lower/wiring.hpp"
#include "lower/work_limits.hpp"
#include "workload/expert_folding.hpp"

namespace trainsim::lower::detail {

using schedule::Action;
using schedule::Op;

// Slows a GPU's compute stream while collectives of that GPU run.
class Interference final : public hw::CollectiveListener {
 public:
  // The compute's speed while a collective of its GPU runs.
  static double speed_beside_collectives(double slowdown) { return 1.0 / (1.0 + slowdown); }
  Interference(Simulation& sim, double slowdown) : sim_(sim), speed_(speed_beside_collectives(slowdown)) {
    // GPU id -> the simulated streams on it, as a dense table: every member
    // of every collective is looked up at its start and its end.
    int most = 0;
    for (int gpu : sim.gpu_of_rank) most = std::max(most, gpu + 1);
    first_.assign(static_cast<std::size_t>(most) + 1, 0);
    for (int gpu : sim.gpu_of_rank) ++first_[static_cast<std::size_t>(gpu) + 1];
    for (std::size_t g = 1; g < first_.size(); ++g) first_[g] += first_[g - 1];
    streams_.resize(sim.gpu_of_rank.size());
    std::vector<std::size_t> fill(first_.begin(), first_.end() - 1);
    for (std::size_t q = 0; q < sim.gpu_of_rank.size(); ++q) streams_[fill[static_cast<std::size_t>(sim.gpu_of_rank[q])]++] = q;
    running_.assign(sim.gpu_of_rank.size(), 0);
    unknown_.assign(sim.gpu_of_rank.size(), 0);
    last_end_.assign(sim.gpu_of_rank.size(), core::Time::zero());
  }
  // Full speed returns when the last collective of the GPU ends: known
  // while each running one's end is (hw::Stream::set_speed's `back_at`).
  void on_collective(std::uint32_t group, const std::vector<int>& members, bool running, core::Engine& engine,
                     core::Time ends) override {
    const bool known = ends != core::Time::max();
    for (std::size_t q : streams_of(group, members)) {
      running_[q] += running ? 1 : -1;
      if (!known) unknown_[q] += running ? 1 : -1;
      if (running && known) last_end_[q] = std::max(last_end_[q], ends);
      if (running_[q] == 0) last_end_[q] = core::Time::zero();
      const core::Time back_at = unknown_[q] == 0 ? last_end_[q] : core::Time::max();
      sim_.streams[q]->set_speed(running_[q] > 0 ? speed_ : 1.0, engine, back_at);
    }
  }

 private:
  // The simulated streams on a group's GPUs, found once per group: a
  // data-parallel group has every replica's GPU, of which the symmetric
  // fidelity simulates one.
  const std::vector<std::size_t>& streams_of(std::uint32_t group, const std::vector<int>& members) {
    if (group >= known_.size()) {
      known_.resize(group + 1, 0);
      of_group_.resize(group + 1);
    }
    std::vector<std::size_t>& streams = of_group_[group];
    if (known_[group] != 0) return streams;
    known_[group] = 1;
    const std::size_t gpus = first_.size() - 1;
    for (int gpu : members) {
      const auto g = static_cast<std::size_t>(gpu);
      if (g >= gpus) continue;  // a GPU this simulation stands in for
      for (std::size_t k = first_[g]; k < first_[g + 1]; ++k) streams.push_back(streams_[k]);
    }
    return streams;
  }

  Simulation& sim_;
  double speed_;
  std::vector<std::size_t> first_;    // streams of GPU g: streams_[first_[g] .. first_[g + 1])
  std::vector<std::size_t> streams_;
  std::vector<int> running_;
  std::vector<int> unknown_;          // per stream: its running collectives whose end is not known
  std::vector<core::Time> last_end_;  // per stream: the latest end of its running collectives known
  std::vector<char> known_;                          // per group: of_group_ filled
  std::vector<std::vector<std::size_t>> of_group_;  // per group: its simulated streams
};

// A collective group as one rank's lowering knows it: its members and the
// copies that stand beside it (CollectiveRunner::add_group). It is registered
// with the runner the first time a new collective instance over it is made,
// once for all the rank's collectives over it; in full fidelity most tasks
// join an instance another pipeline made and register nothing.
struct RankGroup {
  const std::vector<int>& members;
  const std::vector<std::vector<int>>& copies;
  mutable std::optional<hw::CollectiveRunner::GroupId> id = std::nullopt;
};

// Options::merge_bucket_trains: whether stage `c`'s gradient buckets run as
// a train (hw/bucket_train.hpp) where its last backward is cut by bucket.
bool merges_bucket_train(const Options& o, bool symmetric, bool param_gathers, const workload::StageCost& c);

// Builds the graph of one lowering; kept in one place so the passes can share state.
class Lowering {
 public:
  Lowering(const schedule::Program& program, const schedule::Shape& shape, const Wiring& wiring,
           const workload::StageCosts& costs, const hw::ClusterSpec& cluster, const workload::Plan& plan,
           const Options& options)
      : program_(program), shape_(shape), wiring_(wiring), costs_(costs), cluster_(cluster), plan_(plan),
        options_(options) {}

  std::unique_ptr<Simulation> build();

  // Copies for other stage costs of the same tasks (lower/shared_lowering.hpp).
  // Asked before build(): keep what a copy's values are set from.
  void keep_for_copies() { keeping_ = true; }
  // Whether a fresh lowering with `other` would make the same tasks and
  // differ only in what revalue() sets.
  bool fits(const workload::StageCosts& other) const;
  // Sets, in `copy` (copy_unrun of what build() gave), the compute tasks'
  // durations, the bucket trains and the memory effects from `other`,
  // which must fit.
  void revalue(Simulation& copy, const workload::StageCosts& other) const;

 private:
  struct Pipeline {
    int replica = 0;
    int tensor = 0;
  };

  int gpu(int rank, const Pipeline& p) const { return plan_.gpu_of(rank, p.replica, p.tensor); }
  std::vector<int> dp_group(int rank, int tensor) const {
    std::vector<int> g;
    for (int d = 0; d < plan_.replicas(); ++d) g.push_back(plan_.gpu_of(rank, d, tensor));
    return g;
  }
  // ZeRO-3's data-parallel groups (see workload::Plan::fsdp_shard_size): the
  // shard group of `replica` (consecutive replicas) and its replicate group
  // (the same place in every shard group). Without HSDP the shard group is
  // the whole data-parallel group and there is no replicate group.
  enum class Sharding { kShard, kReplicate };
  std::vector<int> sharding_group(int rank, int tensor, int replica, Sharding kind) const {
    const int shard = plan_.shard_group_size();
    std::vector<int> g;
    if (kind == Sharding::kShard) {
      for (int d = replica / shard * shard; d < (replica / shard + 1) * shard; ++d) g.push_back(plan_.gpu_of(rank, d, tensor));
    } else {
      for (int d = replica % shard; d < plan_.replicas(); d += shard) g.push_back(plan_.gpu_of(rank, d, tensor));
    }
    return g;
  }
  // Which group of its kind `replica` is in: names a shared collective instance.
  int sharding_index(int replica, Sharding kind) const {
    const int shard = plan_.shard_group_size();
    return kind == Sharding::kShard ? replica / shard : replica % shard;
  }
  int sharding_size(Sharding kind) const {
    return kind == Sharding::kShard ? plan_.shard_group_size() : plan_.shard_replicas();
  }
  // Symmetric fidelity with flow collectives: every other group of the kind
  // (each tensor rank's, each shard's) beside the representative's.
  std::vector<std::vector<int>> sharding_copies(int rank, Sharding kind) const {
    std::vector<std::vector<int>> copies;
    if (!symmetric() || options_.collectives != CollectiveModel::kFlow) return copies;
    const int groups = kind == Sharding::kShard ? plan_.shard_replicas() : plan_.shard_group_size();
    const int step = kind == Sharding::kShard ? plan_.shard_group_size() : 1;
    for (int t = 0; t < plan_.tp; ++t) {
      for (int g = 0; g < groups; ++g) {
        if (t || g) copies.push_back(sharding_group(rank, t, g * step, kind));
      }
    }
    return copies;
  }
  core::TaskId add_task(const core::Task& task, const TaskInfo& info) {
    const core::TaskId id = sim_->graph.add(task);
    if (options_.task_info) {
      sim_->info.push_back(info);
    } else {
      sim_->brief.push_back(brief_of(info));
    }
    return id;
  }
  // `inside`: the communication the duration includes (tensor-parallel
  // collectives, context-parallel exchange, MoE dispatch and combine timed
  // inside the compute), which a straggler (options.gpu_speed) does not slow.
  core::TaskId compute_task(int q, core::Time duration, const TaskInfo& info, core::Time inside = core::Time::zero()) {
    core::Task t;
    t.resource = static_cast<core::ResourceId>(q);
    t.duration = stretched(q, duration, inside);
    const core::TaskId id = add_task(t, info);
    compute_order_[q].push_back(id);
    return id;
  }
  // A compute task's duration on simulated GPU q: a straggler's slows all
  // but the communication inside it.
  core::Time stretched(int q, core::Time duration, core::Time inside) const {
    if (slowdown_[q] == 1.0) return duration;
    const core::Time comm = std::min(inside, duration);
    return core::Time::seconds((duration - comm).to_seconds() * slowdown_[q]) + comm;
  }
  // Bucket train number `train` (one more than its index in sim_->trains)
  // on GPU q's compute stream: hw::Stream plays it. No straggler slows it
  // (merges_bucket_train).
  core::TaskId train_task(int q, std::size_t train, const TaskInfo& info) {
    if (slowdown_[q] != 1.0) throw std::logic_error("lower: a bucket train on a straggler's stream");
    core::Task t;
    t.resource = static_cast<core::ResourceId>(q);
    t.route = static_cast<std::uint32_t>(train);
    const core::TaskId id = add_task(t, info);
    compute_order_[q].push_back(id);
    return id;
  }
  // A collective task of simulated GPU q, joining the shared instance `key`,
  // after the GPU's previous one on the same stream: its communication
  // stream, or the stream its parameter gathers run on; or on neither
  // (kUnordered: ordered by its own edges alone).
  // The collective's group as the rank's lowering knows it (RankGroup): it
  // is registered with the runner when a new instance first needs it.
  enum class CommStream { kCollectives, kGathers, kUnordered };
  // `across_share`: CollectiveRunner::add's (DeepEP's all-to-all below 1).
  core::TaskId collective_task(int q, const std::tuple<int, int, int, int, int>& key, hw::CollectiveKind kind,
                               double bytes, const RankGroup& group, int participants, core::Time analytic,
                               const TaskInfo& info, CommStream stream = CommStream::kCollectives,
                               double across_share = 1.0, core::Time host_copy = core::Time::zero());
  bool symmetric() const { return fidelity_ == Fidelity::kSymmetric; }
  // In symmetric fidelity, the pairs of GPUs on pipeline ranks a and b of
  // every other replica and tensor rank, which the simulated pair's exchange
  // stands for (collective_task's `copies`); none in full fidelity. Made once
  // per pair of ranks: every stage's reduction asks for them.
  const std::vector<std::vector<int>>& rank_pair_copies(int a, int b) {
    const auto [it, added] = pair_copies_.try_emplace({a, b});
    std::vector<std::vector<int>>& copies = it->second;
    if (!added || !symmetric()) return copies;
    for (int d = 0; d < plan_.replicas(); ++d) {
      for (int t = 0; t < plan_.tp; ++t) {
        if (d || t) copies.push_back({plan_.gpu_of(a, d, t), plan_.gpu_of(b, d, t)});
      }
    }
    return copies;
  }
  // One pipeline stands for all only if every copy sees the same hardware:
  // each stage's GPUs (tp x dp of them) fill whole nodes, or each stage fits
  // in one node with a NIC per GPU (no NIC shared between stages); and, when
  // up-links are oversubscribed, a stage's nodes line up with the leaves.
  bool placement_is_uniform() const {
    const int per_stage = plan_.tp * plan_.replicas();
    const int per_node = cluster_.node.gpus_per_node;
    const bool whole_nodes = per_stage % per_node == 0;
    const bool within_node = per_node % per_stage == 0 && cluster_.node.nics_per_node == per_node;
    if (!whole_nodes && !within_node) return false;
    // Leaves matter only when their up-links can be a bottleneck.
    if (cluster_.network.kind == hw::NetworkKind::kFlat || cluster_.network.oversubscription <= 1.0 || !whole_nodes) {
      return true;
    }
    const int stage_nodes = per_stage / per_node;
    const int leaf = cluster_.network.nodes_per_leaf;
    return stage_nodes % leaf == 0 || leaf % stage_nodes == 0;
  }
  // HSDP's shard groups sit on the nodes alike, so that one stands for all:
  // each spans whole nodes or lies inside one (fsdp_shard_size 6 on 8-GPU
  // nodes has one group inside a node and the next across two).
  bool shard_groups_alike() const {
    if (plan_.zero_stage != 3 || plan_.shard_replicas() <= 1) return true;
    const int span = plan_.shard_group_size() * plan_.tp, per_node = cluster_.node.gpus_per_node;
    return span % per_node == 0 || per_node % span == 0;
  }
  // A MoE stage's expert groups as Megatron-Core folds them
  // (workload/expert_folding.hpp, the layout the stage costs use): the
  // index of the group of each kind that the GPU at (replica, tensor) is in,
  // and the members of one group; with flow collectives in symmetric
  // fidelity, the stage's other groups of the kind too.
  workload::ExpertFolding folding() const { return {plan_.etp, plan_.ep}; }
  int edp_index(int replica, int tensor) const { return folding().edp_group_of(replica * plan_.tp + tensor); }
  int ep_index(int replica, int tensor) const { return folding().ep_group_of(replica * plan_.tp + tensor); }
  int etp_index(int replica, int tensor) const { return folding().etp_group_of(replica * plan_.tp + tensor); }
  // Group `index`'s GPUs: `size` members, the i-th at stage position member(i).
  template <class Member>
  std::vector<int> stage_gpus(int rank, int size, Member member) const {
    std::vector<int> g;
    for (int i = 0; i < size; ++i) {
      const int j = member(i);
      g.push_back(plan_.gpu_of(rank, j / plan_.tp, j % plan_.tp));
    }
    return g;
  }
  std::vector<int> edp_group(int rank, int index) const {
    return stage_gpus(rank, plan_.expert_replicas(), [&](int i) { return folding().edp_member(index, i); });
  }
  // ZeRO-3 with HSDP (Plan::expert_shard_group_size): edp group `index`'s
  // members inside shard group `chunk` (its members m x chunk .. m x chunk +
  // m - 1), and those at place `place` in each shard group (place, place +
  // m, ...). Which of each the GPU at (replica, tensor) is in.
  std::vector<int> expert_shard_group(int rank, int index, int chunk) const {
    const int m = plan_.expert_shard_group_size();
    return stage_gpus(rank, m, [&](int i) { return folding().edp_member(index, chunk * m + i); });
  }
  std::vector<int> expert_replica_group(int rank, int index, int place) const {
    const int m = plan_.expert_shard_group_size();
    return stage_gpus(rank, plan_.shard_replicas(), [&](int i) { return folding().edp_member(index, place + i * m); });
  }
  int edp_place(int replica, int tensor) const { return (replica * plan_.tp + tensor) / (plan_.etp * plan_.ep); }
  std::vector<int> ep_group(int rank, int index) const {
    return stage_gpus(rank, plan_.ep, [&](int i) { return folding().ep_member(index, i); });
  }
  std::vector<int> etp_group(int rank, int index) const {
    return stage_gpus(rank, plan_.etp, [&](int i) { return folding().etp_member(index, i); });
  }
  // Whether any stage holds routed experts (a MoE model's).
  bool has_experts() const {
    return std::any_of(costs_.stages.begin(), costs_.stages.end(),
                       [](const workload::StageCost& c) { return c.expert_params > 0.0; });
  }
  // Symmetric fidelity with flow collectives runs the first group of each
  // MoE kind and lays the others over it as copies: only right when every
  // group of a kind sits on the nodes alike (ep 6 on 8-GPU nodes has one
  // group inside a node and the next across two). Alike: the same number of
  // members on each of its nodes in turn, on as many NICs.
  bool expert_groups_alike() const {
    auto layout = [&](const std::vector<int>& gpus) {
      std::map<int, std::pair<int, std::vector<int>>> by_node;  // node -> members, their NICs
      for (int g : gpus) {
        auto& [members, nics] = by_node[cluster_.node_of(g)];
        ++members;
        const int nic = cluster_.nic_of(g);
        if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
      }
      std::vector<std::pair<int, std::size_t>> out;
      for (const auto& [n, block] : by_node) out.emplace_back(block.first, block.second.size());
      return out;
    };
    auto alike = [&](int groups, auto group_of) {
      const auto first = layout(group_of(0));
      for (int i = 1; i < groups; ++i) {
        if (layout(group_of(i)) != first) return false;
      }
      return true;
    };
    const int gpus = plan_.replicas() * plan_.tp;
    for (int r = 0; r < shape_.ranks; ++r) {
      if (!alike(gpus / plan_.ep, [&](int i) { return ep_group(r, i); }) ||
          !alike(gpus / plan_.etp, [&](int i) { return etp_group(r, i); }) ||
          !alike(plan_.etp * plan_.ep, [&](int i) { return edp_group(r, i); })) {
        return false;
      }
    }
    return true;
  }
  std::vector<std::vector<int>> expert_group_copies(int rank, int index, bool over_etp) const {
    std::vector<std::vector<int>> copies;
    if (!symmetric() || options_.collectives != CollectiveModel::kFlow) return copies;
    const int groups = plan_.replicas() * plan_.tp / (over_etp ? plan_.etp : plan_.ep);
    for (int i = 0; i < groups; ++i) {
      if (i != index) copies.push_back(over_etp ? etp_group(rank, i) : ep_group(rank, i));
    }
    return copies;
  }
  // Symmetric fidelity with flow collectives: the stage's other edp groups
  // beside the representative's.
  std::vector<std::vector<int>> edp_copies(int rank, int index) const {
    std::vector<std::vector<int>> copies;
    if (!symmetric() || options_.collectives != CollectiveModel::kFlow) return copies;
    for (int i = 0; i < plan_.etp * plan_.ep; ++i) {
      if (i != index) copies.push_back(edp_group(rank, i));
    }
    return copies;
  }
  // The same for the HSDP groups of the experts: every other edp group's
  // shard groups (kShard), or places (kReplicate).
  std::vector<std::vector<int>> expert_sharding_copies(int rank, int index, int which, Sharding kind) const {
    std::vector<std::vector<int>> copies;
    if (!symmetric() || options_.collectives != CollectiveModel::kFlow) return copies;
    const int count = kind == Sharding::kShard ? plan_.shard_replicas() : plan_.expert_shard_group_size();
    for (int i = 0; i < plan_.etp * plan_.ep; ++i) {
      for (int w = 0; w < count; ++w) {
        if (i == index && w == which) continue;
        copies.push_back(kind == Sharding::kShard ? expert_shard_group(rank, i, w) : expert_replica_group(rank, i, w));
      }
    }
    return copies;
  }
  // Symmetric fidelity with flow collectives: the other tensor ranks' copies
  // of a data-parallel group (they only matter to flows).
  std::vector<std::vector<int>> dp_copies(int rank) const {
    std::vector<std::vector<int>> copies;
    if (symmetric() && options_.collectives == CollectiveModel::kFlow) {
      for (int t = 1; t < plan_.tp; ++t) copies.push_back(dp_group(rank, t));
    }
    return copies;
  }
  // The tasks lowering makes for one copy of the pipeline: a task per action
  // that becomes one, a compute action's gradient-bucket parts, its tensor
  // peers' meeting (full fidelity) and its ZeRO-3 gradient scatter, a
  // reduction per bucket; and, with flow collectives, the flow steps of the
  // data-parallel collectives of all copies. Counted from the program alone,
  // before anything is built, so that work too large is refused at once.
  PipelineWork work_per_pipeline() const;
  // A compute action's time and the communication inside it, from stage
  // costs `costs`, before it is cut into pieces (the action at index k of
  // rank r's program; `partner`, Overlap::moe_a2a's pair, or -1); and
  // whether its MoE exchanges run as tasks of their own, out of that time.
  struct ActionTimes {
    core::Time duration, tp, cp, ep;
    bool ep_tasks = false;
  };
  ActionTimes action_times(int r, std::size_t k, int partner, const workload::StageCosts& costs) const;
  // An action's times handed out piece by piece: each piece its share,
  // rounded to a picosecond, the last what is left.
  struct PieceClock {
    struct Part {
      core::Time duration, tp, cp, ep;
    };
    ActionTimes whole;
    Part done{};
    Part next(double share, bool last);
  };
  // ZeRO-3 unit u's share of a compute action (op) of the stage.
  static double unit_share(Op op, const workload::StageCost& c, std::size_t u);
  // The bucket train of a stage's last backward of `duration`.
  hw::BucketTrain bucket_train(core::Time duration, const workload::StageCost& c) const;

  void find_concatenated_weight_grads();
  // One copy of the pipeline, rank by rank (rank_lowering.hpp).
  struct PipelineKeys;
  class RankLowering;
  void lower_pipeline(int p);
  void wire_dependencies(int p);

  const schedule::Program& program_;
  const schedule::Shape& shape_;
  const Wiring& wiring_;  // what ties the ranks' actions together (wiring.hpp)
  const workload::StageCosts& costs_;
  const hw::ClusterSpec& cluster_;
  const workload::Plan& plan_;
  const Options& options_;
  Fidelity fidelity_ = options_.fidelity;

  std::unique_ptr<Simulation> sim_;
  std::vector<Pipeline> pipelines_;
  std::vector<std::vector<int>> stages_of_rank_;
  core::ResourceId network_id_ = 0, runner_id_ = 0;
  // A collective of one participant with an analytic time runs as a solo
  // task (CollectiveRunner::solo_route), not an instance of its own: where
  // collectives are analytic and no stage's buckets run as a train (a
  // train names the collectives it follows and runs by their instances).
  bool solo_collectives_ = false;
  // Per pipeline rank and action: with parallel.twobp_concat, the index of the
  // W that ends the concatenated run this W belongs to (-1 for none), and
  // whether this W ends such a run.
  std::vector<std::vector<int>> merged_into_;
  std::vector<std::vector<char>> concat_end_;
  std::vector<std::vector<core::TaskId>> compute_order_;  // per simulated GPU
  std::vector<double> slowdown_;                          // per simulated GPU: 1 / speed factor
  // Per simulated GPU and action: the first and last task it became (none for a receive or a free send).
  std::vector<std::vector<std::optional<core::TaskId>>> first_, last_;
  std::vector<std::optional<core::TaskId>> last_collective_;  // per simulated GPU: collectives in order
  std::vector<std::optional<core::TaskId>> collective_before_last_;  // and the one before that
  std::vector<std::optional<core::TaskId>> last_gather_;      // per simulated GPU: ZeRO-3 gathers, on their own stream
  // Memory taken and given back, by task id (a flat table: a sweep lowers
  // thousands of plans); `pool` holds, for each task that has one, its
  // GPU's pool (-1 for none), so that handing the effects to the tracker
  // reads no task's info. of(task, q): the effect of `task`, which runs on
  // simulated GPU `q`.
  struct Effect {
    std::int64_t allocate_at_start = 0;
    std::int64_t release_at_end = 0;
  };
  struct Effects {
    std::vector<Effect> of_task;
    std::vector<std::int32_t> pool;
    Effect& of(core::TaskId task, int q) {
      if (of_task.size() <= task) {
        of_task.resize(task + 1);
        pool.resize(task + 1, -1);
      }
      pool[task] = q;
      return of_task[task];
    }
  };
  Effects effects_;
  Effect& effect_of(core::TaskId task, int q) { return effects_.of(task, q); }
  // Each micro-batch's activations and its actions' transients, from
  // `costs`, on their actions' first and last tasks; and what waits on the
  // host (`offloads`).
  // `effect(task, q)`: the entry of `task`, on simulated GPU q, that the
  // bytes add to (its allocate_at_start and release_at_end).
  template <class EffectOf>
  void add_activation_effects(const workload::StageCosts& costs, EffectOf&& effect,
                              std::vector<Simulation::HostOffload>& offloads) const;
  // Every task's effect to the memory tracker, in task order.
  static void hand_over(const Effects& effects, hw::MemoryTracker& memory);

  // keep_for_copies: each compute action's pieces (an action's time and
  // what is inside it, cut as compute() cut them), and the memory effects
  // before the activations' were added.
  bool keeping_ = false;
  struct KeptPiece {
    core::TaskId task;
    int unit;      // ZeRO-3's unit (its share from the costs), or -1 for `share`
    double share;
    bool train;    // a bucket train (its number the task's route)
  };
  struct KeptAction {
    int q, r;
    std::size_t k;
    std::size_t first, count;  // in kept_pieces_
  };
  std::vector<KeptPiece> kept_pieces_;
  std::vector<KeptAction> kept_actions_;
  // Each task add_activation_effects touches (the same whatever the
  // costs), with the effect the lowering gave it before.
  struct ActivationBase {
    core::TaskId task;
    Effect before;
  };
  std::vector<ActivationBase> activation_base_;
  bool paired_ = false;  // some action ran paired with another (Overlap::moe_a2a)
  std::vector<std::pair<core::TaskId, core::TaskId>> edges_;
  // Communication inside compute tasks, each distinct value once in
  // Simulation::comm_inside: the same action's pieces on every copy of the
  // pipeline and every micro-batch share an entry.
  struct CommKeyHash {
    std::size_t operator()(const std::array<std::uint64_t, 3>& k) const {
      return static_cast<std::size_t>((k[0] * 1000003u ^ k[1]) * 1000003u ^ k[2]);
    }
  };
  std::unordered_map<std::array<std::uint64_t, 3>, std::uint32_t, CommKeyHash> comm_index_;
  // The values met most recently, by a few bits of their hash, in front of
  // the map: a rank's F's and B's of one stage repeat a handful of values
  // over every micro-batch, and a slot is an array read where the map's
  // node is a cache miss.
  struct RecentComm {
    std::array<std::uint64_t, 3> key{};
    std::uint32_t id = 0;
    bool used = false;
  };
  std::array<RecentComm, 16> recent_comm_{};
  std::uint32_t intern_comm(const CommInside& c) {
    const std::array<std::uint64_t, 3> key{std::bit_cast<std::uint64_t>(c.tp_s), std::bit_cast<std::uint64_t>(c.cp_s),
                                           std::bit_cast<std::uint64_t>(c.ep_s)};
    const std::size_t h = CommKeyHash{}(key);
    RecentComm& recent = recent_comm_[(h ^ h >> 17 ^ h >> 37) % recent_comm_.size()];
    if (recent.used && recent.key == key) return recent.id;
    const auto [it, added] = comm_index_.try_emplace(key, static_cast<std::uint32_t>(sim_->comm_inside.size()));
    if (added) sim_->comm_inside.push_back(c);
    recent = {key, it->second, true};
    return it->second;
  }
  struct KeyHash {
    std::size_t operator()(const std::tuple<int, int, int, int, int>& k) const {
      const auto [a, b, cc, d, e] = k;
      std::size_t h = static_cast<std::size_t>(a);
      for (int x : {b, cc, d, e}) h = h * 1000003u ^ static_cast<std::size_t>(x);
      return h;
    }
  };
  // The instances some participants have joined and others not yet, with how
  // many have: looked up only, never iterated (the order of instances follows
  // creation). An instance leaves when its last participant joins, so the
  // table holds what is open, not every collective of a cluster.
  struct OpenInstance {
    std::uint32_t id = 0;
    int joined = 0;
  };
  std::unordered_map<std::tuple<int, int, int, int, int>, OpenInstance, KeyHash> instances_;
  // The collective instance `key` names, made by `make` on first use; each of
  // its `participants` tasks asks once. An instance a single task joins
  // (every data-parallel one in symmetric fidelity) skips the table.
  template <typename Make>
  std::uint32_t instance(const std::tuple<int, int, int, int, int>& key, int participants, Make&& make) {
    if (participants == 1) return make();
    auto it = instances_.find(key);
    if (it == instances_.end()) it = instances_.emplace(key, OpenInstance{make(), 0}).first;
    const std::uint32_t id = it->second.id;
    if (++it->second.joined == participants) instances_.erase(it);
    return id;
  }
  // Per simulated GPU, the GPUs it sends to (a handful: the neighbouring
  // stages), each with its route and its latest transfer, found by a short
  // scan: every send of a plan looks its receiver up here.
  struct PeerLink {
    int peer = 0;
    std::uint32_t route = 0;
    core::TaskId last_transfer = 0;
  };
  std::vector<std::vector<PeerLink>> peer_links_;
  std::map<std::pair<int, int>, std::vector<std::vector<int>>> pair_copies_;  // rank_pair_copies, by (a, b)
  // A compute action as RankLowering::cut_into_pieces cuts it: the pieces it runs as, each a
  // share of its time (scratch kept between actions).
  struct Piece {
    double share;
    int unit;  // -1 for a bucket's part or the whole action
    std::optional<std::size_t> gather = std::nullopt;  // the parameter gather it waits for (into `gathers`)
    // A MoE action's dispatch and combine as tasks (options.collectives
    // "flow"): the exchanges that run after this piece (into ep_points_), -1
    // for none; and whether the piece ends the part it was cut from (a
    // gradient bucket's, for the bucket's reduction), false where an
    // exchange cut that part in two.
    int exchanges = -1;
    int exchange_count = 0;
    bool ends_part = true;
    bool train = false;  // a bucket train's pieces (hw/bucket_train.hpp)
    bool entry = false;  // the zero-share piece before exchanges that come before any compute (TaskInfo::entry)
  };
  // Where in a MoE action's compute its exchanges run (cut_at_exchanges).
  struct EpPoint {
    double at;   // the share of the action's compute before it
    int layer;   // of the stage's MoE layers, in the order the pass runs them
    bool dispatch;  // the exchanges on the tokens' way to the experts; else on their way back
    bool redo;      // the recomputation's forward exchanges, ahead of the backward's
  };
  std::vector<EpPoint> ep_points_;
  // The pieces cut again at each exchange point, the points attached to the
  // piece before them (a zero-share piece first where one comes before any
  // compute).
  void cut_at_exchanges(std::vector<Piece>& pieces) const;
  std::vector<Piece> pieces_;
  std::vector<core::TaskId> unit_part_;  // per unit: the piece after which its gradients are ready
  std::vector<core::TaskId> unit_head_;  // per unit: the first task of its piece (its copy-out or regather, if any)
  std::vector<std::size_t> unit_part_point_;  // per unit: the rank's compute tasks issued up to its unit_part_
  IssueQueue shard_queue_;                    // per rank in turn: ZeRO-3's collectives on the sharding group
  IssueQueue expert_queue_;                   // and those of a MoE unit's experts, on the expert-data-parallel group
  IssueQueue expert_scatter_queue_;           // the experts' scatters, where the scatters have a group of their own
};

template <class EffectOf>
void Lowering::add_activation_effects(const workload::StageCosts& costs, EffectOf&& effect,
                                      std::vector<Simulation::HostOffload>& offloads) const {
  const int R = shape_.ranks;
  const int Q = static_cast<int>(first_.size());
  for (int q = 0; q < Q; ++q) {
    const int r = q % R;
    for (std::size_t k = 0; k < program_.ranks[r].size(); ++k) {
      const Action& a = program_.ranks[r][k];
      if (!schedule::is_compute(a.op)) continue;
      const workload::StageCost& c = costs.stages[a.stage];
      // The loss's passing tensors, or what a layer holds while it runs: its
      // attention's exchange buffers, its checkpoint brought from the host
      // (CPU checkpointing) and, in a backward, a recomputed layer's
      // activations (the loss's never at once with a layer's), from the
      // action's first piece to its last.
      const bool redoes = a.op == Op::kBackward || a.op == Op::kInputGrad;
      const std::int64_t transient =
          std::max(redoes ? c.loss_backward_transient_bytes : c.loss_forward_transient_bytes,
                   c.attention_transient_bytes + c.checkpoint_transient_bytes +
                       (redoes ? c.recompute_transient_bytes : 0));
      if (transient > 0 && a.op != Op::kWeightGrad) {
        effect(*first_[q][k], q).allocate_at_start += transient;
        effect(*last_[q][k], q).release_at_end += transient;
      }
      // What waits on the host from F's end to the backward's start: offloaded
      // activations and CPU checkpointing's checkpoints.
      const std::int64_t on_host = c.offloaded_activation_bytes + c.host_checkpoint_bytes;
      switch (a.op) {
        case Op::kForward:
          effect(*first_[q][k], q).allocate_at_start += c.activation_bytes;
          // Offloaded activations leave after F and come back for the backward.
          effect(*last_[q][k], q).release_at_end += c.offloaded_activation_bytes;
          if (on_host > 0) offloads.push_back({*last_[q][k], on_host, q});
          break;
        case Op::kBackward:
          effect(*first_[q][k], q).allocate_at_start += c.offloaded_activation_bytes;
          effect(*last_[q][k], q).release_at_end += c.activation_bytes;
          if (on_host > 0) offloads.push_back({*first_[q][k], -on_host, q});
          break;
        case Op::kInputGrad:
          if (on_host > 0) offloads.push_back({*first_[q][k], -on_host, q});
          // The offloaded activations come back for I. I makes the output
          // gradients W will read and no longer needs the rest; the GEMM
          // inputs W reads were kept since F and stay.
          effect(*first_[q][k], q).allocate_at_start +=
              c.offloaded_activation_bytes + c.weight_grad_bytes - c.weight_grad_kept_bytes;
          effect(*last_[q][k], q).release_at_end += c.activation_bytes - c.weight_grad_kept_bytes;
          break;
        case Op::kWeightGrad: {
          // A W merged into a concatenated run gives its memory back when the run ends.
          const int into = merged_into_[r][k];
          effect(*last_[q][into < 0 ? k : static_cast<std::size_t>(into)], q).release_at_end += c.weight_grad_bytes;
          break;
        }
        default: break;
      }
    }
  }
}

}  // namespace trainsim::lower::detail
