// Each rank's actions into tasks, rank by rank (RankLowering,
// rank_lowering.hpp): transfers, collectives, ZeRO-3's gathers and frees,
// the optimizer step; compute actions in lower_compute.cpp.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "lower/a2a_pairs.hpp"
#include "lower/rank_lowering.hpp"

namespace trainsim::lower::detail {

Lowering::PipelineKeys::PipelineKeys(const Lowering& lowering, int pipeline)
    : p(pipeline),
      pipe(lowering.pipelines_[pipeline]),
      R(lowering.shape_.ranks),
      full(!lowering.symmetric()),
      dp_participants(full ? lowering.plan_.replicas() : 1),
      shard_participants(full ? lowering.sharding_size(Sharding::kShard) : 1),
      replica_participants(full ? lowering.sharding_size(Sharding::kReplicate) : 1),
      shard_key(full ? lowering.sharding_index(pipe.replica, Sharding::kShard) : pipe.replica),
      replica_key(full ? lowering.sharding_index(pipe.replica, Sharding::kReplicate) : pipe.replica),
      experts_replicated(lowering.plan_.expert_replicas() > 1 && lowering.has_experts()),
      edp(lowering.edp_index(pipe.replica, pipe.tensor)),
      edp_key(full ? edp : 0),
      edp_participants(full ? lowering.plan_.expert_replicas() : 1),
      expert_m(lowering.plan_.expert_shard_group_size()),
      experts_sharded(expert_m > 1 && lowering.has_experts()),
      edp_place_of_gpu(lowering.edp_place(pipe.replica, pipe.tensor)),
      expert_chunk(edp_place_of_gpu / expert_m),
      expert_place(edp_place_of_gpu % expert_m),
      expert_shard_key(full ? edp * lowering.plan_.shard_replicas() + expert_chunk : 0),
      expert_replica_key(full ? edp * expert_m + expert_place : 0),
      expert_shard_participants(full ? expert_m : 1),
      ep_flows(lowering.options_.collectives == CollectiveModel::kFlow &&
               std::any_of(lowering.costs_.stages.begin(), lowering.costs_.stages.end(),
                           [](const workload::StageCost& c) {
                             return !c.ep_forward_collectives.empty() || !c.ep_backward_collectives.empty();
                           })),
      ep_id(lowering.ep_index(pipe.replica, pipe.tensor)),
      etp_id(lowering.etp_index(pipe.replica, pipe.tensor)),
      ep_key(full ? ep_id : 0),
      etp_key(full ? etp_id : 0),
      ep_participants(full ? lowering.plan_.ep : 1),
      etp_participants(full ? lowering.plan_.etp : 1) {}

Lowering::RankLowering::RankLowering(Lowering& lowering, const PipelineKeys& keys, int rank)
    : PipelineKeys(keys),
      lw(lowering),
      r(rank),
      q(p * R + rank),
      actions(lowering.program_.ranks[rank]),
      last_backward(static_cast<std::size_t>(lowering.shape_.stages), kNone),
      first_forward(static_cast<std::size_t>(lowering.shape_.stages), kNone),
      first_backward(static_cast<std::size_t>(lowering.shape_.stages), kNone),
      partner(lowering.plan_.overlap.moe_a2a ? lower::a2a_partners(actions) : std::vector<int>(actions.size(), -1)),
      backward_parts(lowering.shape_.stages),
      train_of_stage(static_cast<std::size_t>(lowering.shape_.stages), 0),
      peers_groups(lowering.dp_copies(rank)),  // once per rank, not per bucket
      group(lowering.dp_group(rank, pipe.tensor)),
      shard_group(lowering.sharding_group(rank, pipe.tensor, pipe.replica, Sharding::kShard)),
      shard_copies(lowering.sharding_copies(rank, Sharding::kShard)),
      replicated(lowering.plan_.zero_stage == 3 && lowering.plan_.shard_replicas() > 1),
      replica_group(replicated ? lowering.sharding_group(rank, pipe.tensor, pipe.replica, Sharding::kReplicate)
                               : std::vector<int>{}),
      replica_copies(replicated ? lowering.sharding_copies(rank, Sharding::kReplicate)
                                : std::vector<std::vector<int>>{}),
      dp{group, peers_groups},
      shard{shard_group, shard_copies},
      replica{replica_group, replica_copies},
      expert_group(experts_replicated ? lowering.edp_group(rank, edp) : std::vector<int>{}),
      expert_copies(experts_replicated ? lowering.edp_copies(rank, edp) : std::vector<std::vector<int>>{}),
      experts{expert_group, expert_copies},
      expert_hsdp(replicated && lowering.has_experts()),
      expert_shard_members(expert_hsdp ? lowering.expert_shard_group(rank, edp, expert_chunk) : std::vector<int>{}),
      expert_shard_copies(expert_hsdp ? lowering.expert_sharding_copies(rank, edp, expert_chunk, Sharding::kShard)
                                      : std::vector<std::vector<int>>{}),
      expert_replica_members(expert_hsdp ? lowering.expert_replica_group(rank, edp, expert_place) : std::vector<int>{}),
      expert_replica_copies(expert_hsdp
                                ? lowering.expert_sharding_copies(rank, edp, expert_place, Sharding::kReplicate)
                                : std::vector<std::vector<int>>{}),
      hsdp_expert_shards{expert_shard_members, expert_shard_copies},
      expert_shards(expert_hsdp ? hsdp_expert_shards : experts),
      expert_replicas{expert_replica_members, expert_replica_copies},
      ep_members(ep_flows ? lowering.ep_group(rank, ep_id) : std::vector<int>{}),
      etp_members(ep_flows ? lowering.etp_group(rank, etp_id) : std::vector<int>{}),
      ep_copies(ep_flows ? lowering.expert_group_copies(rank, ep_id, false) : std::vector<std::vector<int>>{}),
      etp_copies(ep_flows ? lowering.expert_group_copies(rank, etp_id, true) : std::vector<std::vector<int>>{}),
      ep_rank_group{ep_members, ep_copies},
      etp_rank_group{etp_members, etp_copies},
      held(static_cast<std::size_t>(lowering.shape_.stages)),
      one_queue(lowering.sim_->shard_queue),
      queue(lowering.shard_queue_),
      expert_queue(lowering.expert_queue_),
      expert_scatter_queue(one_queue ? lowering.expert_queue_ : lowering.expert_scatter_queue_),
      prefetch({static_cast<std::size_t>(lowering.plan_.fsdp_prefetch), lowering.plan_.fsdp_prefetch_params,
                lowering.plan_.fsdp_max_live_params},
               lowering.edges_, queue, expert_queue) {
  lw.first_[q].resize(actions.size());
  lw.last_[q].resize(actions.size());
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const auto stage = static_cast<std::size_t>(actions[k].stage);
    if (schedule::is_backward_end(actions[k].op)) {
      last_backward[stage] = k;
      if (first_backward[stage] == kNone) first_backward[stage] = k;
    }
    if (actions[k].op == Op::kForward && first_forward[stage] == kNone) first_forward[stage] = k;
    if (schedule::is_compute(actions[k].op)) last_compute = k;
  }
}

