// A compute action of a rank lowered into tasks: cut into pieces by ZeRO-3
// unit, gradient bucket or parameter bucket (and, with flow collectives, at a
// MoE layer's exchanges), each a share of its time, with the copies,
// second gathers, gradient scatters and tensor peers' meeting around them.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "lower/rank_lowering.hpp"
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

Lowering::ActionTimes Lowering::action_times(int r, std::size_t k, int partner,
                                             const workload::StageCosts& costs) const {
  const std::vector<Action>& actions = program_.ranks[static_cast<std::size_t>(r)];
  const Action& a = actions[k];
  const workload::StageCost& c = costs.stages[a.stage];
  ActionTimes t;
  t.duration = compute_duration(a, c);
  t.ep = ep_comm_inside(a, c);
  if (partner >= 0) {
    const Action& other = actions[static_cast<std::size_t>(partner)];
    const PairedTime paired = paired_time(a, c, other, costs.stages[other.stage], plan_.overlap.compute_slowdown);
    t.duration = paired.duration;
    t.ep = paired.ep_exposed;
  }
  // parallel.twobp_concat: a rank's W's of one stage over every
  // micro-batch run as one op; it is timed on the run's last W, the
  // others take no time.
  if (a.op == Op::kWeightGrad && merged_into_[r][k] >= 0) t.duration = core::Time::zero();
  if (a.op == Op::kWeightGrad && concat_end_[r][k]) t.duration = c.weight_grad_concat;
  // Flow collectives: a MoE action's dispatch and combine run as
  // collectives of their own between its compute pieces (a pass the
  // A2A overlap pairs keeps them inside, as do DeepEP's).
  const std::vector<workload::StageCost::EpCollective>& ep_collectives =
      a.op == Op::kForward ? c.ep_forward_collectives : c.ep_backward_collectives;
  t.ep_tasks = options_.collectives == CollectiveModel::kFlow && partner < 0 &&
               (a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad) && c.moe_layers > 0 &&
               !c.sharded() && !ep_collectives.empty() && t.ep > core::Time::zero();
  if (t.ep_tasks) {
    t.duration = std::max(core::Time::zero(), t.duration - t.ep);
    t.ep = core::Time::zero();
  }
  t.tp = comm_inside(a, c.tp_comm_forward, c.tp_comm_backward);
  t.cp = comm_inside(a, c.cp_comm_forward, c.cp_comm_backward);
  return t;
}

double Lowering::unit_share(Op op, const workload::StageCost& c, std::size_t u) {
  const workload::ShardUnit& unit = c.shard_units[u];
  if (op == Op::kForward) return unit.forward_share;
  if (op == Op::kInputGrad) return unit.input_grad_share;
  // B: the unit's part of I and of W, weighted by their times.
  const double i_s = c.input_grad.to_seconds(), w_s = c.weight_grad.to_seconds();
  return i_s + w_s > 0.0 ? (i_s * unit.input_grad_share + w_s * unit.weight_grad_share) / (i_s + w_s) : 0.0;
}

hw::BucketTrain Lowering::bucket_train(core::Time duration, const workload::StageCost& c) const {
  hw::BucketTrain train;
  train.buckets = static_cast<std::uint32_t>(c.grad_bucket_reduce.size());
  train.piece = core::Time::seconds(duration.to_seconds() * c.grad_bucket_share[0]);
  train.last_piece = std::max(core::Time::zero(), duration - train.piece * static_cast<std::int64_t>(train.buckets - 1));
  train.reduce = c.grad_bucket_reduce.front();
  train.last_reduce = c.grad_bucket_reduce.back();
  train.slowed_speed = Interference::speed_beside_collectives(options_.comm_slowdown);
  return train;
}

