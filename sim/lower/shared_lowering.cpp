#include "lower/shared_lowering.hpp"

#include <stdexcept>

#include "lower/lowering.hpp"

namespace trainsim::lower {

std::unique_ptr<Simulation> copy_unrun(const Simulation& s) {
  if (s.timeline.events != 0 || !s.timeline.end.empty()) throw std::logic_error("copy_unrun: the simulation has run");
  auto out = std::make_unique<Simulation>();
  Simulation& c = *out;
  c.pipelines = s.pipelines;
  c.every_gpu = s.every_gpu;
  c.estimate = s.estimate;
  c.fell_back_to_full = s.fell_back_to_full;
  c.fell_back_because = s.fell_back_because;
  c.pipeline_ranks = s.pipeline_ranks;
  c.blocking_sends = s.blocking_sends;
  c.shard_queue = s.shard_queue;
  c.shard_groups = s.shard_groups;
  c.flow_collectives = s.flow_collectives;
  c.gpu_memory_bytes = s.gpu_memory_bytes;
  c.cuda_context_bytes = s.cuda_context_bytes;
  c.comm_slowdown = s.comm_slowdown;
  c.graph = s.graph;
  c.info = s.info;
  c.brief = s.brief;
  c.comm_inside = s.comm_inside;
  c.trains = s.trains;
  for (const auto& stream : s.streams) {
    c.streams.push_back(std::make_unique<hw::Stream>(*stream));
    c.streams.back()->set_trains(&c.trains);
  }
  c.network = s.network;
  c.topology = std::make_unique<hw::Topology>(*s.topology, c.network);
  c.collectives = std::make_unique<hw::CollectiveRunner>(*s.collectives, *c.topology, c.network);
  c.collectives->set_trains(&c.trains);
  c.memory = s.memory;
  c.host_offloads = s.host_offloads;
  c.gpu_of_rank = s.gpu_of_rank;
  c.pipeline_coordinates = s.pipeline_coordinates;
  c.stage_layers = s.stage_layers;
  c.ep_stages = s.ep_stages;
  c.a2a_overlap = s.a2a_overlap;
  c.a2a_slowdown = s.a2a_slowdown;
  c.stage_names = s.stage_names;
  c.background = s.background;
  if (s.interference) {  // made from the streams and GPUs above
    c.interference = std::make_unique<detail::Interference>(c, c.comm_slowdown);
    c.collectives->set_listener(c.interference.get());
  }
  return out;
}

SharedLowering::SharedLowering(const schedule::Program& program, const schedule::Shape& shape, const Wiring& wiring,
                               const workload::StageCosts& costs, const hw::ClusterSpec& cluster,
                               const workload::Plan& plan, const Options& options)
    : lowering_(std::make_unique<detail::Lowering>(program, shape, wiring, costs, cluster, plan, options)) {
  lowering_->keep_for_copies();
  first_ = lowering_->build();
  estimate_ = first_->estimate;
}

SharedLowering::~SharedLowering() = default;

bool SharedLowering::fits(const workload::StageCosts& costs) const { return lowering_->fits(costs); }

std::unique_ptr<Simulation> SharedLowering::copy_for(const workload::StageCosts& costs) const {
  if (!first_) throw std::logic_error("SharedLowering: a copy after the first simulation was taken");
  if (!fits(costs)) return nullptr;
  std::unique_ptr<Simulation> copy = copy_unrun(*first_);
  lowering_->revalue(*copy, costs);
  return copy;
}

std::unique_ptr<Simulation> SharedLowering::take() { return std::move(first_); }

namespace detail {

namespace {

// A stage's costs without what revalue() sets from them: two stages equal
// here make the same tasks. (Each field cleared is read by the lowering
// only in action_times, unit_share and add_activation_effects.)
workload::StageCost without_values(workload::StageCost c) {
  c.forward = c.input_grad = c.weight_grad = c.weight_grad_concat = core::Time::zero();
  c.tp_comm_forward = c.tp_comm_backward = c.cp_comm_forward = c.cp_comm_backward = core::Time::zero();
  c.activation_bytes = c.offloaded_activation_bytes = c.host_checkpoint_bytes = c.checkpoint_transient_bytes = 0;
  c.weight_grad_bytes = c.weight_grad_kept_bytes = 0;
  c.loss_forward_transient_bytes = c.loss_backward_transient_bytes = 0;
  c.attention_transient_bytes = c.recompute_transient_bytes = 0;
  for (workload::ShardUnit& u : c.shard_units) u.forward_share = u.input_grad_share = u.weight_grad_share = 0.0;
  return c;
}

}  // namespace

bool Lowering::fits(const workload::StageCosts& other) const {
  if (!keeping_ || paired_ || options_.task_info || other.stages.size() != costs_.stages.size()) return false;
  for (std::size_t s = 0; s < other.stages.size(); ++s) {
    const workload::StageCost& mine = costs_.stages[s];
    const workload::StageCost& theirs = other.stages[s];
    // A MoE stage's exchanges and chunks follow its passes' times.
    if (mine.moe_layers > 0 || theirs.moe_layers > 0) return false;
    if (!(without_values(mine) == without_values(theirs))) return false;
  }
  return true;
}

void Lowering::revalue(Simulation& copy, const workload::StageCosts& other) const {
  // Each compute action's pieces, timed as compute() times them.
  for (const KeptAction& kept : kept_actions_) {
    const Action& a = program_.ranks[static_cast<std::size_t>(kept.r)][kept.k];
    const workload::StageCost& c = other.stages[a.stage];
    PieceClock clock{action_times(kept.r, kept.k, -1, other)};
    for (std::size_t j = 0; j < kept.count; ++j) {
      const KeptPiece& piece = kept_pieces_[kept.first + j];
      const double share = piece.unit >= 0 ? unit_share(a.op, c, static_cast<std::size_t>(piece.unit)) : piece.share;
      const PieceClock::Part part = clock.next(share, j + 1 == kept.count);
      core::Task& task = copy.graph.task(piece.task);
      if (piece.train) {
        // Its pieces alone follow the action's time; what the lowering
        // tied it to after making it stays.
        hw::BucketTrain& train = copy.trains[task.route - 1];
        const hw::BucketTrain timed = bucket_train(clock.whole.duration, c);
        train.piece = timed.piece;
        train.last_piece = timed.last_piece;
      } else {
        task.duration = stretched(kept.q, part.duration, part.tp + part.cp + part.ep);
      }
    }
  }
  // The activations' memory on top of what the lowering itself gave, in
  // the entries the first plan's activations made (every task they touch
  // has one, whatever the bytes).
  for (const ActivationBase& a : activation_base_) {
    hw::MemoryEffect& e = copy.memory.effect_of(a.task);
    e.allocate_at_start = a.before.allocate_at_start;
    e.release_at_end = a.before.release_at_end;
  }
  copy.host_offloads.clear();
  add_activation_effects(
      other, [&](core::TaskId t, int) -> hw::MemoryEffect& { return copy.memory.effect_of(t); }, copy.host_offloads);
}

}  // namespace detail

}  // namespace trainsim::lower
