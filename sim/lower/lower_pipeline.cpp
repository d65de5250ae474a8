// Each rank's actions into tasks: compute on the compute stream (cut into
// pieces by ZeRO-3 unit, gradient bucket or parameter bucket), transfers,
// collectives, ZeRO-3's gathers and frees, the optimizer step.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "lower/a2a_pairs.hpp"
#include "lower/gather_prefetch.hpp"
#include "lower/issue_queue.hpp"
#include "lower/lowering.hpp"
#include "schedule/check.hpp"
#include "workload/tp_overlap.hpp"

namespace trainsim::lower::detail {

namespace {

core::Time compute_duration(const Action& a, const workload::StageCost& c) {
  switch (a.op) {
    case Op::kForward: return c.forward;
    case Op::kBackward: return c.backward();
    case Op::kInputGrad: return c.input_grad;
    case Op::kWeightGrad: return c.weight_grad;
    default: return core::Time::zero();
  }
}

// The communication inside a compute action that blocks its stream: the
// forward's in F, the input gradient's in B and I (tensor-parallel
// collectives, the context-parallel exchange's exposed part, a MoE model's
// dispatch and combine), given as the stage's two figures.
core::Time comm_inside(const Action& a, core::Time forward, core::Time backward) {
  switch (a.op) {
    case Op::kForward: return forward;
    case Op::kBackward:
    case Op::kInputGrad: return backward;
    default: return core::Time::zero();
  }
}
core::Time ep_comm_inside(const Action& a, const workload::StageCost& c) {
  return comm_inside(a, c.ep_comm_forward, c.ep_comm_backward);
}

// Options::merge_bucket_trains: whether stage `c`'s gradient buckets run
// as a train (hw/bucket_train.hpp), where a train gives the times a task per
// bucket would: analytic collectives (a reduction's time known before it
// runs), one pipeline standing for all (one participant a collective), no
// straggler; one collective a bucket (no expert gradients), no ZeRO-3 unit,
// no parameter gathers on a stream of their own; B >= 3 buckets, the full
// ones alike, each reduction taking time. The stream checks the rest as the
// train runs.
bool merges_bucket_train(const Options& o, bool symmetric, bool param_gathers, const workload::StageCost& c) {
  if (!o.merge_bucket_trains || o.collectives != CollectiveModel::kAnalytic || !symmetric || !o.gpu_speed.empty() ||
      param_gathers) {
    return false;
  }
  const std::size_t B = c.grad_bucket_reduce.size();
  if (B < 3 || !c.grad_bucket_reduce_experts.empty() || c.sharded() || c.moe_layers > 0) return false;
  return c.grad_bucket_share[0] == c.grad_bucket_share[B - 2] &&
         c.grad_bucket_reduce[0] == c.grad_bucket_reduce[B - 2] && c.grad_bucket_reduce[0] > core::Time::zero() &&
         c.grad_bucket_reduce[B - 1] > core::Time::zero();
}

// options.moe_a2a_overlap: a forward and a backward run as one step, each
// one's exchanges under the other's compute, as Megatron-Core's combined
// 1F1B step and DeepSeek-V3's paired chunks run them (arXiv 2412.19437,
// Figure 4). Layer by layer the forward runs attention, dispatch, experts,
// combine, and the backward combine, experts, dispatch, attention; each
// exchange runs beside the other pass's compute that has no need of it:
//   forward's attention  | backward's combine
//   backward's experts    | forward's dispatch
//   forward's experts     | backward's dispatch
//   backward's attention  | forward's combine
// Each slot takes the longer of the two, plus the compute slowed while both
// run (the communication kernels take SMs: Overlap::compute_slowdown of
// the time they share). The pair's time is split between its two actions
// by their own times; what no compute covers is their exposed ep time.
struct PairedTime {
  core::Time duration;
  core::Time ep_exposed;
};
PairedTime paired_time(const Action& a, const workload::StageCost& ca, const Action& b, const workload::StageCost& cb,
                       double slowdown) {
  const bool a_forward = a.op == Op::kForward;
  const workload::StageCost::EpChunks& f = a_forward ? ca.ep_forward_chunks : cb.ep_forward_chunks;
  const workload::StageCost::EpChunks& w = a_forward ? cb.ep_backward_chunks : ca.ep_backward_chunks;
  double pair = 0.0, exposed = 0.0;
  auto slot = [&](double compute, double exchange) {
    pair += std::max(compute, exchange) + slowdown * std::min(compute, exchange);
    exposed += std::max(0.0, exchange - compute);
  };
  slot(f.rest, w.combine);
  slot(w.mlp, f.dispatch);
  slot(f.mlp, w.dispatch);
  slot(w.rest, f.combine);
  const double own = compute_duration(a, ca).to_seconds(), other = compute_duration(b, cb).to_seconds();
  const double share = own + other > 0.0 ? own / (own + other) : 0.5;
  return {core::Time::seconds(share * pair), core::Time::seconds(share * exposed)};
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

}  // namespace

void Lowering::lower_pipeline(int p) {
  const Pipeline& pipe = pipelines_[p];
  const int R = shape_.ranks;
  const bool full = !symmetric();
  const int dp_participants = full ? plan_.replicas() : 1;
  const int shard_participants = full ? sharding_size(Sharding::kShard) : 1;
  const int replica_participants = full ? sharding_size(Sharding::kReplicate) : 1;
  // Names a ZeRO-3 collective instance: the group's index in full fidelity.
  const int shard_key = full ? sharding_index(pipe.replica, Sharding::kShard) : pipe.replica;
  const int replica_key = full ? sharding_index(pipe.replica, Sharding::kReplicate) : pipe.replica;
  enum Kind {
    kBucket, kEmbedding, kGather, kBarrier, kParamGather, kGradScatter, kGradReplicate, kCopyGrads, kParamRegather,
    kBucketExperts, kGatherExperts, kParamGatherExperts, kEpExchange, kUnitGatherExperts, kGradScatterExperts,
    kGradReplicateExperts
  };
  // Whether MoE stages reduce and gather their routed experts' share over
  // an expert-data-parallel group of more than one GPU, and which group
  // (named by edp_index in full fidelity) this pipeline's GPUs are in.
  const bool experts_replicated = plan_.expert_replicas() > 1 && has_experts();
  const int edp = edp_index(pipe.replica, pipe.tensor);
  const int edp_key = full ? edp : 0;
  const int edp_participants = full ? plan_.expert_replicas() : 1;
  // ZeRO-3: the GPUs a unit's experts shard over (under HSDP the edp
  // group's part inside this GPU's shard group) and, under HSDP, the copies
  // of this GPU's expert shard across the shard groups.
  const int expert_m = plan_.expert_shard_group_size();
  const bool experts_sharded = expert_m > 1 && has_experts();
  const int edp_place_of_gpu = edp_place(pipe.replica, pipe.tensor);
  const int expert_chunk = edp_place_of_gpu / expert_m, expert_place = edp_place_of_gpu % expert_m;
  const int expert_shard_key = full ? edp * plan_.shard_replicas() + expert_chunk : 0;
  const int expert_replica_key = full ? edp * expert_m + expert_place : 0;
  const int expert_shard_participants = full ? expert_m : 1;
  // Flow collectives: MoE layers' dispatch and combine over the
  // expert-parallel group (or the expert-tensor group), as tasks.
  const bool ep_flows = options_.collectives == CollectiveModel::kFlow &&
                        std::any_of(costs_.stages.begin(), costs_.stages.end(), [](const workload::StageCost& c) {
                          return !c.ep_forward_collectives.empty() || !c.ep_backward_collectives.empty();
                        });
  const int ep_id = ep_index(pipe.replica, pipe.tensor), etp_id = etp_index(pipe.replica, pipe.tensor);
  const int ep_key = full ? ep_id : 0, etp_key = full ? etp_id : 0;
  const int ep_participants = full ? plan_.ep : 1, etp_participants = full ? plan_.etp : 1;

  for (int r = 0; r < R; ++r) {
    const int q = p * R + r;
    const auto& actions = program_.ranks[r];
    first_[q].resize(actions.size());
    last_[q].resize(actions.size());
    // By stage (kNone where the rank has none): the index of its last and
    // first backward-ending action and of its first forward.
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    const auto stages = static_cast<std::size_t>(shape_.stages);
    std::vector<std::size_t> last_backward(stages, kNone), first_forward(stages, kNone), first_backward(stages, kNone);
    std::optional<std::size_t> last_compute;   // the rank's last compute action
    for (std::size_t k = 0; k < actions.size(); ++k) {
      const auto stage = static_cast<std::size_t>(actions[k].stage);
      if (schedule::is_backward_end(actions[k].op)) {
        last_backward[stage] = k;
        if (first_backward[stage] == kNone) first_backward[stage] = k;
      }
      if (actions[k].op == Op::kForward && first_forward[stage] == kNone) first_forward[stage] = k;
      if (schedule::is_compute(actions[k].op)) last_compute = k;
    }
    const std::vector<int> partner = plan_.overlap.moe_a2a ? lower::a2a_partners(actions) : std::vector<int>(actions.size(), -1);
    // Overlap::grad_reduce off: the reductions wait for the rank's whole backward.
    std::vector<core::TaskId> after_backward;
    std::vector<std::vector<core::TaskId>> backward_parts(shape_.stages);
    // Per stage: its bucket train's number in sim_->trains plus one, or 0 (merges_bucket_train).
    std::vector<std::size_t> train_of_stage(static_cast<std::size_t>(shape_.stages), 0);
    const std::vector<std::vector<int>> peers_groups = dp_copies(r);  // once per rank, not per bucket
    const std::vector<int> group = dp_group(r, pipe.tensor);
    const std::vector<int> shard_group = sharding_group(r, pipe.tensor, pipe.replica, Sharding::kShard);
    const std::vector<std::vector<int>> shard_copies = sharding_copies(r, Sharding::kShard);
    const bool replicated = plan_.zero_stage == 3 && plan_.shard_replicas() > 1;
    const std::vector<int> replica_group =
        replicated ? sharding_group(r, pipe.tensor, pipe.replica, Sharding::kReplicate) : std::vector<int>{};
    const std::vector<std::vector<int>> replica_copies =
        replicated ? sharding_copies(r, Sharding::kReplicate) : std::vector<std::vector<int>>{};
    const RankGroup dp{group, peers_groups}, shard{shard_group, shard_copies}, replica{replica_group, replica_copies};
    const std::vector<int> expert_group = experts_replicated ? edp_group(r, edp) : std::vector<int>{};
    const std::vector<std::vector<int>> expert_copies =
        experts_replicated ? edp_copies(r, edp) : std::vector<std::vector<int>>{};
    const RankGroup experts{expert_group, expert_copies};
    const bool expert_hsdp = replicated && has_experts();
    const std::vector<int> expert_shard_members =
        expert_hsdp ? expert_shard_group(r, edp, expert_chunk) : std::vector<int>{};
    const std::vector<std::vector<int>> expert_shard_copies =
        expert_hsdp ? expert_sharding_copies(r, edp, expert_chunk, Sharding::kShard) : std::vector<std::vector<int>>{};
    const std::vector<int> expert_replica_members =
        expert_hsdp ? expert_replica_group(r, edp, expert_place) : std::vector<int>{};
    const std::vector<std::vector<int>> expert_replica_copies =
        expert_hsdp ? expert_sharding_copies(r, edp, expert_place, Sharding::kReplicate)
                    : std::vector<std::vector<int>>{};
    const RankGroup hsdp_expert_shards{expert_shard_members, expert_shard_copies};
    const RankGroup& expert_shards = expert_hsdp ? hsdp_expert_shards : experts;  // one group where it is edp's
    const RankGroup expert_replicas{expert_replica_members, expert_replica_copies};
    const std::vector<int> ep_members = ep_flows ? ep_group(r, ep_id) : std::vector<int>{};
    const std::vector<int> etp_members = ep_flows ? etp_group(r, etp_id) : std::vector<int>{};
    const std::vector<std::vector<int>> ep_copies =
        ep_flows ? expert_group_copies(r, ep_id, false) : std::vector<std::vector<int>>{};
    const std::vector<std::vector<int>> etp_copies =
        ep_flows ? expert_group_copies(r, etp_id, true) : std::vector<std::vector<int>>{};
    const RankGroup ep_rank_group{ep_members, ep_copies}, etp_rank_group{etp_members, etp_copies};
    int ep_exchanges = 0;  // per rank: names each exchange's collective
    // The exchange the rank's next compute piece waits for: the last after
    // the piece before it, in its action or (a forward's final combine) the
    // one before; the exchanges block the compute stream.
    std::optional<core::TaskId> after_exchange;
    // A stage's data-parallel collective (a gradient bucket's reduction, a
    // parameter gather) of `bytes` in all, `whole` its analytic time: on a
    // MoE stage whose experts have replicas, the dense parameters' share
    // over dp, then the routed experts' share over their
    // expert-data-parallel group (its time `experts_time`, StageCost's
    // *_experts), two tasks one after the other on `stream`; elsewhere one
    // task over dp, of the dense share where the experts have no replicas.
    // The first task and the last; a copy to the host inside `whole`
    // (offloading: `host_copy`) follows the last's data as flows.
    struct Tasks {
      core::TaskId first, last;
    };
    auto dp_collectives = [&](std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes,
                              core::Time whole, std::optional<core::Time> experts_time, const TaskInfo& info,
                              CommStream stream, core::Time host_copy = core::Time::zero()) {
      const double share = costs_.stages[static_cast<std::size_t>(stage)].expert_share();
      const bool split = share > 0.0 && experts_replicated && experts_time;
      Tasks t{};
      bool made = false;
      if (!split || plan_.replicas() > 1) {
        t.first = t.last =
            collective_task(q, {keys.first, stage, index, pipe.tensor, full ? 0 : pipe.replica}, kind,
                            bytes * (1.0 - share), dp, dp_participants, split ? whole - *experts_time : whole, info,
                            stream, 1.0, split ? core::Time::zero() : host_copy);
        made = true;
      }
      if (split) {
        TaskInfo part = info;
        part.experts = true;
        // (Alone, it takes the whole time: the host copy was the dense part's.)
        t.last = collective_task(q, {keys.second, stage, index, edp_key, 0}, kind, bytes * share, experts,
                                 edp_participants, made ? *experts_time : whole, part, stream, 1.0, host_copy);
        if (!made) t.first = t.last;
      }
      return t;
    };
    // ZeRO-3's collective of a unit (its gather or its gradients' scatter) of
    // `bytes` in all, `whole` its analytic time: with flow collectives a MoE
    // unit's routed experts' share (`expert_bytes`, its time `experts_time`)
    // runs over the expert-data-parallel group after the rest over the
    // sharding group, two tasks one after the other; none where the experts
    // have no replicas. The second is another group's: the caller queues it
    // on that group's queue (expert_queue), at the point the host issues the
    // first (one group's collectives run one at a time, in the order issued:
    // lower/issue_queue.hpp). Elsewhere one task of the whole time.
    auto unit_collectives = [&](std::pair<Kind, Kind> keys, int stage, int index, hw::CollectiveKind kind, double bytes,
                                core::Time whole, double expert_bytes, core::Time experts_time, const TaskInfo& info,
                                CommStream stream, core::Time host_copy) {
      const bool split = options_.collectives == CollectiveModel::kFlow && expert_bytes > 0.0;
      const bool two = split && experts_sharded;
      Tasks t{};
      t.first = t.last = collective_task(q, {keys.first, stage, index, pipe.tensor, shard_key}, kind,
                                         split ? bytes - expert_bytes : bytes, shard, shard_participants,
                                         split ? whole - experts_time : whole, info, stream, 1.0,
                                         two ? core::Time::zero() : host_copy);
      if (two) {
        TaskInfo part = info;
        part.experts = true;
        t.last = collective_task(q, {keys.second, stage, index, expert_shard_key, 0}, kind, expert_bytes, expert_shards,
                                 expert_shard_participants, experts_time, part, CommStream::kUnordered, 1.0, host_copy);
        edges_.emplace_back(t.first, t.last);
      }
      return t;
    };
    std::optional<core::TaskId> barrier;  // the tensor peers' meeting after the previous compute action
    std::vector<core::TaskId> unsent;     // options.blocking_sends: sends the next compute action waits for
    // ZeRO-3 by unit (workload::ShardUnit): per stage of this rank and unit,
    // its gather while the unit is held (from UNSHARD to RESHARD) and the
    // last compute part that used it.
    struct Held {
      std::optional<core::TaskId> gather;
      std::size_t index = 0;  // into `prefetch`
      std::optional<core::TaskId> last_use;
    };
    std::vector<std::vector<Held>> held(stages);  // by stage
    // ZeRO-3's gathers and scatters on the sharding group's one queue
    // (IssueQueue), in the order the host issues them; unless the plan gives
    // the scatters a group of their own (Simulation::shard_queue false),
    // when the gathers queue on a stream of their own and the scatters on the
    // communication stream.
    const bool one_queue = sim_->shard_queue;
    IssueQueue& queue = shard_queue_;
    // The experts' parts (unit_collectives) on their group's queue; with the
    // scatters on a group of their own, the experts' scatters on another.
    IssueQueue& expert_queue = expert_queue_;
    IssueQueue& expert_scatter_queue = one_queue ? expert_queue_ : expert_scatter_queue_;
    constexpr std::size_t kNoItem = GatherPrefetch::kNoItem;
    // The rank's gathers in issue order, each waiting for an earlier one's
    // first use as the plan's prefetch rules say (FSDP's depth, DeepSpeed's
    // prefetch bucket and live-parameter limit).
    GatherPrefetch prefetch({static_cast<std::size_t>(plan_.fsdp_prefetch), plan_.fsdp_prefetch_params,
                             plan_.fsdp_max_live_params},
                            edges_, queue, expert_queue);
    // A unit collective's experts' part, queued as the host issues its first.
    auto queue_experts = [&](IssueQueue& on, const Tasks& t, std::size_t point, IssueHook hook) {
      return t.last != t.first ? on.add(t.last, point, hook) : kNoItem;
    };
    auto issued = [&] { return compute_order_[q].size(); };
    int scatters = 0;  // per rank: names each gradient scatter's collective
    int regathers = 0;  // and each second gather after a recomputation
    auto units_held = [&](int stage, std::size_t units) -> std::vector<Held>& {
      std::vector<Held>& h = held[static_cast<std::size_t>(stage)];
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
        core::Time ep = ep_comm_inside(a, c);
        if (partner[k] >= 0) {
          const Action& other = actions[static_cast<std::size_t>(partner[k])];
          const PairedTime paired = paired_time(a, c, other, costs_.stages[other.stage], plan_.overlap.compute_slowdown);
          duration = paired.duration;
          ep = paired.ep_exposed;
        }
        if (a.op == Op::kWeightGrad && merged_into_[r][k] >= 0) duration = core::Time::zero();
        if (a.op == Op::kWeightGrad && concat_end_[r][k]) duration = c.weight_grad_concat;
        // Flow collectives: a MoE action's dispatch and combine run as
        // collectives of their own between its compute pieces (a pass the
        // A2A overlap pairs keeps them inside, as do DeepEP's).
        const std::vector<workload::StageCost::EpCollective>& ep_collectives =
            a.op == Op::kForward ? c.ep_forward_collectives : c.ep_backward_collectives;
        const bool ep_tasks = options_.collectives == CollectiveModel::kFlow && partner[k] < 0 &&
                              (a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad) &&
                              c.moe_layers > 0 && !c.sharded() && !ep_collectives.empty() &&
                              ep > core::Time::zero();
        if (ep_tasks) {
          duration = std::max(core::Time::zero(), duration - ep);
          ep = core::Time::zero();
        }
        // The stage's first and last backward-ending actions on this rank.
        const bool backward_end = schedule::is_backward_end(a.op);
        const bool first_of_stage = backward_end && first_backward[static_cast<std::size_t>(a.stage)] == k;
        const bool last_of_stage = backward_end && last_backward[static_cast<std::size_t>(a.stage)] == k;
        const bool split = plan_.overlap.grad_reduce && last_of_stage;
        // Overlap::param_gather: the stage's first forward runs bucket by
        // bucket, each after its own gather of the updated parameters.
        const bool by_bucket_gather = !c.param_bucket_gather.empty() && a.op == Op::kForward &&
                                      first_forward[static_cast<std::size_t>(a.stage)] == k;
        const bool needs_params = a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad;
        const core::Time tp = comm_inside(a, c.tp_comm_forward, c.tp_comm_backward);
        const core::Time cp = comm_inside(a, c.cp_comm_forward, c.cp_comm_backward);
        // The parts this action's gradients are ready after, unit by unit
        // (for ZeRO-3's scatters): every unit's after the whole action when
        // it is not cut by unit (a W).
        std::vector<core::TaskId>& unit_part = unit_part_;
        unit_part.assign(c.shard_units.size(), core::TaskId{});
        std::vector<core::TaskId>& unit_head = unit_head_;
        unit_head.assign(c.shard_units.size(), core::TaskId{});
        std::vector<std::size_t>& unit_part_point = unit_part_point_;  // the compute tasks issued up to unit_part's
        unit_part_point.assign(c.shard_units.size(), 0);
        // The pieces the action runs as, each a share of its time: under
        // ZeRO-3 one per unit (forward in order, backward in reverse), each
        // after its unit's gather; a stage's last backward one per gradient
        // bucket; else the whole action. The last piece takes the rounding.
        std::vector<Piece>& pieces = pieces_;  // scratch kept between actions
        pieces.clear();
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
        } else if (split && merges_bucket_train(options_, symmetric(), plan_.overlap.param_gather, c)) {
          // The first bucket's piece, then the others' as one train.
          hw::BucketTrain train;
          train.buckets = static_cast<std::uint32_t>(c.grad_bucket_reduce.size());
          train.piece = core::Time::seconds(duration.to_seconds() * c.grad_bucket_share[0]);
          train.last_piece = std::max(core::Time::zero(),
                                      duration - train.piece * static_cast<std::int64_t>(train.buckets - 1));
          train.reduce = c.grad_bucket_reduce.front();
          train.last_reduce = c.grad_bucket_reduce.back();
          train.slowed_speed = Interference::speed_beside_collectives(options_.comm_slowdown);
          sim_->trains.push_back(train);
          train_of_stage[static_cast<std::size_t>(a.stage)] = sim_->trains.size();
          pieces.push_back({c.grad_bucket_share[0], -1});
          Piece rest{1.0 - c.grad_bucket_share[0], -1};
          rest.train = true;
          pieces.push_back(rest);
        } else if (split) {
          for (double share : c.grad_bucket_share) pieces.push_back({share, -1});
        } else if (by_bucket_gather) {
          // Buckets in the order the forward uses them; each piece's share of
          // the time is its bucket's share of the parameters.
          const std::size_t B = c.param_bucket_gather.size();
          for (std::size_t j = 0; j < B; ++j) {
            const double share = c.grad_bucket_share[B - 1 - j];
            TaskInfo gather{TaskKind::kParamAllGather, Action::of_unit(Op::kUnshard, a.stage, -1), q, -1};
            gather.part = static_cast<int>(j);
            gather.parts = static_cast<int>(B);
            const Tasks gathered = dp_collectives(
                {kParamGather, kParamGatherExperts}, a.stage, static_cast<int>(prefetch.size()),
                hw::CollectiveKind::kAllGather, share * c.param_bytes, c.param_bucket_gather[j],
                j < c.param_bucket_gather_experts.size() ? std::optional(c.param_bucket_gather_experts[j]) : std::nullopt,
                gather, CommStream::kGathers);
            pieces.push_back({share, -1, prefetch.add(gathered.first, gathered.last, share * c.params, kNoItem, kNoItem)});
          }
        }
        if (pieces.empty()) pieces.push_back({1.0, -1});
        if (ep_tasks) {
          // Each MoE layer's exchanges where the pass runs them: forward,
          // attention, dispatch, experts, combine; backward (layers in
          // reverse), the recomputation's dispatch and combine on a layer
          // recomputed, then combine, experts, dispatch, attention. Each
          // layer takes an equal share of the compute, cut as the stage's
          // chunks cut theirs.
          const bool forward = a.op == Op::kForward;
          const workload::StageCost::EpChunks& ch = forward ? c.ep_forward_chunks : c.ep_backward_chunks;
          const double cut = ch.rest + ch.mlp > 0.0 ? (forward ? ch.rest : ch.mlp) / (ch.rest + ch.mlp) : 0.0;
          const int M = c.moe_layers;
          ep_points_.clear();
          for (int l = 0; l < M; ++l) {
            const double from = static_cast<double>(l) / M, to = static_cast<double>(l + 1) / M;
            if (forward) {
              ep_points_.push_back({from + cut * (to - from), l, true, false});
              ep_points_.push_back({to, l, false, false});
            } else {
              // The stage's first moe_layers_redone layers are recomputed:
              // the last ones the backward reaches.
              if (l >= M - c.moe_layers_redone && !c.ep_redo_collectives.empty()) {
                ep_points_.push_back({from, l, true, true});
                ep_points_.push_back({from, l, false, true});
              }
              ep_points_.push_back({from, l, false, false});
              ep_points_.push_back({from + cut * (to - from), l, true, false});
            }
          }
          cut_at_exchanges(pieces);
        }
        std::vector<Held>* h = by_unit ? &units_held(a.stage, c.shard_units.size()) : nullptr;
        core::Time done, tp_done, cp_done, ep_done;
        for (std::size_t j = 0; j < pieces.size(); ++j) {
          const bool last = j + 1 == pieces.size();
          const double share = pieces[j].share;
          // The last piece takes what is left, never less than nothing: the
          // other pieces each round to a picosecond, and a last share of
          // (nearly) zero (a ZeRO-3 unit without an input gradient, such as
          // the embedding's) would otherwise be left a few picoseconds below.
          const auto rest = [](core::Time total, core::Time so_far) {
            return std::max(core::Time::zero(), total - so_far);
          };
          const core::Time d = last ? rest(duration, done) : core::Time::seconds(duration.to_seconds() * share);
          const core::Time tp_part = last ? rest(tp, tp_done) : core::Time::seconds(tp.to_seconds() * share);
          const core::Time cp_part = last ? rest(cp, cp_done) : core::Time::seconds(cp.to_seconds() * share);
          const core::Time ep_part = last ? rest(ep, ep_done) : core::Time::seconds(ep.to_seconds() * share);
          done += d;
          tp_done += tp_part;
          cp_done += cp_part;
          ep_done += ep_part;
          TaskInfo part = info;
          if (by_unit) {
            part.unit = pieces[j].unit;
            part.units = static_cast<int>(c.shard_units.size());
          } else {
            // An entry piece takes no time and is no part of the compute:
            // the parts are numbered without it.
            const int entries = pieces.front().entry ? 1 : 0;
            part.entry = pieces[j].entry;
            part.part = pieces[j].entry ? 0 : static_cast<int>(j) - entries;
            part.parts = static_cast<int>(pieces.size()) - entries;
          }
          if (tp_part > core::Time::zero() || cp_part > core::Time::zero() || ep_part > core::Time::zero()) {
            part.comm = intern_comm({tp_part.to_seconds(), cp_part.to_seconds(), ep_part.to_seconds()});
          }
          // Plan::fsdp_copy_out: a unit's first use after its gather is
          // preceded by the copy out of the gather's buffer, on the compute
          // stream; both copies of the parameters are held while it runs.
          std::optional<core::TaskId> copy;
          if (by_unit) {
            const Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
            const workload::ShardUnit& shard = c.shard_units[static_cast<std::size_t>(pieces[j].unit)];
            if (unit.gather && !prefetch.first_use(unit.index) && shard.copy_out > core::Time::zero()) {
              TaskInfo copy_info = part;
              copy_info.copy_out = true;
              copy_info.comm = TaskInfo::kNoComm;
              copy = compute_task(q, shard.copy_out, copy_info);
              edges_.emplace_back(*unit.gather, *copy);
              const auto bytes = static_cast<std::int64_t>(shard.gather_bytes);
              effect_of(*copy).allocate_at_start += bytes;
              effect_of(*copy).release_at_end += bytes;
            }
          }
          // DeepSpeed's second gather of a recomputed unit (zero3_reuse.hpp):
          // after the compute before this piece and the unit's gather, the
          // piece after it. In the sharding group's queue at that point (the
          // recomputation gives the unit back, DeepSpeed issues it), ahead of
          // the prefetches that wait for this backward's pieces; with a
          // separate scatter group on no stream's queue: the gather stream
          // holds those prefetches, the communication stream may hold a
          // reduction that waits for the other pipeline ranks (the tied
          // embedding's).
          std::optional<core::TaskId> regather;
          if (by_unit && (a.op == Op::kBackward || a.op == Op::kInputGrad)) {
            const workload::ShardUnit& held_unit = c.shard_units[static_cast<std::size_t>(pieces[j].unit)];
            if (held_unit.regather_bytes > 0.0) {
              TaskInfo again{TaskKind::kParamAllGather, a, q, -1};
              again.unit = pieces[j].unit;
              again.units = static_cast<int>(c.shard_units.size());
              again.regather = true;
              // Its share of the unit's copy from the host, where the parameters live there.
              const core::Time host_copy = core::Time::seconds(held_unit.gather_host_copy.to_seconds() *
                                                               held_unit.regather_bytes / held_unit.gather_bytes);
              regather = collective_task(q, {kParamRegather, a.stage, regathers++, pipe.tensor, shard_key},
                                         hw::CollectiveKind::kAllGather, held_unit.regather_bytes, shard,
                                         shard_participants, held_unit.regather, again, CommStream::kUnordered, 1.0,
                                         host_copy);
              if (one_queue) queue.add(*regather, issued(), IssueHook::kBeforeNextPiece);
              if (!compute_order_[q].empty()) edges_.emplace_back(compute_order_[q].back(), *regather);
              // It follows the unit's gather for this backward (where the
              // unit was not held from its forward): that gather, then the
              // recomputation, gives back what this gathers again.
              const Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
              if (unit.gather) edges_.emplace_back(*unit.gather, *regather);
            }
          }
          const core::TaskId id = pieces[j].train ? train_task(q, train_of_stage[static_cast<std::size_t>(a.stage)], part)
                                                  : compute_task(q, d, part, tp_part + cp_part + ep_part);
          if (after_exchange) edges_.emplace_back(*after_exchange, id);
          after_exchange.reset();
          if (regather) edges_.emplace_back(*regather, id);
          const core::TaskId head = copy ? *copy : regather ? *regather : id;
          if (j == 0) {
            // The action's entry: what the incoming data, the tensor peers'
            // meeting and blocking sends hold back (wiring.cpp joins the
            // data to first_).
            first_[q][k] = head;
            if (barrier) edges_.emplace_back(*barrier, head);
            for (core::TaskId send : unsent) edges_.emplace_back(send, head);
            unsent.clear();
          }
          last_[q][k] = id;
          if (by_unit) {
            Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
            if (unit.gather) {
              edges_.emplace_back(*unit.gather, id);
              if (!prefetch.first_use(unit.index)) prefetch.use(unit.index, id, issued());
            }
            unit.last_use = id;
            unit_part[static_cast<std::size_t>(pieces[j].unit)] = id;
            unit_part_point[static_cast<std::size_t>(pieces[j].unit)] = issued();
            unit_head[static_cast<std::size_t>(pieces[j].unit)] = head;
          } else {
            for (core::TaskId& ready : unit_part) ready = id;  // a W: every unit's gradients after it
            for (std::size_t& point : unit_part_point) point = issued();
          }
          if (const auto i = pieces[j].gather) {
            edges_.emplace_back(prefetch.last_task(*i), id);
            prefetch.use(*i, id, issued());
          }
          if (split && pieces[j].ends_part && (!by_unit || last)) backward_parts[a.stage].push_back(id);
          // The exchanges after this piece, one after another; the next
          // piece, or what waits for the action, waits for the last.
          core::TaskId prev = id;
          for (int x = pieces[j].exchanges; x >= 0 && x < pieces[j].exchanges + pieces[j].exchange_count; ++x) {
            const EpPoint& point = ep_points_[static_cast<std::size_t>(x)];
            for (const workload::StageCost::EpCollective& e : point.redo ? c.ep_redo_collectives : ep_collectives) {
              if (e.dispatch != point.dispatch) continue;
              TaskInfo exchange{TaskKind::kEpExchange, a, q, -1};
              exchange.part = point.layer;
              exchange.parts = c.moe_layers;
              exchange.dispatch = e.dispatch;
              exchange.over_etp = e.over_etp;
              const core::TaskId ex = collective_task(
                  q, {kEpExchange, a.stage, ep_exchanges++, e.over_etp ? etp_key : ep_key, e.over_etp ? 1 : 0}, e.kind,
                  e.bytes, e.over_etp ? etp_rank_group : ep_rank_group, e.over_etp ? etp_participants : ep_participants,
                  e.analytic, exchange, CommStream::kUnordered, e.across_share);
              edges_.emplace_back(prev, ex);
              prev = ex;
            }
          }
          if (prev != id) {
            after_exchange = prev;
            last_[q][k] = prev;
          }
        }
        // ZeRO-3: each unit's gradients go to their owners, on the
        // communication stream, after each run of backwards once its part
        // has ended; or (Plan::grad_sync_after_last_backward) once, after the
        // stage's last backward has ended as a whole, as FSDP's post-backward
        // runs then: till that scatter each unit's gradients are held whole,
        // from the start of the stage's first backward.
        const bool at_last = plan_.grad_sync_after_last_backward;
        if (c.sharded() && at_last && first_of_stage) {
          double whole = 0.0;
          for (const workload::ShardUnit& unit : c.shard_units) whole += unit.grad_bytes;
          effect_of(*first_[q][k]).allocate_at_start += static_cast<std::int64_t>(whole);
        }
        if (c.sharded() && (at_last ? last_of_stage : ends_backward_run(actions, k))) {
          const std::size_t U = c.shard_units.size();
          // DeepSpeed's blocking copy to the host (Plan::grad_copy), made
          // after the stage's last backward of the iteration (the gradient-
          // accumulation boundary): the host launches nothing more of that
          // backward until a unit's gradients are reduced and copied, so the
          // next unit's piece (its regather first) waits for them.
          const bool boundary = last_of_stage && !at_last;
          const bool blocking = plan_.blocking_grad_copy() && by_unit && boundary;
          for (std::size_t n = 0; n < U; ++n) {
            const std::size_t u = U - 1 - n;  // in the order the backward ends them
            const workload::ShardUnit& unit = c.shard_units[u];
            TaskInfo scatter{TaskKind::kGradReduce, a, q, -1};
            scatter.unit = static_cast<int>(u);
            scatter.units = static_cast<int>(U);
            // The FP32 copy to the host (DeepSpeed's) at the boundary, after
            // the unit's last collective.
            const core::Time fp32_copy = boundary ? unit.grad_fp32_copy : core::Time::zero();
            // The copies to the host (offloading) end the last collective.
            const core::Time host_copy = unit.grad_host_copy + fp32_copy;
            const Tasks scattered_parts = unit_collectives(
                {kGradScatter, kGradScatterExperts}, a.stage, scatters, hw::CollectiveKind::kReduceScatter,
                unit.grad_bytes, unit.grad_scatter + (replicated ? core::Time::zero() : fp32_copy),
                unit.grad_expert_bytes, unit.grad_scatter_experts, scatter,
                one_queue ? CommStream::kUnordered : CommStream::kCollectives,
                replicated ? core::Time::zero() : host_copy);
            const core::TaskId scattered = scattered_parts.first;
            edges_.emplace_back(at_last ? *last_[q][k] : unit_part[u], scattered);
            const std::size_t point = at_last ? issued() : unit_part_point[u];
            const std::size_t item = one_queue ? queue.add(scattered, point, IssueHook::kAfterPiece) : kNoItem;
            const std::size_t expert_item =
                queue_experts(expert_scatter_queue, scattered_parts, point, IssueHook::kAfterPiece);
            if (at_last) effect_of(scattered_parts.last).release_at_end += static_cast<std::int64_t>(unit.grad_bytes);
            core::TaskId done = scattered_parts.last;
            if (replicated) {
              // HSDP: the shard it now holds, all-reduced with the other
              // groups' copies (over another group: on the communication
              // stream, after its scatter); with flow collectives a MoE
              // unit's experts' shard after the rest's, over its own copies.
              scatter.across_shard_groups = true;
              const bool split = options_.collectives == CollectiveModel::kFlow && unit.grad_expert_bytes > 0.0;
              const double rest = split ? unit.grad_bytes - unit.grad_expert_bytes : unit.grad_bytes;
              done = collective_task(q, {kGradReplicate, a.stage, scatters, pipe.tensor, replica_key},
                                     hw::CollectiveKind::kAllReduce, rest / plan_.shard_group_size(), replica,
                                     replica_participants,
                                     unit.grad_replicate + fp32_copy - (split ? unit.grad_replicate_experts : core::Time{}),
                                     scatter, CommStream::kCollectives, 1.0, split ? core::Time{} : host_copy);
              if (one_queue) edges_.emplace_back(scattered, done);
              if (split) {
                TaskInfo part = scatter;
                part.experts = true;
                done = collective_task(q, {kGradReplicateExperts, a.stage, scatters, expert_replica_key, 0},
                                       hw::CollectiveKind::kAllReduce, unit.grad_expert_bytes / expert_m,
                                       expert_replicas, replica_participants, unit.grad_replicate_experts, part,
                                       CommStream::kCollectives, 1.0, host_copy);
                edges_.emplace_back(scattered_parts.last, done);
              }
            }
            if (blocking && u > 0) {
              edges_.emplace_back(done, unit_head[u - 1]);
              // Its gather too, when it is this backward's own (first used
              // here), not one held from an earlier pass: the host issues it
              // once this scatter has ended.
              const Held& next = (*h)[u - 1];
              if (next.gather && prefetch.first_use(next.index) == unit_part[u - 1]) {
                edges_.emplace_back(done, prefetch.first_task(next.index));
                if (one_queue) queue.after(prefetch.item(next.index), item);
                if (one_queue && prefetch.expert_item(next.index) != kNoItem && expert_item != kNoItem) {
                  expert_queue.after(prefetch.expert_item(next.index), expert_item);
                }
              }
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
          t.route = instance({kBarrier, r, static_cast<int>(k), pipe.replica, 0}, plan_.tp, [&] {
            return sim_->collectives->add(hw::CollectiveKind::kAllReduce, 0.0, peers, plan_.tp, core::Time::zero());
          });
          const core::TaskId id = add_task(t, {TaskKind::kTpBarrier, a, q, -1});
          edges_.emplace_back(*last_[q][k], id);
          barrier = id;
        }
      } else if (a.op == Op::kUnshard) {
        // ZeRO-3: gather the window's units that are not held, on a stream
        // of their own, in the order the window's first action uses them;
        // only the action's own unit where it names one (the program then
        // has an UNSHARD a unit, in that order).
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
          if (!first_[q][k]) first_[q][k] = id;
          last_[q][k] = gathered.last;
          effect_of(id).allocate_at_start += static_cast<std::int64_t>(units[u].gather_bytes);
          const std::size_t item = one_queue ? queue.add(id, issued(), IssueHook::kBeforeNextPiece) : kNoItem;
          const std::size_t expert_item = queue_experts(expert_queue, gathered, issued(), IssueHook::kBeforeNextPiece);
          // Held from the gather's end (its last task): what uses the unit waits for it.
          h[u] = {gathered.last, prefetch.add(id, gathered.last, units[u].params, item, expert_item), std::nullopt};
        }
      } else if (a.op == Op::kReshard) {
        // Each unit's last use in the window gives its parameters back (only
        // the action's own unit's, where it names one).
        const workload::StageCost& c = costs_.stages[a.stage];
        std::vector<Held>& h = units_held(a.stage, c.shard_units.size());
        for (std::size_t u = 0; u < h.size(); ++u) {
          if (a.unit() >= 0 && u != static_cast<std::size_t>(a.unit())) continue;
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
          for (int d = 0; d < plan_.replicas(); ++d) {
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
        const std::size_t train = train_of_stage[static_cast<std::size_t>(a.stage)];
        if (train > 0) {
          // The train's reductions as one collective (hw/bucket_train.hpp),
          // after its pieces; the collective before it on the stream has
          // ended when the train starts, or the train is refused.
          hw::BucketTrain& t = sim_->trains[train - 1];
          t.after = last_collective_[q];
          for (std::size_t i = 0; i + 1 < train && t.after; ++i) {
            if (sim_->trains[i].reductions == t.after) t.after_train = static_cast<std::uint32_t>(i);
          }
          TaskInfo bucket{TaskKind::kGradReduce, a, q, -1};
          core::Time time;
          for (core::Time r : c.grad_bucket_reduce) time += r;
          const Tasks reduced = dp_collectives({kBucket, kBucketExperts}, a.stage, 0, c.grad_reduce_kind, c.grad_bytes,
                                               time, std::nullopt, bucket, CommStream::kCollectives);
          sim_->collectives->set_train(sim_->graph.task(reduced.first).route, static_cast<std::uint32_t>(train - 1));
          t.reductions = reduced.first;
          first_[q][k] = last_[q][k] = reduced.first;
          edges_.emplace_back(backward_parts[a.stage].back(), reduced.first);
        }
        for (std::size_t j = 0; j < (train > 0 ? 0 : buckets); ++j) {
          TaskInfo bucket{TaskKind::kGradReduce, a, q, -1};
          bucket.part = static_cast<int>(j);
          bucket.parts = static_cast<int>(buckets);
          const double share = j < c.grad_bucket_share.size() ? c.grad_bucket_share[j] : 1.0;
          const core::Time time = j < c.grad_bucket_reduce.size() ? c.grad_bucket_reduce[j] : core::Time::zero();
          // Under ZeRO-3 the units' scatters carry every gradient: the
          // bucket moves nothing (its analytic time is zero too).
          const bool moves = plan_.zero_stage < 3 && (plan_.replicas() > 1 || experts_replicated);
          const double bytes = moves ? share * c.grad_bytes : 0.0;
          const Tasks reduced = dp_collectives(
              {kBucket, kBucketExperts}, a.stage, static_cast<int>(j), c.grad_reduce_kind, bytes, time,
              moves && j < c.grad_bucket_reduce_experts.size() ? std::optional(c.grad_bucket_reduce_experts[j])
                                                                : std::nullopt,
              bucket, CommStream::kCollectives,
              j < c.grad_bucket_host_copy.size() ? c.grad_bucket_host_copy[j] : core::Time::zero());
          if (j == 0) first_[q][k] = reduced.first;
          last_[q][k] = reduced.last;
          // Bucket j is ready when part j of the stage's last backward ends
          // (or, not overlapped, when the rank's backward has); a second part
          // follows the first on the stream.
          if (j < backward_parts[a.stage].size()) edges_.emplace_back(backward_parts[a.stage][j], reduced.first);
          if (!plan_.overlap.grad_reduce) after_backward.push_back(reduced.first);
        }
        if (c.embedding_grad_all_reduce > core::Time::zero()) {
          // The first and last stages hold the tied embedding; both take part.
          const int first_rank = shape_.stage_rank.front(), last_rank = shape_.stage_rank.back();
          const std::vector<int> ends{gpu(first_rank, pipe), gpu(last_rank, pipe)};
          const std::vector<std::vector<int>>& ends_copies = rank_pair_copies(first_rank, last_rank);
          const core::TaskId id = collective_task(
              q, {kEmbedding, 0, 0, pipe.tensor, pipe.replica}, hw::CollectiveKind::kAllReduce, c.embedding_grad_bytes,
              RankGroup{ends, ends_copies}, 2, c.embedding_grad_all_reduce, {TaskKind::kEmbeddingAllReduce, a, q, -1});
          last_[q][k] = id;
        }
        if (c.copy_grad_all_reduce > core::Time::zero()) {
          // DualPipe: the stage and its copy in the other direction add their
          // reduced gradients, after both have reduced them (keyed by the layers both hold).
          const int copy_rank = shape_.stage_rank[shape_.copy_of(a.stage)];
          const int layers = a.stage % shape_.pipeline_length();
          TaskInfo sum{TaskKind::kGradReduce, a, q, -1};
          sum.across_copies = true;
          const std::vector<int> both{gpu(r, pipe), gpu(copy_rank, pipe)};
          const std::vector<std::vector<int>>& both_copies = rank_pair_copies(r, copy_rank);
          const core::TaskId id = collective_task(
              q, {kCopyGrads, layers, 0, pipe.tensor, pipe.replica}, hw::CollectiveKind::kAllReduce, c.copy_grad_bytes,
              RankGroup{both, both_copies}, 2, c.copy_grad_all_reduce, sum);
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
          const Tasks gather = dp_collectives(
              {kGather, kGatherExperts}, s, 0, hw::CollectiveKind::kAllGather, c.param_bytes, c.param_all_gather,
              c.expert_params > 0.0 ? std::optional(c.param_all_gather_experts) : std::nullopt,
              {TaskKind::kParamAllGather, {Op::kOptimizer, s, 0}, q, -1}, CommStream::kCollectives);
          edges_.emplace_back(id, gather.first);
        }
      }
    }
    if (last_compute) {
      for (core::TaskId reduce : after_backward) edges_.emplace_back(*last_[q][*last_compute], reduce);
    }
    queue.chain(edges_);
    expert_queue.chain(edges_);
    expert_scatter_queue_.chain(edges_);  // empty where the scatters share the gathers' group
  }
}

void Lowering::cut_at_exchanges(std::vector<Piece>& pieces) const {
  // Positions are shares of the action's compute; one within kSame of a
  // piece's end falls at that end, not inside.
  constexpr double kSame = 1e-12;
  const std::vector<EpPoint>& points = ep_points_;
  std::vector<Piece> out;
  std::size_t p = 0;  // the next point
  auto attach = [&] {
    Piece& before = out.back();
    if (before.exchanges < 0) before.exchanges = static_cast<int>(p);
    ++before.exchange_count;
    ++p;
  };
  std::vector<Piece> whole = std::move(pieces);
  if (p < points.size() && points[p].at <= kSame) {
    // Exchanges before any compute follow a piece of no time (which waits
    // for what the first piece would have).
    Piece none = whole.front();
    none.share = 0.0;
    none.ends_part = false;
    none.entry = true;
    out.push_back(none);
    whole.front().gather.reset();
    while (p < points.size() && points[p].at <= kSame) attach();
  }
  double start = 0.0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    Piece rest = whole[i];
    const double end = start + rest.share;
    double from = start;
    while (p < points.size() && points[p].at < end - kSame) {
      if (points[p].at > from + kSame) {
        Piece head = rest;
        head.share = points[p].at - from;
        head.ends_part = false;
        out.push_back(head);
        rest.gather.reset();  // the head waited for it
        from = points[p].at;
      }
      attach();
    }
    rest.share = end - from;
    out.push_back(rest);
    const bool last = i + 1 == whole.size();
    while (p < points.size() && (last || points[p].at <= end + kSame)) attach();
    start = end;
  }
  pieces = std::move(out);
}

}  // namespace trainsim::lower::detail