void Lowering::RankLowering::run() {
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const Op op = actions[k].op;
    if (schedule::is_compute(op)) {
      compute(k);
    } else if (op == Op::kUnshard) {
      unshard(k);
    } else if (op == Op::kReshard) {
      reshard(k);
    } else if (op == Op::kSendF || op == Op::kSendB) {
      send(k);
    } else if (op == Op::kReduceGrad) {
      reduce_grad(k);
    } else if (op == Op::kOptimizer) {
      optimizer(k);
    }
  }
  if (last_compute) {
    for (core::TaskId reduce : after_backward) lw.edges_.emplace_back(*lw.last_[q][*last_compute], reduce);
  }
  queue.chain(lw.edges_);
  expert_queue.chain(lw.edges_);
  lw.expert_scatter_queue_.chain(lw.edges_);  // empty where the scatters share the gathers' group
}

std::size_t Lowering::RankLowering::issued() const { return lw.compute_order_[q].size(); }

std::vector<Lowering::RankLowering::Held>& Lowering::RankLowering::units_held(int stage, std::size_t units) {
  std::vector<Held>& h = held[static_cast<std::size_t>(stage)];
  if (h.size() != units) h.resize(units);
  return h;
}

std::size_t Lowering::RankLowering::queue_experts(IssueQueue& on, const Tasks& t, std::size_t point, IssueHook hook) {
  return t.last != t.first ? on.add(t.last, point, hook) : kNoItem;
}