Lowering::PieceClock::Part Lowering::PieceClock::next(double share, bool last) {
  // The last piece takes what is left, never less than nothing: the
  // other pieces each round to a picosecond, and a last share of
  // (nearly) zero (a ZeRO-3 unit without an input gradient, such as
  // the embedding's) would otherwise be left a few picoseconds below.
  const auto rest = [](core::Time total, core::Time so_far) { return std::max(core::Time::zero(), total - so_far); };
  const auto part = [&](core::Time total, core::Time so_far) {
    return last ? rest(total, so_far) : core::Time::seconds(total.to_seconds() * share);
  };
  const Part p{part(whole.duration, done.duration), part(whole.tp, done.tp), part(whole.cp, done.cp),
               part(whole.ep, done.ep)};
  done.duration += p.duration;
  done.tp += p.tp;
  done.cp += p.cp;
  done.ep += p.ep;
  return p;
}

void Lowering::RankLowering::compute(std::size_t k) {
  const Action& a = actions[k];
  const TaskInfo info{TaskKind::kCompute, a, q, -1};
  // The last backward of a stage is cut by gradient bucket; parts share
  // the duration by bucket size, the last taking the rounding.
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  const ActionTimes times = lw.action_times(r, k, partner[k], lw.costs_);
  const core::Time duration = times.duration;
  const bool ep_tasks = times.ep_tasks;
  if (partner[k] >= 0) lw.paired_ = true;
  const std::vector<workload::StageCost::EpCollective>& ep_collectives =
      a.op == Op::kForward ? c.ep_forward_collectives : c.ep_backward_collectives;
  // The stage's first and last backward-ending actions on this rank.
  const bool backward_end = schedule::is_backward_end(a.op);
  const bool first_of_stage = backward_end && first_backward[static_cast<std::size_t>(a.stage)] == k;
  const bool last_of_stage = backward_end && last_backward[static_cast<std::size_t>(a.stage)] == k;
  const bool split = lw.plan_.overlap.grad_reduce && last_of_stage;
  // Overlap::param_gather: the stage's first forward runs bucket by
  // bucket, each after its own gather of the updated parameters.
  const bool by_bucket_gather = !c.param_bucket_gather.empty() && a.op == Op::kForward &&
                                first_forward[static_cast<std::size_t>(a.stage)] == k;
  const bool needs_params = a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad;
  // The parts this action's gradients are ready after, unit by unit
  // (for ZeRO-3's scatters): every unit's after the whole action when
  // it is not cut by unit (a W).
  std::vector<core::TaskId>& unit_part = lw.unit_part_;
  unit_part.assign(c.shard_units.size(), core::TaskId{});
  std::vector<core::TaskId>& unit_head = lw.unit_head_;
  unit_head.assign(c.shard_units.size(), core::TaskId{});
  std::vector<std::size_t>& unit_part_point = lw.unit_part_point_;  // the compute tasks issued up to unit_part's
  unit_part_point.assign(c.shard_units.size(), 0);
  // The pieces the action runs as, each a share of its time (see
  // cut_into_pieces); the last takes the rounding.
  std::vector<Piece>& pieces = lw.pieces_;  // scratch kept between actions
  pieces.clear();
  const bool by_unit = c.sharded() && needs_params;
  cut_into_pieces(k, duration, by_unit, split, by_bucket_gather, ep_tasks);
  std::vector<Held>* h = by_unit ? &units_held(a.stage, c.shard_units.size()) : nullptr;
  PieceClock clock{times};
  const std::size_t first_kept = lw.kept_pieces_.size();
  // Each piece's info: the action's, with the fields below set per piece
  // (copied once, not once a piece: a copy of the action's info just
  // written stalls on its own stores).
  TaskInfo part = info;
  for (std::size_t j = 0; j < pieces.size(); ++j) {
    const bool last = j + 1 == pieces.size();
    const PieceClock::Part times_of_piece = clock.next(pieces[j].share, last);
    const core::Time d = times_of_piece.duration, tp_part = times_of_piece.tp, cp_part = times_of_piece.cp,
                     ep_part = times_of_piece.ep;
    part.comm = TaskInfo::kNoComm;
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
    // (Only a TaskInfo keeps the id: a brief has no room for it.)
    if (lw.options_.task_info &&
        (tp_part > core::Time::zero() || cp_part > core::Time::zero() || ep_part > core::Time::zero())) {
      part.comm = lw.intern_comm({tp_part.to_seconds(), cp_part.to_seconds(), ep_part.to_seconds()});
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
        copy = lw.compute_task(q, shard.copy_out, copy_info);
        lw.edges_.emplace_back(*unit.gather, *copy);
        const auto bytes = static_cast<std::int64_t>(shard.gather_bytes);
        lw.effect_of(*copy, q).allocate_at_start += bytes;
        lw.effect_of(*copy, q).release_at_end += bytes;
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
        regather = lw.collective_task(q, {kParamRegather, a.stage, regathers++, pipe.tensor, shard_key},
                                   hw::CollectiveKind::kAllGather, held_unit.regather_bytes, shard,
                                   shard_participants, held_unit.regather, again, CommStream::kUnordered, 1.0,
                                   host_copy);
        if (one_queue) queue.add(*regather, issued(), IssueHook::kBeforeNextPiece);
        if (!lw.compute_order_[q].empty()) lw.edges_.emplace_back(lw.compute_order_[q].back(), *regather);
        // It follows the unit's gather for this backward (where the
        // unit was not held from its forward): that gather, then the
        // recomputation, gives back what this gathers again.
        const Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
        if (unit.gather) lw.edges_.emplace_back(*unit.gather, *regather);
      }
    }
    const core::TaskId id = pieces[j].train ? lw.train_task(q, train_of_stage[static_cast<std::size_t>(a.stage)], part)
                                            : lw.compute_task(q, d, part, tp_part + cp_part + ep_part);
    if (lw.keeping_) lw.kept_pieces_.push_back({id, pieces[j].unit, pieces[j].share, pieces[j].train});
    if (after_exchange) lw.edges_.emplace_back(*after_exchange, id);
    after_exchange.reset();
    if (regather) lw.edges_.emplace_back(*regather, id);
    const core::TaskId head = copy ? *copy : regather ? *regather : id;
    if (j == 0) {
      // The action's entry: what the incoming data, the tensor peers'
      // meeting and blocking sends hold back (wiring.cpp joins the
      // data to first_).
      lw.first_[q][k] = head;
      if (barrier) lw.edges_.emplace_back(*barrier, head);
      for (core::TaskId send : unsent) lw.edges_.emplace_back(send, head);
      unsent.clear();
    }
    lw.last_[q][k] = id;
    if (by_unit) {
      Held& unit = (*h)[static_cast<std::size_t>(pieces[j].unit)];
      if (unit.gather) {
        lw.edges_.emplace_back(*unit.gather, id);
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
      lw.edges_.emplace_back(prefetch.last_task(*i), id);
      prefetch.use(*i, id, issued());
    }
    if (split && pieces[j].ends_part && (!by_unit || last)) backward_parts[a.stage].push_back(id);
    // The exchanges after this piece, one after another; the next
    // piece, or what waits for the action, waits for the last.
    core::TaskId prev = id;
    for (int x = pieces[j].exchanges; x >= 0 && x < pieces[j].exchanges + pieces[j].exchange_count; ++x) {
      const EpPoint& point = lw.ep_points_[static_cast<std::size_t>(x)];
      for (const workload::StageCost::EpCollective& e : point.redo ? c.ep_redo_collectives : ep_collectives) {
        if (e.dispatch != point.dispatch) continue;
        TaskInfo exchange{TaskKind::kEpExchange, a, q, -1};
        exchange.part = point.layer;
        exchange.parts = c.moe_layers;
        exchange.dispatch = e.dispatch;
        exchange.over_etp = e.over_etp;
        const core::TaskId ex = lw.collective_task(
            q, {kEpExchange, a.stage, ep_exchanges++, e.over_etp ? etp_key : ep_key, e.over_etp ? 1 : 0}, e.kind,
            e.bytes, e.over_etp ? etp_rank_group : ep_rank_group, e.over_etp ? etp_participants : ep_participants,
            e.analytic, exchange, CommStream::kUnordered, e.across_share);
        lw.edges_.emplace_back(prev, ex);
        prev = ex;
      }
    }
    if (prev != id) {
      after_exchange = prev;
      lw.last_[q][k] = prev;
    }
  }
  if (lw.keeping_) lw.kept_actions_.push_back({q, r, k, first_kept, lw.kept_pieces_.size() - first_kept});
  scatter_unit_grads(k, by_unit, first_of_stage, last_of_stage);
  if (full && lw.plan_.tp > 1) tp_barrier(k);
}

