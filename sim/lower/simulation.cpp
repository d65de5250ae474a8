#include "lower/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "schedule/check.hpp"

namespace trainsim::lower {

namespace {

using schedule::Action;
using schedule::Op;

core::Time compute_duration(const Action& a, const workload::StageCost& c) {
  switch (a.op) {
    case Op::kForward: return c.forward;
    case Op::kBackward: return c.backward();
    case Op::kInputGrad: return c.input_grad;
    case Op::kWeightGrad: return c.weight_grad;
    default: return core::Time::zero();
  }
}

// The tensor-parallel collectives inside a compute action: a forward's in F,
// the input gradient's in B and I.
core::Time tp_comm_inside(const Action& a, const workload::StageCost& c) {
  switch (a.op) {
    case Op::kForward: return c.tp_comm_forward;
    case Op::kBackward:
    case Op::kInputGrad: return c.tp_comm_backward;
    default: return core::Time::zero();
  }
}

// The send a receive waits for: RECV_F(s, mb) <- SEND_F(s - 1, mb); RECV_B(s, mb) <- SEND_B(s + 1, mb).
std::tuple<Op, int, int> matching_send(const Action& recv) {
  if (recv.op == Op::kRecvF) return {Op::kSendF, recv.stage - 1, recv.microbatch};
  return {Op::kSendB, recv.stage + 1, recv.microbatch};
}

// Whether actions[k] ends a run of backward-ending actions (B or W) of its
// stage: the next compute action on the rank is not another of them.
bool ends_backward_run(const std::vector<Action>& actions, std::size_t k) {
  if (!schedule::is_backward_end(actions[k].op)) return false;
  for (std::size_t j = k + 1; j < actions.size(); ++j) {
    if (!schedule::is_compute(actions[j].op)) continue;
    return !(schedule::is_backward_end(actions[j].op) && actions[j].stage == actions[k].stage);
  }
  return true;
}

// Slows a GPU's compute stream while collectives of that GPU run.
class Interference final : public hw::CollectiveListener {
 public:
  Interference(Simulation& sim, double slowdown) : sim_(sim), speed_(1.0 / (1.0 + slowdown)) {
    for (std::size_t q = 0; q < sim.gpu_of_rank.size(); ++q) streams_of_gpu_[sim.gpu_of_rank[q]].push_back(q);
    running_.assign(sim.gpu_of_rank.size(), 0);
  }
  void on_collective(const std::vector<int>& members, bool running, core::Engine& engine) override {
    for (int gpu : members) {
      const auto it = streams_of_gpu_.find(gpu);
      if (it == streams_of_gpu_.end()) continue;  // a GPU this simulation stands in for
      for (std::size_t q : it->second) {
        running_[q] += running ? 1 : -1;
        sim_.streams[q]->set_speed(running_[q] > 0 ? speed_ : 1.0, engine);
      }
    }
  }

 private:
  Simulation& sim_;
  double speed_;
  std::map<int, std::vector<std::size_t>> streams_of_gpu_;
  std::vector<int> running_;
};

// Builds the graph of one lowering; kept in one place so the passes can share state.
class Lowering {
 public:
  Lowering(const schedule::Program& program, const schedule::Shape& shape,
           const std::vector<schedule::Dependency>& deps, const workload::StageCosts& costs,
           const hw::ClusterSpec& cluster, const workload::Plan& plan, const Options& options)
      : program_(program), shape_(shape), deps_(deps), costs_(costs), cluster_(cluster), plan_(plan),
        options_(options) {}

  std::unique_ptr<Simulation> build();

 private:
  struct Pipeline {
    int replica = 0;
    int tensor = 0;
  };