Lowering::RankLowering::Tasks Lowering::RankLowering::dp_collectives(
    std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes, core::Time whole,
    std::optional<core::Time> experts_time, const TaskInfo& info, CommStream stream, core::Time host_copy) {
  const double share = lw.costs_.stages[static_cast<std::size_t>(stage)].expert_share();
  const bool split = share > 0.0 && experts_replicated && experts_time;
  Tasks t{};
  bool made = false;
  if (!split || lw.plan_.replicas() > 1) {
    t.first = t.last =
        lw.collective_task(q, {keys.first, stage, index, pipe.tensor, full ? 0 : pipe.replica}, kind,
                        bytes * (1.0 - share), dp, dp_participants, split ? whole - *experts_time : whole, info,
                        stream, 1.0, split ? core::Time::zero() : host_copy);
    made = true;
  }
  if (split) {
    TaskInfo part = info;
    part.experts = true;
    // (Alone, it takes the whole time: the host copy was the dense part's.)
    t.last = lw.collective_task(q, {keys.second, stage, index, edp_key, 0}, kind, bytes * share, experts,
                             edp_participants, made ? *experts_time : whole, part, stream, 1.0, host_copy);
    if (!made) t.first = t.last;
  }
  return t;
}

Lowering::RankLowering::Tasks Lowering::RankLowering::unit_collectives(
    std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes, core::Time whole,
    double expert_bytes, core::Time experts_time, const TaskInfo& info, CommStream stream, core::Time host_copy) {
  const bool split = lw.options_.collectives == CollectiveModel::kFlow && expert_bytes > 0.0;
  const bool two = split && experts_sharded;
  Tasks t{};
  t.first = t.last = lw.collective_task(q, {keys.first, stage, index, pipe.tensor, shard_key}, kind,
                                     split ? bytes - expert_bytes : bytes, shard, shard_participants,
                                     split ? whole - experts_time : whole, info, stream, 1.0,
                                     two ? core::Time::zero() : host_copy);
  if (two) {
    TaskInfo part = info;
    part.experts = true;
    t.last = lw.collective_task(q, {keys.second, stage, index, expert_shard_key, 0}, kind, expert_bytes, expert_shards,
                             expert_shard_participants, experts_time, part, CommStream::kUnordered, 1.0, host_copy);
    lw.edges_.emplace_back(t.first, t.last);
  }
  return t;
}

void Lowering::RankLowering::unshard(std::size_t k) {
  const Action& a = actions[k];
  // ZeRO-3: gather the window's units that are not held, on a stream
  // of their own, in the order the window's first action uses them;
  // only the action's own unit where it names one (the program then
  // has an UNSHARD a unit, in that order).
  const workload::StageCost& c = lw.costs_.stages[a.stage];
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
    if (a.unit() >= 0 && u != static_cast<std::size_t>(a.unit())) continue;
    if (h[u].gather) continue;  // still held (parallel.reshard_after_forward = false)
    TaskInfo gather{TaskKind::kParamAllGather, a, q, -1};
    gather.unit = static_cast<int>(u);
    gather.units = static_cast<int>(U);
    const Tasks gathered = unit_collectives(
        {kParamGather, kUnitGatherExperts}, a.stage, static_cast<int>(prefetch.size()),
        hw::CollectiveKind::kAllGather, units[u].gather_bytes, units[u].gather, units[u].gather_expert_bytes,
        units[u].gather_experts, gather, one_queue ? CommStream::kUnordered : CommStream::kGathers,
        units[u].gather_host_copy);
    const core::TaskId id = gathered.first;
    if (!lw.first_[q][k]) lw.first_[q][k] = id;
    lw.last_[q][k] = gathered.last;
    lw.effect_of(id, q).allocate_at_start += static_cast<std::int64_t>(units[u].gather_bytes);
    const std::size_t item = one_queue ? queue.add(id, issued(), IssueHook::kBeforeNextPiece) : kNoItem;
    const std::size_t expert_item = queue_experts(expert_queue, gathered, issued(), IssueHook::kBeforeNextPiece);
    // Held from the gather's end (its last task): what uses the unit waits for it.
    h[u] = {gathered.last, prefetch.add(id, gathered.last, units[u].params, item, expert_item), std::nullopt};
  }
}

void Lowering::RankLowering::reshard(std::size_t k) {
  const Action& a = actions[k];
  // Each unit's last use in the window gives its parameters back (only
  // the action's own unit's, where it names one).
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  std::vector<Held>& h = units_held(a.stage, c.shard_units.size());
  for (std::size_t u = 0; u < h.size(); ++u) {
    if (a.unit() >= 0 && u != static_cast<std::size_t>(a.unit())) continue;
    if (!h[u].gather) continue;
    if (!h[u].last_use) throw std::logic_error("RESHARD of a unit no action used");
    lw.effect_of(*h[u].last_use, q).release_at_end += static_cast<std::int64_t>(c.shard_units[u].gather_bytes);
    h[u] = {};
  }
}