void Lowering::RankLowering::cut_into_pieces(std::size_t k, core::Time duration, bool by_unit, bool split,
                                             bool by_bucket_gather, bool ep_tasks) {
  const Action& a = actions[k];
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  std::vector<Piece>& pieces = lw.pieces_;
  if (by_unit) {
    const std::size_t U = c.shard_units.size();
    for (std::size_t n = 0; n < U; ++n) {
      const std::size_t u = a.op == Op::kForward ? n : U - 1 - n;
      pieces.push_back({unit_share(a.op, c, u), static_cast<int>(u)});
    }
  } else if (split && merges_bucket_train(lw.options_, lw.symmetric(), lw.plan_.overlap.param_gather, c)) {
    // The first bucket's piece, then the others' as one train.
    lw.sim_->trains.push_back(lw.bucket_train(duration, c));
    train_of_stage[static_cast<std::size_t>(a.stage)] = lw.sim_->trains.size();
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
    lw.ep_points_.clear();
    for (int l = 0; l < M; ++l) {
      const double from = static_cast<double>(l) / M, to = static_cast<double>(l + 1) / M;
      if (forward) {
        lw.ep_points_.push_back({from + cut * (to - from), l, true, false});
        lw.ep_points_.push_back({to, l, false, false});
      } else {
        // The stage's first moe_layers_redone layers are recomputed:
        // the last ones the backward reaches.
        if (l >= M - c.moe_layers_redone && !c.ep_redo_collectives.empty()) {
          lw.ep_points_.push_back({from, l, true, true});
          lw.ep_points_.push_back({from, l, false, true});
        }
        lw.ep_points_.push_back({from, l, false, false});
        lw.ep_points_.push_back({from + cut * (to - from), l, true, false});
      }
    }
    lw.cut_at_exchanges(pieces);
  }
}