  int gpu(int rank, const Pipeline& p) const { return plan_.gpu_of(rank, p.replica, p.tensor); }
  std::vector<int> dp_group(int rank, int tensor) const {
    std::vector<int> g;
    for (int d = 0; d < plan_.dp; ++d) g.push_back(plan_.gpu_of(rank, d, tensor));
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
      for (int d = replica % shard; d < plan_.dp; d += shard) g.push_back(plan_.gpu_of(rank, d, tensor));
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
    sim_->info.push_back(info);
    return id;
  }
  core::TaskId compute_task(int q, core::Time duration, const TaskInfo& info) {
    core::Task t;
    t.resource = static_cast<core::ResourceId>(q);
    t.duration = slowdown_[q] == 1.0 ? duration : core::Time::seconds(duration.to_seconds() * slowdown_[q]);
    const core::TaskId id = add_task(t, info);
    compute_order_[q].push_back(id);
    return id;
  }
  // A collective task of simulated GPU q, joining the shared instance `key`.
  core::TaskId collective_task(int q, const std::tuple<int, int, int, int, int>& key, hw::CollectiveKind kind,
                               double bytes, std::vector<int> members, int participants, core::Time analytic,
                               const TaskInfo& info, const std::vector<std::vector<int>>& copies = {});
  bool symmetric() const { return fidelity_ == Fidelity::kSymmetric; }
  // One pipeline stands for all only if every copy sees the same hardware:
  // each stage's GPUs (tp x dp of them) fill whole nodes, or each stage fits
  // in one node with a NIC per GPU (no NIC shared between stages); and, when
  // up-links are oversubscribed, a stage's nodes line up with the leaves.
  bool placement_is_uniform() const {
    const int per_stage = plan_.tp * plan_.dp;
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
  void find_concatenated_weight_grads();
  void lower_pipeline(int p);
  void wire_dependencies(int p);

  const schedule::Program& program_;
  const schedule::Shape& shape_;
  const std::vector<schedule::Dependency>& deps_;
  const workload::StageCosts& costs_;
  const hw::ClusterSpec& cluster_;
  const workload::Plan& plan_;
  const Options& options_;
  Fidelity fidelity_ = options_.fidelity;

  std::unique_ptr<Simulation> sim_;
  std::vector<Pipeline> pipelines_;
  std::vector<std::vector<int>> stages_of_rank_;
  core::ResourceId network_id_ = 0, runner_id_ = 0;
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
  std::vector<std::optional<core::TaskId>> last_gather_;      // per simulated GPU: ZeRO-3 gathers, on their own stream
  // Memory taken and given back, by task id (a flat table: a sweep lowers
  // thousands of plans); has_effect_ marks the tasks that have one.
  std::vector<hw::MemoryEffect> effects_;
  std::vector<char> has_effect_;
  hw::MemoryEffect& effect_of(core::TaskId task) {
    if (effects_.size() <= task) {
      effects_.resize(task + 1);
      has_effect_.resize(task + 1, 0);
    }
    has_effect_[task] = 1;
    return effects_[task];
  }
  std::vector<std::pair<core::TaskId, core::TaskId>> edges_;
  struct KeyHash {
    std::size_t operator()(const std::tuple<int, int, int, int, int>& k) const {
      const auto [a, b, cc, d, e] = k;
      std::size_t h = static_cast<std::size_t>(a);
      for (int x : {b, cc, d, e}) h = h * 1000003u ^ static_cast<std::size_t>(x);
      return h;
    }
  };
  // Looked up only, never iterated: the order of instances follows creation.
  std::unordered_map<std::tuple<int, int, int, int, int>, std::uint32_t, KeyHash> instances_;
  // The collective instance `key` names, made by `make` on first use. An
  // instance a single task joins (every data-parallel one in symmetric
  // fidelity) is never looked up again, so it skips the table.
  template <typename Make>
  std::uint32_t instance(const std::tuple<int, int, int, int, int>& key, int participants, Make&& make) {
    if (participants == 1) return make();
    auto it = instances_.find(key);
    if (it == instances_.end()) it = instances_.emplace(key, make()).first;
    return it->second;
  }
  std::map<std::pair<int, int>, core::TaskId> last_transfer_;  // per (sender, receiver)
  std::map<std::pair<int, int>, std::uint32_t> route_of_pair_;  // per (sender, receiver)
};

core::TaskId Lowering::collective_task(int q, const std::tuple<int, int, int, int, int>& key, hw::CollectiveKind kind,
                                       double bytes, std::vector<int> members, int participants, core::Time analytic,
                                       const TaskInfo& info, const std::vector<std::vector<int>>& copies) {
  const std::optional<core::Time> fixed =
      options_.collectives == CollectiveModel::kAnalytic ? std::optional<core::Time>(analytic) : std::nullopt;
  core::Task t;
  t.resource = runner_id_;
  t.route = instance(key, participants, [&] {
    return sim_->collectives->add(kind, bytes, std::move(members), participants, fixed, copies);
  });
  const core::TaskId id = add_task(t, info);
  if (last_collective_[q]) edges_.emplace_back(*last_collective_[q], id);
  last_collective_[q] = id;
  return id;
}

std::unique_ptr<Simulation> Lowering::build() {
  if (static_cast<int>(costs_.stages.size()) != shape_.stages) {
    throw std::logic_error("lower: costs for " + std::to_string(costs_.stages.size()) + " stages, shape has " +
                           std::to_string(shape_.stages));
  }
  sim_ = std::make_unique<Simulation>();
  const int R = shape_.ranks;
  const bool custom = cluster_.network.kind == hw::NetworkKind::kCustom;
  if (symmetric() && (custom || !placement_is_uniform())) {
    // One pipeline could not stand for the others: simulate every GPU.
    fidelity_ = Fidelity::kFull;
    sim_->fell_back_to_full = true;
    sim_->fell_back_because = custom ? "custom network" : "placement not uniform";
  }
  if (symmetric()) {
    pipelines_.push_back({0, 0});
  } else {
    for (int d = 0; d < plan_.dp; ++d) {
      for (int t = 0; t < plan_.tp; ++t) pipelines_.push_back({d, t});
    }
  }
  const int P = static_cast<int>(pipelines_.size());
  const int Q = P * R;
  sim_->estimate = work_estimate(P, R, work_per_pipeline(), options_.collectives == CollectiveModel::kFlow);
  if (symmetric()) {
    check_work(sim_->estimate, options_.limits, fmt::format("simulating one pipeline of {} GPUs", Q),
               "use fewer micro-batches (a larger parallel.microbatch_size or a smaller parallel.global_batch)");
  } else {
    check_work(sim_->estimate, options_.limits, fmt::format("simulating every one of {} GPUs", Q),
               sim_->fell_back_to_full
                   ? fmt::format("symmetric fidelity cannot stand for this cluster ({}); simulate fewer GPUs or "
                                 "fewer micro-batches (parallel.global_batch)",
                                 sim_->fell_back_because)
                   : "use options.fidelity = \"symmetric\" (one pipeline stands for its identical copies), or fewer "
                     "GPUs");
  }
  sim_->pipelines = P;
  sim_->pipeline_ranks = R;
  for (const Pipeline& p : pipelines_) {
    for (int r = 0; r < R; ++r) sim_->gpu_of_rank.push_back(gpu(r, p));
    sim_->pipeline_coordinates.push_back({p.replica, p.tensor});
  }
  for (const workload::StageCost& c : costs_.stages) sim_->stage_layers.push_back(c.layers);
  stages_of_rank_.resize(R);
  for (int s = 0; s < shape_.stages; ++s) stages_of_rank_[shape_.stage_rank[s]].push_back(s);

  // The topology holds the simulated GPUs, and with flow collectives every
  // member of their groups.
  std::vector<int> gpus = sim_->gpu_of_rank;
  if (options_.collectives == CollectiveModel::kFlow) {
    for (int r = 0; r < R; ++r) {
      for (int d = 0; d < plan_.dp; ++d) gpus.push_back(plan_.gpu_of(r, d, 0));
    }
  }
  sim_->topology = std::make_unique<hw::Topology>(cluster_, sim_->network, gpus);
  sim_->network.record_rates(options_.record_link_rates);
  sim_->blocking_sends = options_.blocking_sends;

  // Stragglers and faults: every GPU must be simulated for them to matter.
  if (symmetric() && (!options_.gpu_speed.empty() || !options_.link_faults.empty())) {
    throw std::invalid_argument(std::string(options_.gpu_speed.empty() ? "options.links" : "options.gpu_speed") +
                                ": needs options.fidelity = \"full\" (a symmetric representative stands for "
                                "identical GPUs)");
  }
  slowdown_.assign(static_cast<std::size_t>(Q), 1.0);
  std::unordered_map<int, double> speed_of_gpu;  // a lookup per simulated GPU: linear in both counts
  for (const GpuSpeed& g : options_.gpu_speed) speed_of_gpu[g.gpu] = g.factor;
  for (int q = 0; q < Q && !speed_of_gpu.empty(); ++q) {
    if (const auto it = speed_of_gpu.find(sim_->gpu_of_rank[q]); it != speed_of_gpu.end()) slowdown_[q] = 1.0 / it->second;
  }
  apply_link_faults(*sim_->topology, options_.link_faults);
  sim_->collectives = std::make_unique<hw::CollectiveRunner>(cluster_, *sim_->topology, sim_->network,
                                                             options_.collective_algorithm);
  network_id_ = static_cast<core::ResourceId>(Q);
  runner_id_ = static_cast<core::ResourceId>(Q + 2);  // after the network's two ids
  sim_->gpu_memory_bytes = static_cast<std::int64_t>(cluster_.node.gpu.memory_bytes());
  sim_->cuda_context_bytes = options_.cuda_context_bytes;
  for (int q = 0; q < Q; ++q) {
    sim_->memory.add_pool(hw::MemoryPool("GPU " + std::to_string(sim_->gpu_of_rank[q]),
                                         tensor_capacity_bytes(cluster_.node.gpu, options_.cuda_context_bytes)));
  }
  compute_order_.resize(Q);
  first_.resize(Q);
  last_.resize(Q);
  last_collective_.resize(Q);
  last_gather_.resize(Q);

  find_concatenated_weight_grads();
  for (int p = 0; p < P; ++p) {
    lower_pipeline(p);
    if (options_.progress) options_.progress(static_cast<std::size_t>(p) + 1, static_cast<std::size_t>(P));
  }
  for (int p = 0; p < P; ++p) wire_dependencies(p);

  for (const auto& [a, b] : edges_) sim_->graph.add_edge(a, b);
  sim_->graph.finalize();

  // Memory: model state is resident from the start; a micro-batch's activations
  // are taken when its F starts and given back when its backward ends.
  for (int q = 0; q < Q; ++q) {
    const int r = q % R;
    for (int s : stages_of_rank_[r]) {
      sim_->memory.pool(q).allocate_resident(costs_.stages[s].model_state_bytes);
    }
    for (std::size_t k = 0; k < program_.ranks[r].size(); ++k) {
      const Action& a = program_.ranks[r][k];
      if (!schedule::is_compute(a.op)) continue;
      const workload::StageCost& c = costs_.stages[a.stage];
      switch (a.op) {
        case Op::kForward: effect_of(*first_[q][k]).allocate_at_start += c.activation_bytes; break;
        case Op::kBackward: effect_of(*last_[q][k]).release_at_end += c.activation_bytes; break;
        case Op::kInputGrad:
          // I makes the output gradients W will read and no longer needs the
          // rest; the GEMM inputs W reads were kept since F and stay.
          effect_of(*first_[q][k]).allocate_at_start += c.weight_grad_bytes - c.weight_grad_kept_bytes;
          effect_of(*last_[q][k]).release_at_end += c.activation_bytes - c.weight_grad_kept_bytes;
          break;
        case Op::kWeightGrad: {
          // A W merged into a concatenated run gives its memory back when the run ends.
          const int into = merged_into_[r][k];
          effect_of(*last_[q][into < 0 ? k : static_cast<std::size_t>(into)]).release_at_end += c.weight_grad_bytes;
          break;
        }
        default: break;
      }
    }
  }
  for (core::TaskId task = 0; task < effects_.size(); ++task) {
    if (!has_effect_[task]) continue;  // in task order, as a map would give
    hw::MemoryEffect& effect = effects_[task];
    effect.pool = static_cast<std::uint32_t>(sim_->info[task].rank);
    sim_->memory.set_effect(task, effect);
  }
  for (int q = 0; q < Q; ++q) sim_->streams.push_back(std::make_unique<hw::Stream>(std::move(compute_order_[q])));
  if (options_.comm_slowdown > 0.0) {
    sim_->interference = std::make_unique<Interference>(*sim_, options_.comm_slowdown);
    sim_->collectives->set_listener(sim_->interference.get());
  }
  return std::move(sim_);
}

PipelineWork Lowering::work_per_pipeline() const {
  const bool full = !symmetric();
  PipelineWork work;
  // A collective over the dp replicas, as flows: a ring's 2 (n - 1) steps of
  // n flows for an all-reduce, half that for a reduce-scatter or an
  // all-gather (trees and hierarchical rings take fewer).
  const double n = plan_.dp;
  const double ring = options_.collectives == CollectiveModel::kFlow ? n * (n - 1) : 0.0;
  std::vector<char> cut(static_cast<std::size_t>(shape_.stages));
  for (const auto& actions : program_.ranks) {
    std::fill(cut.begin(), cut.end(), 0);
    // Overlap::param_gather: a stage's first forward runs as a piece per
    // bucket, each after a gather of its own (counted for every stage: more
    // than enough).
    for (const workload::StageCost& c : costs_.stages) {
      const double b = static_cast<double>(c.param_bucket_gather.size());
      work.tasks += 2 * b;
      work.flow_steps += b * ring;
    }
    for (auto it = actions.rbegin(); it != actions.rend(); ++it) {  // from the end: a stage's last backward first
      const Action& a = *it;
      const workload::StageCost& c = costs_.stages[a.stage];
      const double buckets = static_cast<double>(std::max<std::size_t>(1, c.grad_bucket_share.size()));
      // ZeRO-3: a unit's gather, its part of an action, its gradient scatter.
      const double units = static_cast<double>(c.shard_units.size());
      if (schedule::is_compute(a.op)) {
        const bool last_backward = schedule::is_backward_end(a.op) && !cut[a.stage];
        if (last_backward) cut[a.stage] = 1;
        const bool needs_params = a.op != Op::kWeightGrad;
        const double pieces = c.sharded() && needs_params ? units : last_backward ? buckets : 1;
        const double scatters = c.sharded() && schedule::is_backward_end(a.op) ? units : 0.0;
        const double replicated = plan_.zero_stage == 3 && plan_.shard_replicas() > 1 ? scatters : 0.0;
        work.tasks += pieces + (full && plan_.tp > 1 ? 1 : 0) + scatters + replicated;
        work.flow_steps += scatters * ring + replicated * 2 * ring;
      } else if (a.op == Op::kReduceGrad) {
        const bool embedding = a.stage == 0 || a.stage + 1 == shape_.stages;  // a tied embedding's all-reduce
        work.tasks += buckets + (embedding ? 1 : 0);
        work.flow_steps += buckets * 2 * ring;
      } else if (a.op == Op::kOptimizer) {
        work.tasks += 2;  // and ZeRO-1/2's parameter gather
        work.flow_steps += ring;
      } else if (a.op == Op::kUnshard) {
        work.tasks += units;
        work.flow_steps += units * ring;
      } else if (a.op != Op::kRecvF && a.op != Op::kRecvB && a.op != Op::kReshard) {
        work.tasks += 1;  // a transfer
      }
    }
  }
  // Every tensor rank's copy of a data-parallel group runs its own flows:
  // its own pipeline in full fidelity, a copy beside the representative's
  // in symmetric fidelity.
  work.flow_steps *= plan_.tp;
  return work;
}

void Lowering::find_concatenated_weight_grads() {
  const int R = shape_.ranks, M = shape_.microbatches;
  merged_into_.resize(R);
  concat_end_.resize(R);
  for (int r = 0; r < R; ++r) {
    const auto& actions = program_.ranks[r];
    merged_into_[r].assign(actions.size(), -1);
    concat_end_[r].assign(actions.size(), 0);
    if (!plan_.twobp_concat) continue;
    // Runs of W's of one stage, apart only by non-compute actions, that cover
    // every micro-batch.
    for (std::size_t k = 0; k < actions.size();) {
      if (actions[k].op != Op::kWeightGrad) {
        ++k;
        continue;
      }
      std::vector<std::size_t> run = {k};
      std::size_t j = k + 1;
      for (; j < actions.size(); ++j) {
        if (actions[j].op == Op::kWeightGrad && actions[j].stage == actions[k].stage) {
          run.push_back(j);
        } else if (schedule::is_compute(actions[j].op)) {
          break;
        }
      }
      if (static_cast<int>(run.size()) == M && M > 1) {
        for (std::size_t x = 0; x + 1 < run.size(); ++x) merged_into_[r][run[x]] = static_cast<int>(run.back());
        concat_end_[r][run.back()] = 1;
      }
      k = j;
    }
  }
}

void Lowering::lower_pipeline(int p) {
  const Pipeline& pipe = pipelines_[p];
  const int R = shape_.ranks;
  const bool full = !symmetric();
  const int dp_participants = full ? plan_.dp : 1;
  const int shard_participants = full ? sharding_size(Sharding::kShard) : 1;
  const int replica_participants = full ? sharding_size(Sharding::kReplicate) : 1;
  // Names a ZeRO-3 collective instance: the group's index in full fidelity.
  const int shard_key = full ? sharding_index(pipe.replica, Sharding::kShard) : pipe.replica;
  const int replica_key = full ? sharding_index(pipe.replica, Sharding::kReplicate) : pipe.replica;
  enum Kind { kBucket, kEmbedding, kGather, kBarrier, kParamGather, kGradScatter, kGradReplicate };

  for (int r = 0; r < R; ++r) {
    const int q = p * R + r;
    const auto& actions = program_.ranks[r];
    first_[q].resize(actions.size());
    last_[q].resize(actions.size());
    std::map<int, std::size_t> last_backward;  // stage -> index of its last backward-ending action
    std::map<int, std::size_t> first_forward;  // stage -> index of its first forward
    std::optional<std::size_t> last_compute;   // the rank's last compute action
    for (std::size_t k = 0; k < actions.size(); ++k) {
      if (schedule::is_backward_end(actions[k].op)) last_backward[actions[k].stage] = k;
      if (actions[k].op == Op::kForward) first_forward.emplace(actions[k].stage, k);
      if (schedule::is_compute(actions[k].op)) last_compute = k;
    }
    // Overlap::grad_reduce off: the reductions wait for the rank's whole backward.
    std::vector<core::TaskId> after_backward;
    std::vector<std::vector<core::TaskId>> backward_parts(shape_.stages);
    const std::vector<std::vector<int>> peers_groups = dp_copies(r);  // once per rank, not per bucket
    const std::vector<int> group = dp_group(r, pipe.tensor);
    const std::vector<int> shard_group = sharding_group(r, pipe.tensor, pipe.replica, Sharding::kShard);
    const std::vector<std::vector<int>> shard_copies = sharding_copies(r, Sharding::kShard);
    const bool replicated = plan_.zero_stage == 3 && plan_.shard_replicas() > 1;
    const std::vector<int> replica_group =
        replicated ? sharding_group(r, pipe.tensor, pipe.replica, Sharding::kReplicate) : std::vector<int>{};
    const std::vector<std::vector<int>> replica_copies =
        replicated ? sharding_copies(r, Sharding::kReplicate) : std::vector<std::vector<int>>{};
    std::optional<core::TaskId> barrier;  // the tensor peers' meeting after the previous compute action
    std::vector<core::TaskId> unsent;     // options.blocking_sends: sends the next compute action waits for
    // ZeRO-3 by unit (workload::ShardUnit): per stage of this rank and unit,
    // its gather while the unit is held (from UNSHARD to RESHARD) and the
    // last compute part that used it; the rank's gathers in issue order with
    // the part that first used each. Gather i may start once the first use
    // of gather i - depth - 1 has ended (FSDP's prefetch: unit u + depth
    // gathered while unit u computes), or, with a window of parameters
    // (DeepSpeed's prefetch bucket), once the first use of the last gather
    // j with more than the window in gathers j + 1 .. i has.
    struct Held {
      std::optional<core::TaskId> gather;
      std::size_t index = 0;  // into `gathers`
      std::optional<core::TaskId> last_use;
    };
    std::map<int, std::vector<Held>> held;
    std::vector<core::TaskId> gathers;
    std::vector<double> gathered_params;  // per gather
    std::vector<std::optional<core::TaskId>> first_use;
    std::map<std::size_t, std::vector<std::size_t>> waiting;  // gather j -> gathers waiting for its first use
    const std::size_t depth = static_cast<std::size_t>(plan_.fsdp_prefetch);
    const double window = plan_.fsdp_prefetch_params;
    int scatters = 0;  // per rank: names each gradient scatter's collective
    auto waits_for = [&](std::size_t i) -> std::optional<std::size_t> {
      if (window <= 0.0) return i >= depth + 1 ? std::optional<std::size_t>(i - depth - 1) : std::nullopt;
      double ahead = 0.0;
      for (std::size_t j = i; j-- > 0;) {
        ahead += gathered_params[j + 1];
        if (ahead > window) return j;
      }
      return std::nullopt;
    };
    auto add_gather = [&](core::TaskId id, double params) {  // gather i, with what it waits for
      const std::size_t i = gathers.size();
      gathers.push_back(id);
      gathered_params.push_back(params);
      first_use.push_back(std::nullopt);
      if (const auto j = waits_for(i)) {
        if (first_use[*j]) {
          edges_.emplace_back(*first_use[*j], id);
        } else {
          waiting[*j].push_back(i);
        }
      }
      return i;
    };
    auto used_first = [&](std::size_t j, core::TaskId part) {  // gather j's first use is `part`
      first_use[j] = part;
      if (const auto it = waiting.find(j); it != waiting.end()) {
        for (std::size_t i : it->second) edges_.emplace_back(part, gathers[i]);
        waiting.erase(it);
      }
    };
    auto units_held = [&](int stage, std::size_t units) -> std::vector<Held>& {
      std::vector<Held>& h = held[stage];
      if (h.size() != units) h.resize(units);
      return h;
    };
    for (std::size_t k = 0; k < actions.size(); ++k) {
      const Action& a = actions[k];
      const TaskInfo info{TaskKind::kCompute, a, q, -1};
      if (schedule::is_compute(a.op)) {
        // The last backward of a stage is cut by gradient bucket; parts share
        // the duration by bucket size, the last taking the rounding.
        const workload::StageCost& c = costs_.stages[a.stage];
        // parallel.twobp_concat: a rank's W's of one stage over every
        // micro-batch run as one op; it is timed on the run's last W, the
        // others take no time.
        core::Time duration = compute_duration(a, c);
        if (a.op == Op::kWeightGrad && merged_into_[r][k] >= 0) duration = core::Time::zero();
        if (a.op == Op::kWeightGrad && concat_end_[r][k]) duration = c.weight_grad_concat;
        const bool split =
            plan_.overlap.grad_reduce && schedule::is_backward_end(a.op) && last_backward.at(a.stage) == k;
        // Overlap::param_gather: the stage's first forward runs bucket by
        // bucket, each after its own gather of the updated parameters.
        const bool by_bucket_gather = !c.param_bucket_gather.empty() && a.op == Op::kForward &&
                                      first_forward.at(a.stage) == k;
        const bool needs_params = a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad;
        const core::Time tp = tp_comm_inside(a, c);
        // The parts this action's gradients are ready after, unit by unit
        // (for ZeRO-3's scatters): every unit's after the whole action when
        // it is not cut by unit (a W).
        std::vector<core::TaskId> unit_part(c.shard_units.size());
        // The pieces the action runs as, each a share of its time: under
        // ZeRO-3 one per unit (forward in order, backward in reverse), each
        // after its unit's gather; a stage's last backward one per gradient
        // bucket; else the whole action. The last piece takes the rounding.
        struct Piece {
          double share;
          int unit;  // -1 for a bucket's part or the whole action
          std::optional<std::size_t> gather = std::nullopt;  // the parameter gather it waits for (into `gathers`)
        };
        std::vector<Piece> pieces;
        const bool by_unit = c.sharded() && needs_params;
        if (by_unit) {
          const std::size_t U = c.shard_units.size();
          const double i_s = c.input_grad.to_seconds(), w_s = c.weight_grad.to_seconds();
          for (std::size_t n = 0; n < U; ++n) {
            const std::size_t u = a.op == Op::kForward ? n : U - 1 - n;
            const workload::ShardUnit& unit = c.shard_units[u];
            const double share = a.op == Op::kForward     ? unit.forward_share
                                 : a.op == Op::kInputGrad ? unit.input_grad_share
                                 : i_s + w_s > 0.0 ? (i_s * unit.input_grad_share + w_s * unit.weight_grad_share) /
                                                         (i_s + w_s)
                                                   : 0.0;
            pieces.push_back({share, static_cast<int>(u)});
          }
        } else if (split) {
          for (double share : c.grad_bucket_share) pieces.push_back({share, -1});
        } else if (by_bucket_gather) {
          // Buckets in the order the forward uses them; each piece's share of
          // the time is its bucket's share of the parameters.
          const std::size_t B = c.param_bucket_gather.size();
          for (std::size_t j = 0; j < B; ++j) {
            const std::size_t i = gathers.size();
            core::Task t;
            t.resource = runner_id_;
            const double share = c.grad_bucket_share[B - 1 - j];
            const auto key = std::make_tuple(static_cast<int>(kParamGather), a.stage, static_cast<int>(i), pipe.tensor,
                                             full ? 0 : pipe.replica);
            const std::optional<core::Time> fixed = options_.collectives == CollectiveModel::kAnalytic
                                                        ? std::optional<core::Time>(c.param_bucket_gather[j])
                                                        : std::nullopt;
            t.route = instance(key, dp_participants, [&] {
              return sim_->collectives->add(hw::CollectiveKind::kAllGather, share * c.param_bytes, group,
                                            dp_participants, fixed, peers_groups);
            });
            TaskInfo gather{TaskKind::kParamAllGather, {Op::kUnshard, a.stage, 0}, q, -1};
            gather.part = static_cast<int>(j);
            gather.parts = static_cast<int>(B);
            const core::TaskId id = add_task(t, gather);
            if (last_gather_[q]) edges_.emplace_back(*last_gather_[q], id);
            last_gather_[q] = id;
            pieces.push_back({share, -1, add_gather(id, share * c.params)});
          }
        }
        if (pieces.empty()) pieces.push_back({1.0, -1});
        std::vector<Held>* h = by_unit ? &units_held(a.stage, c.shard_units.size()) : nullptr;
        core::Time done, tp_done;
        for (std::size_t j = 0; j < pieces.size(); ++j) {
          const bool last = j + 1 == pieces.size();
          const double share = pieces[j].share;
          const core::Time d = last ? duration - done : core::Time::seconds(duration.to_seconds() * share);
          const core::Time tp_part = last ? tp - tp_done : core::Time::seconds(tp.to_seconds() * share);
          done += d;
          tp_done += tp_part;
          TaskInfo part = info;
          if (by_unit) {
            part.unit = pieces[j].unit;
            part.units = static_cast<int>(c.shard_units.size());
          } else {
            part.part = static_cast<int>(j);
            part.parts = static_cast<int>(pieces.size());
          }
          part.tp_comm_s = tp_part.to_seconds();
          const core::TaskId id = compute_task(q, d, part);
          if (j == 0) {
            first_[q][k] = id;
            if (barrier) edges_.emplace_back(*barrier, id);
            for (core::TaskId send : unsent) edges_.emplace_back(send, id);
            unsent.clear();
          }
          last_[q][k] = id;
          if (by_unit) {
            Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
            if (unit.gather) {
              edges_.emplace_back(*unit.gather, id);
              if (!first_use[unit.index]) used_first(unit.index, id);
            }
            unit.last_use = id;
            unit_part[static_cast<std::size_t>(pieces[j].unit)] = id;
          } else {
            for (core::TaskId& ready : unit_part) ready = id;  // a W: every unit's gradients after it
          }
          if (const auto i = pieces[j].gather) {
            edges_.emplace_back(gathers[*i], id);
            used_first(*i, id);
          }
          if (split && (!by_unit || last)) backward_parts[a.stage].push_back(id);
        }
        if (c.sharded() && ends_backward_run(actions, k)) {
          // ZeRO-3: each unit's gradients of this run of backwards go to
          // their owners once its part has ended, on the communication stream.
          const std::size_t U = c.shard_units.size();
          for (std::size_t n = 0; n < U; ++n) {
            const std::size_t u = U - 1 - n;  // in the order the backward ends them
            const workload::ShardUnit& unit = c.shard_units[u];
            TaskInfo scatter{TaskKind::kGradReduce, a, q, -1};
            scatter.unit = static_cast<int>(u);
            scatter.units = static_cast<int>(U);
            collective_task(q, {kGradScatter, a.stage, scatters, pipe.tensor, shard_key},
                            hw::CollectiveKind::kReduceScatter, unit.grad_bytes, shard_group, shard_participants,
                            unit.grad_scatter, scatter, shard_copies);
            edges_.emplace_back(unit_part[u], last_collective_[q].value());
            if (replicated) {
              // HSDP: the shard it now holds, all-reduced with the other groups' copies.
              scatter.across_shard_groups = true;
              collective_task(q, {kGradReplicate, a.stage, scatters, pipe.tensor, replica_key},
                              hw::CollectiveKind::kAllReduce, unit.grad_bytes / plan_.shard_group_size(),
                              replica_group, replica_participants, unit.grad_replicate, scatter, replica_copies);
            }
            ++scatters;
          }
        }
        if (full && plan_.tp > 1) {
          // Tensor peers all-reduce inside every compute action: none runs ahead.
          std::vector<int> peers;
          for (int t = 0; t < plan_.tp; ++t) peers.push_back(plan_.gpu_of(r, pipe.replica, t));
          core::Task t;
          t.resource = runner_id_;
          auto it = instances_.find({kBarrier, r, static_cast<int>(k), pipe.replica, 0});
          if (it == instances_.end()) {
            it = instances_
                     .emplace(std::make_tuple(static_cast<int>(kBarrier), r, static_cast<int>(k), pipe.replica, 0),
                              sim_->collectives->add(hw::CollectiveKind::kAllReduce, 0.0, peers, plan_.tp,
                                                     core::Time::zero()))
                     .first;
          }
          t.route = it->second;
          const core::TaskId id = add_task(t, {TaskKind::kTpBarrier, a, q, -1});
          edges_.emplace_back(*last_[q][k], id);
          barrier = id;
        }
      } else if (a.op == Op::kUnshard) {
        // ZeRO-3: gather the window's units that are not held, on a stream
        // of their own, in the order the window's first action uses them.
        const workload::StageCost& c = costs_.stages[a.stage];
        const auto& units = c.shard_units;
        const std::size_t U = units.size();
        std::vector<Held>& h = units_held(a.stage, U);
        bool forward = true;
        for (std::size_t j = k + 1; j < actions.size(); ++j) {
          const Op op = actions[j].op;
          if (actions[j].stage != a.stage || !(op == Op::kForward || op == Op::kBackward || op == Op::kInputGrad)) continue;
          forward = op == Op::kForward;
          break;
        }
        for (std::size_t n = 0; n < U; ++n) {
          const std::size_t u = forward ? n : U - 1 - n;
          if (h[u].gather) continue;  // still held (parallel.reshard_after_forward = false)
          const std::size_t i = gathers.size();
          core::Task t;
          t.resource = runner_id_;
          const auto key =
              std::make_tuple(static_cast<int>(kParamGather), a.stage, static_cast<int>(i), pipe.tensor, shard_key);
          const std::optional<core::Time> fixed = options_.collectives == CollectiveModel::kAnalytic
                                                      ? std::optional<core::Time>(units[u].gather)
                                                      : std::nullopt;
          t.route = instance(key, shard_participants, [&] {
            return sim_->collectives->add(hw::CollectiveKind::kAllGather, units[u].gather_bytes, shard_group,
                                          shard_participants, fixed, shard_copies);
          });
          TaskInfo gather{TaskKind::kParamAllGather, a, q, -1};
          gather.unit = static_cast<int>(u);
          gather.units = static_cast<int>(U);
          const core::TaskId id = add_task(t, gather);
          if (!first_[q][k]) first_[q][k] = id;
          last_[q][k] = id;
          if (last_gather_[q]) edges_.emplace_back(*last_gather_[q], id);
          last_gather_[q] = id;
          effect_of(id).allocate_at_start += static_cast<std::int64_t>(units[u].gather_bytes);
          h[u] = {id, add_gather(id, units[u].params), std::nullopt};
        }
      } else if (a.op == Op::kReshard) {
        // Each unit's last use in the window gives its parameters back.
        const workload::StageCost& c = costs_.stages[a.stage];
        std::vector<Held>& h = units_held(a.stage, c.shard_units.size());
        for (std::size_t u = 0; u < h.size(); ++u) {
          if (!h[u].gather) continue;
          if (!h[u].last_use) throw std::logic_error("RESHARD of a unit no action used");
          effect_of(*h[u].last_use).release_at_end += static_cast<std::int64_t>(c.shard_units[u].gather_bytes);
          h[u] = {};
        }
      } else if (a.op == Op::kSendF || a.op == Op::kSendB) {
        const workload::StageCost& c = costs_.stages[a.stage];
        const double bytes = a.op == Op::kSendF ? c.send_forward_bytes : c.send_backward_bytes;
        if (bytes <= 0.0) continue;  // nothing to move: the consumer waits on the producer directly
        const int peer = p * R + shape_.stage_rank[a.op == Op::kSendF ? a.stage + 1 : a.stage - 1];
        core::Task t;
        t.resource = network_id_;
        t.amount = bytes;
        const int from = sim_->gpu_of_rank[q], to = sim_->gpu_of_rank[peer];
        if (auto cached = route_of_pair_.find({q, peer}); cached != route_of_pair_.end()) {
          t.route = cached->second;
        } else if (symmetric()) {
          // The representative's transfer stands for every replica's and
          // tensor rank's: they share the links their paths have in common.
          std::vector<std::pair<int, int>> copies;
          for (int d = 0; d < plan_.dp; ++d) {
            for (int tt = 0; tt < plan_.tp; ++tt) {
              copies.emplace_back(plan_.gpu_of(r, d, tt), plan_.gpu_of(peer % R, d, tt));
            }
          }
          t.route = sim_->topology->shared_route(from, to, copies);
        } else {
          t.route = sim_->topology->route(from, to);
        }
        route_of_pair_[{q, peer}] = t.route;
        const core::TaskId id = add_task(t, {TaskKind::kTransfer, a, q, peer});
        first_[q][k] = last_[q][k] = id;
        if (auto it = last_transfer_.find({q, peer}); it != last_transfer_.end()) edges_.emplace_back(it->second, id);
        last_transfer_[{q, peer}] = id;
        if (options_.blocking_sends) unsent.push_back(id);
      } else if (a.op == Op::kReduceGrad) {
        const workload::StageCost& c = costs_.stages[a.stage];
        const std::size_t buckets = std::max<std::size_t>(1, c.grad_bucket_reduce.size());
        for (std::size_t j = 0; j < buckets; ++j) {
          TaskInfo bucket{TaskKind::kGradReduce, a, q, -1};
          bucket.part = static_cast<int>(j);
          bucket.parts = static_cast<int>(buckets);
          const double share = j < c.grad_bucket_share.size() ? c.grad_bucket_share[j] : 1.0;
          const core::Time time = j < c.grad_bucket_reduce.size() ? c.grad_bucket_reduce[j] : core::Time::zero();
          const double bytes = plan_.dp > 1 ? share * c.grad_bytes : 0.0;
          const core::TaskId id =
              collective_task(q, {kBucket, a.stage, static_cast<int>(j), pipe.tensor, full ? 0 : pipe.replica},
                              c.grad_reduce_kind, bytes, group, dp_participants, time, bucket, peers_groups);
          if (j == 0) first_[q][k] = id;
          last_[q][k] = id;
          // Bucket j is ready when part j of the stage's last backward ends
          // (or, not overlapped, when the rank's backward has).
          if (j < backward_parts[a.stage].size()) edges_.emplace_back(backward_parts[a.stage][j], id);
          if (!plan_.overlap.grad_reduce) after_backward.push_back(id);
        }
        if (c.embedding_grad_all_reduce > core::Time::zero()) {
          // The first and last stages hold the tied embedding; both take part.
          const int first_rank = shape_.stage_rank.front(), last_rank = shape_.stage_rank.back();
          std::vector<std::vector<int>> copies;
          if (symmetric()) {
            for (int d = 0; d < plan_.dp; ++d) {
              for (int tt = 0; tt < plan_.tp; ++tt) {
                if (d || tt) copies.push_back({plan_.gpu_of(first_rank, d, tt), plan_.gpu_of(last_rank, d, tt)});
              }
            }
          }
          const core::TaskId id = collective_task(
              q, {kEmbedding, 0, 0, pipe.tensor, pipe.replica}, hw::CollectiveKind::kAllReduce, c.embedding_grad_bytes,
              {gpu(first_rank, pipe), gpu(last_rank, pipe)}, 2, c.embedding_grad_all_reduce,
              {TaskKind::kEmbeddingAllReduce, a, q, -1}, copies);
          last_[q][k] = id;
        }
      } else if (a.op == Op::kOptimizer) {
        core::Time step;
        for (int s : stages_of_rank_[r]) step += costs_.stages[s].optimizer_step;
        const core::TaskId id = compute_task(q, step, {TaskKind::kOptimizer, a, q, -1});
        first_[q][k] = last_[q][k] = id;
        if (barrier) edges_.emplace_back(*barrier, id);
        // ZeRO-1/2: each replica updated its shard; gather the full parameters.
        for (int s : stages_of_rank_[r]) {
          const workload::StageCost& c = costs_.stages[s];
          // Overlapped, the gather runs under the next forward (above).
          if (c.param_all_gather <= core::Time::zero() || !c.param_bucket_gather.empty()) continue;
          const core::TaskId gather = collective_task(
              q, {kGather, s, 0, pipe.tensor, full ? 0 : pipe.replica}, hw::CollectiveKind::kAllGather, c.param_bytes,
              group, dp_participants, c.param_all_gather, {TaskKind::kParamAllGather, {Op::kOptimizer, s, 0}, q, -1},
              peers_groups);
          edges_.emplace_back(id, gather);
        }
      }
    }
    if (last_compute) {
      for (core::TaskId reduce : after_backward) edges_.emplace_back(*last_[q][*last_compute], reduce);
    }
  }
}

void Lowering::wire_dependencies(int p) {
  const int R = shape_.ranks;
  // Where each send sits, to find what a receive waits for: flat tables
  // indexed by (op, stage, micro-batch) and (rank, index), not maps, as a
  // sweep lowers thousands of plans.
  const int S = shape_.stages, M = shape_.microbatches;
  auto slot = [&](Op op, int stage, int mb) -> std::size_t {
    if (stage < 0 || stage >= S || mb < 0 || mb >= M) throw std::out_of_range("no such send");
    return (static_cast<std::size_t>(op == Op::kSendB) * S + stage) * M + mb;
  };
  std::vector<std::optional<schedule::ActionRef>> sends(2 * static_cast<std::size_t>(S) * M);
  for (int r = 0; r < R; ++r) {
    for (std::size_t k = 0; k < program_.ranks[r].size(); ++k) {
      const Action& a = program_.ranks[r][k];
      if (a.op == Op::kSendF || a.op == Op::kSendB) sends[slot(a.op, a.stage, a.microbatch)] = schedule::ActionRef{r, static_cast<int>(k)};
    }
  }
  // A receive stands for its send; a send without a transfer for what it sends.
  auto as_send = [&](schedule::ActionRef ref) {
    const Action& a = program_.ranks[ref.rank][ref.index];
    if (a.op != Op::kRecvF && a.op != Op::kRecvB) return ref;
    const auto [op, stage, mb] = matching_send(a);
    const auto& found = sends[slot(op, stage, mb)];
    if (!found) throw std::out_of_range("a receive without its send");
    return *found;
  };
  // Free sends: (rank, index) -> producer.
  std::vector<std::vector<std::optional<core::TaskId>>> producer_of_send(R);
  for (int r = 0; r < R; ++r) producer_of_send[r].resize(program_.ranks[r].size());
  for (const schedule::Dependency& d : deps_) {
    const Action& after = program_.ranks[d.after.rank][d.after.index];
    if ((after.op == Op::kSendF || after.op == Op::kSendB) && !last_[p * R + d.after.rank][d.after.index]) {
      const schedule::ActionRef before = as_send(d.before);
      producer_of_send[d.after.rank][d.after.index] = *last_[p * R + before.rank][before.index];
    }
  }
  auto exit_of = [&](schedule::ActionRef ref) -> core::TaskId {
    ref = as_send(ref);
    if (const auto& t = last_[p * R + ref.rank][ref.index]) return *t;
    const auto& producer = producer_of_send[ref.rank][ref.index];
    if (!producer) throw std::out_of_range("a send with nothing to send");
    return *producer;
  };
  auto entry_of = [&](schedule::ActionRef ref) -> std::optional<core::TaskId> {
    ref = as_send(ref);
    return first_[p * R + ref.rank][ref.index];
  };
  for (const schedule::Dependency& d : deps_) {
    const Action& after = program_.ranks[d.after.rank][d.after.index];
    const Action& before = program_.ranks[d.before.rank][d.before.index];
    if (after.op == Op::kReduceGrad && schedule::is_compute(before.op)) continue;  // wired bucket by bucket
    const core::TaskId from = exit_of(d.before);
    const std::optional<core::TaskId> to = entry_of(d.after);
    if (!to || from == *to) continue;
    edges_.emplace_back(from, *to);
  }
}

}  // namespace

void apply_link_faults(hw::Topology& topology, const std::vector<LinkFault>& faults) {
  // One entry per link: a second would leave which one holds to the order.
  std::unordered_map<hw::LinkId, const LinkFault*> fault_of;
  for (const LinkFault& f : faults) {
    try {
      for (const hw::LinkId l : topology.links_named(f.link)) {
        const auto [it, fresh] = fault_of.emplace(l, &f);
        if (!fresh) {
          throw std::invalid_argument(topology.link_name(l) + " is already given at " + it->second->where +
                                      " (one entry per link)");
        }
      }
      if (f.failed) {
        topology.fail(f.link);
      } else {
        topology.degrade(f.link, f.factor);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(f.where + ".link: " + e.what());
    }
  }
}

std::int64_t tensor_capacity_bytes(const hw::GpuSpec& gpu, std::int64_t cuda_context_bytes) {
  return std::max<std::int64_t>(0, static_cast<std::int64_t>(gpu.memory_bytes()) - cuda_context_bytes);
}

std::unique_ptr<Simulation> lower(const schedule::Program& program, const schedule::Shape& shape,
                                  const std::vector<schedule::Dependency>& deps, const workload::StageCosts& costs,
                                  const hw::ClusterSpec& cluster, const workload::Plan& plan, const Options& options) {
  return Lowering(program, shape, deps, costs, cluster, plan, options).build();
}

void run(Simulation& sim, core::TaskObserver* observer, const std::function<void(std::size_t, std::size_t)>& progress) {
  core::Engine engine(sim.graph);
  if (progress) engine.set_progress(progress);
  for (auto& s : sim.streams) s->set_id(engine.add_resource(*s));
  const core::ResourceId completion = engine.add_resource(sim.network);
  const core::ResourceId timers = engine.add_resource(sim.network);
  sim.network.set_ids(completion, timers);
  sim.collectives->set_id(engine.add_resource(*sim.collectives));
  engine.add_observer(sim.memory);
  if (observer != nullptr) engine.add_observer(*observer);
  sim.timeline = engine.run();
}

}  // namespace trainsim::lower