void Lowering::RankLowering::send(std::size_t k) {
  const Action& a = actions[k];
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  const double bytes = a.op == Op::kSendF ? c.send_forward_bytes : c.send_backward_bytes;
  if (bytes <= 0.0) return;  // nothing to move: the consumer waits on the producer directly
  const int peer = p * R + lw.shape_.stage_rank[a.op == Op::kSendF ? a.stage + 1 : a.stage - 1];
  core::Task t;
  t.resource = lw.network_id_;
  t.amount = bytes;
  std::vector<PeerLink>& peers = lw.peer_links_[static_cast<std::size_t>(q)];
  const auto known = std::find_if(peers.begin(), peers.end(), [&](const PeerLink& l) { return l.peer == peer; });
  if (known != peers.end()) {
    t.route = known->route;
  } else if (lw.symmetric()) {
    // The representative's transfer stands for every replica's and
    // tensor rank's: they share the links their paths have in common.
    std::vector<std::pair<int, int>> copies;
    for (int d = 0; d < lw.plan_.replicas(); ++d) {
      for (int tt = 0; tt < lw.plan_.tp; ++tt) {
        copies.emplace_back(lw.plan_.gpu_of(r, d, tt), lw.plan_.gpu_of(peer % R, d, tt));
      }
    }
    t.route = lw.sim_->topology->shared_route(lw.sim_->gpu_of_rank[q], lw.sim_->gpu_of_rank[peer], copies);
  } else {
    t.route = lw.sim_->topology->route(lw.sim_->gpu_of_rank[q], lw.sim_->gpu_of_rank[peer]);
  }
  const core::TaskId id = lw.add_task(t, {TaskKind::kTransfer, a, q, peer});
  lw.first_[q][k] = lw.last_[q][k] = id;
  // Transfers between two GPUs run in the order they are issued.
  if (known != peers.end()) {
    lw.edges_.emplace_back(known->last_transfer, id);
    known->last_transfer = id;
  } else {
    peers.push_back({peer, t.route, id});
  }
  if (lw.options_.blocking_sends) unsent.push_back(id);
}