void Lowering::RankLowering::scatter_unit_grads(std::size_t k, bool by_unit, bool first_of_stage, bool last_of_stage) {
  const Action& a = actions[k];
  const workload::StageCost& c = lw.costs_.stages[a.stage];
  if (!c.sharded()) return;
  std::vector<Held>* h = by_unit ? &units_held(a.stage, c.shard_units.size()) : nullptr;
  const std::vector<core::TaskId>& unit_part = lw.unit_part_;
  const std::vector<core::TaskId>& unit_head = lw.unit_head_;
  const std::vector<std::size_t>& unit_part_point = lw.unit_part_point_;
  // ZeRO-3: each unit's gradients go to their owners, on the
  // communication stream, after each run of backwards once its part
  // has ended; or (Plan::grad_sync_after_last_backward) once, after the
  // stage's last backward has ended as a whole, as FSDP's post-backward
  // runs then: till that scatter each unit's gradients are held whole,
  // from the start of the stage's first backward.
  const bool at_last = lw.plan_.grad_sync_after_last_backward;
  if (c.sharded() && at_last && first_of_stage) {
    double whole = 0.0;
    for (const workload::ShardUnit& unit : c.shard_units) whole += unit.grad_bytes;
    lw.effect_of(*lw.first_[q][k], q).allocate_at_start += static_cast<std::int64_t>(whole);
  }
  if (c.sharded() && (at_last ? last_of_stage : ends_backward_run(actions, k))) {
    const std::size_t U = c.shard_units.size();
    // DeepSpeed's blocking copy to the host (Plan::grad_copy), made
    // after the stage's last backward of the iteration (the gradient-
    // accumulation boundary): the host launches nothing more of that
    // backward until a unit's gradients are reduced and copied, so the
    // next unit's piece (its regather first) waits for them.
    const bool boundary = last_of_stage && !at_last;
    const bool blocking = lw.plan_.blocking_grad_copy() && by_unit && boundary;
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
      lw.edges_.emplace_back(at_last ? *lw.last_[q][k] : unit_part[u], scattered);
      const std::size_t point = at_last ? issued() : unit_part_point[u];
      const std::size_t item = one_queue ? queue.add(scattered, point, IssueHook::kAfterPiece) : kNoItem;
      const std::size_t expert_item =
          queue_experts(expert_scatter_queue, scattered_parts, point, IssueHook::kAfterPiece);
      if (at_last) lw.effect_of(scattered_parts.last, q).release_at_end += static_cast<std::int64_t>(unit.grad_bytes);
      core::TaskId done = scattered_parts.last;
      if (replicated) {
        // HSDP: the shard it now holds, all-reduced with the other
        // groups' copies (over another group: on the communication
        // stream, after its scatter); with flow collectives a MoE
        // unit's experts' shard after the rest's, over its own copies.
        scatter.across_shard_groups = true;
        const bool split = lw.options_.collectives == CollectiveModel::kFlow && unit.grad_expert_bytes > 0.0;
        const double rest = split ? unit.grad_bytes - unit.grad_expert_bytes : unit.grad_bytes;
        done = lw.collective_task(q, {kGradReplicate, a.stage, scatters, pipe.tensor, replica_key},
                               hw::CollectiveKind::kAllReduce, rest / lw.plan_.shard_group_size(), replica,
                               replica_participants,
                               unit.grad_replicate + fp32_copy - (split ? unit.grad_replicate_experts : core::Time{}),
                               scatter, CommStream::kCollectives, 1.0, split ? core::Time{} : host_copy);
        if (one_queue) lw.edges_.emplace_back(scattered, done);
        if (split) {
          TaskInfo part = scatter;
          part.experts = true;
          done = lw.collective_task(q, {kGradReplicateExperts, a.stage, scatters, expert_replica_key, 0},
                                 hw::CollectiveKind::kAllReduce, unit.grad_expert_bytes / expert_m,
                                 expert_replicas, replica_participants, unit.grad_replicate_experts, part,
                                 CommStream::kCollectives, 1.0, host_copy);
          lw.edges_.emplace_back(scattered_parts.last, done);
        }
      }
      if (blocking && u > 0) {
        lw.edges_.emplace_back(done, unit_head[u - 1]);
        // Its gather too, when it is this backward's own (first used
        // here), not one held from an earlier pass: the host issues it
        // once this scatter has ended.
        const Held& next = (*h)[u - 1];
        if (next.gather && prefetch.first_use(next.index) == unit_part[u - 1]) {
          lw.edges_.emplace_back(done, prefetch.first_task(next.index));
          if (one_queue) queue.after(prefetch.item(next.index), item);
          if (one_queue && prefetch.expert_item(next.index) != kNoItem && expert_item != kNoItem) {
            expert_queue.after(prefetch.expert_item(next.index), expert_item);
          }
        }
      }
      ++scatters;
    }
  }
}

void Lowering::RankLowering::tp_barrier(std::size_t k) {
  const Action& a = actions[k];
  // Tensor peers all-reduce inside every compute action: none runs ahead.
  std::vector<int> peers;
  for (int t = 0; t < lw.plan_.tp; ++t) peers.push_back(lw.plan_.gpu_of(r, pipe.replica, t));
  core::Task t;
  t.resource = lw.runner_id_;
  t.route = lw.instance({kBarrier, r, static_cast<int>(k), pipe.replica, 0}, lw.plan_.tp, [&] {
    return lw.sim_->collectives->add(hw::CollectiveKind::kAllReduce, 0.0, peers, lw.plan_.tp, core::Time::zero());
  });
  const core::TaskId id = lw.add_task(t, {TaskKind::kTpBarrier, a, q, -1});
  lw.edges_.emplace_back(*lw.last_[q][k], id);
  barrier = id;
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