void Lowering::RankLowering::reduce_grad(std::size_t k) {
  const Action& a = actions[k];
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  const std::size_t buckets = std::max<std::size_t>(1, c.grad_bucket_reduce.size());
  const std::size_t train = train_of_stage[static_cast<std::size_t>(a.stage)];
  if (train > 0) {
    // The train's reductions as one collective (hw/bucket_train.hpp),
    // after its pieces; the collective before it on the stream has
    // ended when the train starts, or the train is refused.
    hw::BucketTrain& t = lw.sim_->trains[train - 1];
    t.after = lw.last_collective_[q];
    const std::optional<core::TaskId>& before_after = lw.collective_before_last_[q];
    for (std::size_t i = 0; i + 1 < train && t.after; ++i) {
      if (lw.sim_->trains[i].reductions == t.after) t.after_train = static_cast<std::uint32_t>(i);
      if (before_after && lw.sim_->trains[i].reductions == before_after) t.beside_train = static_cast<std::uint32_t>(i);
    }
    if (t.after_train) {
      t.beside_train.reset();
    } else if (t.after) {
      lw.sim_->collectives->set_gate(lw.sim_->graph.task(*t.after).route, static_cast<std::uint32_t>(train - 1));
    }
    TaskInfo bucket{TaskKind::kGradReduce, a, q, -1};
    core::Time time;
    for (core::Time r : c.grad_bucket_reduce) time += r;
    const Tasks reduced = dp_collectives({kBucket, kBucketExperts}, a.stage, 0, c.grad_reduce_kind, c.grad_bytes,
                                         time, std::nullopt, bucket, CommStream::kCollectives);
    lw.sim_->collectives->set_train(lw.sim_->graph.task(reduced.first).route, static_cast<std::uint32_t>(train - 1));
    t.reductions = reduced.first;
    lw.first_[q][k] = lw.last_[q][k] = reduced.first;
    lw.edges_.emplace_back(backward_parts[a.stage].back(), reduced.first);
  }
  for (std::size_t j = 0; j < (train > 0 ? 0 : buckets); ++j) {
    TaskInfo bucket{TaskKind::kGradReduce, a, q, -1};
    bucket.part = static_cast<int>(j);
    bucket.parts = static_cast<int>(buckets);
    const double share = j < c.grad_bucket_share.size() ? c.grad_bucket_share[j] : 1.0;
    const core::Time time = j < c.grad_bucket_reduce.size() ? c.grad_bucket_reduce[j] : core::Time::zero();
    // Under ZeRO-3 the units' scatters carry every gradient: the
    // bucket moves nothing (its analytic time is zero too).
    const bool moves = lw.plan_.zero_stage < 3 && (lw.plan_.replicas() > 1 || experts_replicated);
    const double bytes = moves ? share * c.grad_bytes : 0.0;
    const Tasks reduced = dp_collectives(
        {kBucket, kBucketExperts}, a.stage, static_cast<int>(j), c.grad_reduce_kind, bytes, time,
        moves && j < c.grad_bucket_reduce_experts.size() ? std::optional(c.grad_bucket_reduce_experts[j])
                                                          : std::nullopt,
        bucket, CommStream::kCollectives,
        j < c.grad_bucket_host_copy.size() ? c.grad_bucket_host_copy[j] : core::Time::zero());
    if (j == 0) lw.first_[q][k] = reduced.first;
    lw.last_[q][k] = reduced.last;
    // Bucket j is ready when part j of the stage's last backward ends
    // (or, not overlapped, when the rank's backward has); a second part
    // follows the first on the stream.
    if (j < backward_parts[a.stage].size()) lw.edges_.emplace_back(backward_parts[a.stage][j], reduced.first);
    if (!lw.plan_.overlap.grad_reduce) after_backward.push_back(reduced.first);
  }
  if (c.embedding_grad_all_reduce > core::Time::zero()) {
    // The first and last stages hold the tied embedding; both take part.
    const int first_rank = lw.shape_.stage_rank.front(), last_rank = lw.shape_.stage_rank.back();
    const std::vector<int> ends{lw.gpu(first_rank, pipe), lw.gpu(last_rank, pipe)};
    const std::vector<std::vector<int>>& ends_copies = lw.rank_pair_copies(first_rank, last_rank);
    const core::TaskId id = lw.collective_task(
        q, {kEmbedding, 0, 0, pipe.tensor, pipe.replica}, hw::CollectiveKind::kAllReduce, c.embedding_grad_bytes,
        RankGroup{ends, ends_copies}, 2, c.embedding_grad_all_reduce, {TaskKind::kEmbeddingAllReduce, a, q, -1});
    lw.last_[q][k] = id;
  }
  if (c.copy_grad_all_reduce > core::Time::zero()) {
    // DualPipe: the stage and its copy in the other direction add their
    // reduced gradients, after both have reduced them (keyed by the layers both hold).
    const int copy_rank = lw.shape_.stage_rank[lw.shape_.copy_of(a.stage)];
    const int layers = a.stage % lw.shape_.pipeline_length();
    TaskInfo sum{TaskKind::kGradReduce, a, q, -1};
    sum.across_copies = true;
    const std::vector<int> both{lw.gpu(r, pipe), lw.gpu(copy_rank, pipe)};
    const std::vector<std::vector<int>>& both_copies = lw.rank_pair_copies(r, copy_rank);
    const core::TaskId id = lw.collective_task(
        q, {kCopyGrads, layers, 0, pipe.tensor, pipe.replica}, hw::CollectiveKind::kAllReduce, c.copy_grad_bytes,
        RankGroup{both, both_copies}, 2, c.copy_grad_all_reduce, sum);
    lw.last_[q][k] = id;
  }
}

void Lowering::RankLowering::optimizer(std::size_t k) {
  const Action& a = actions[k];
  core::Time step;
  for (int s : lw.stages_of_rank_[r]) step += lw.costs_.stages[s].optimizer_step;
  const core::TaskId id = lw.compute_task(q, step, {TaskKind::kOptimizer, a, q, -1});
  lw.first_[q][k] = lw.last_[q][k] = id;
  if (barrier) lw.edges_.emplace_back(*barrier, id);
  // ZeRO-1/2: each replica updated its shard; gather the full parameters.
  for (int s : lw.stages_of_rank_[r]) {
    const workload::StageCost& c = lw.costs_.stages[s];
    // Overlapped, the gather runs under the next forward (cut_into_pieces).
    if (c.param_all_gather <= core::Time::zero() || !c.param_bucket_gather.empty()) continue;
    const Tasks gather = dp_collectives(
        {kGather, kGatherExperts}, s, 0, hw::CollectiveKind::kAllGather, c.param_bytes, c.param_all_gather,
        c.expert_params > 0.0 ? std::optional(c.param_all_gather_experts) : std::nullopt,
        {TaskKind::kParamAllGather, {Op::kOptimizer, s, 0}, q, -1}, CommStream::kCollectives);
    lw.edges_.emplace_back(id, gather.first);
  }
}

void Lowering::lower_pipeline(int p) {
  const PipelineKeys keys(*this, p);
  for (int r = 0; r < keys.R; ++r) RankLowering(*this, keys, r).run();
}

}  // namespace trainsim::lower::detail
