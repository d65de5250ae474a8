#include "lower/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "hw/collective_layout.hpp"
#include "lower/lowering.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

namespace detail {

core::TaskId Lowering::collective_task(int q, const std::tuple<int, int, int, int, int>& key, hw::CollectiveKind kind,
                                       double bytes, const RankGroup& group, int participants, core::Time analytic,
                                       const TaskInfo& info, CommStream stream, double across_share,
                                       core::Time host_copy) {
  const std::optional<core::Time> fixed =
      options_.collectives == CollectiveModel::kAnalytic ? std::optional<core::Time>(analytic) : std::nullopt;
  core::Task t;
  t.resource = runner_id_;
  const auto group_id = [&] {
    if (!group.id) group.id = sim_->collectives->add_group(group.members, group.copies);  // copied only when needed
    return *group.id;
  };
  const std::optional<std::uint32_t> solo =
      solo_collectives_ && participants == 1 ? sim_->collectives->solo_route(kind, group_id()) : std::nullopt;
  if (solo) {
    t.route = *solo;
    t.duration = analytic;
    t.amount = bytes;
  } else {
    t.route = instance(key, participants, [&] {
      return sim_->collectives->add(kind, bytes, group_id(), participants, fixed, across_share, host_copy);
    });
  }
  const core::TaskId id = add_task(t, info);
  if (stream == CommStream::kUnordered) return id;
  std::optional<core::TaskId>& previous = (stream == CommStream::kGathers ? last_gather_ : last_collective_)[q];
  if (previous) edges_.emplace_back(*previous, id);
  if (stream == CommStream::kCollectives) collective_before_last_[q] = previous;
  previous = id;
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
  const bool moe_flows = options_.collectives == CollectiveModel::kFlow && has_experts();
  const bool groups_unlike = symmetric() && moe_flows && !expert_groups_alike();
  if (symmetric() && (custom || !placement_is_uniform() || groups_unlike || !shard_groups_alike())) {
    // One pipeline could not stand for the others: simulate every GPU.
    fidelity_ = Fidelity::kFull;
    sim_->fell_back_to_full = true;
    sim_->fell_back_because = custom                     ? "custom network"
                              : !placement_is_uniform() ? "placement not uniform"
                              : groups_unlike           ? "expert groups laid out unlike"
                                                        : "shard groups laid out unlike";
  }
  if (symmetric()) {
    pipelines_.push_back({0, 0});
  } else {
    for (int d = 0; d < plan_.replicas(); ++d) {
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
  sim_->every_gpu = !symmetric();
  // The estimate is never below what lowering makes: room reserved up front
  // spares copies of the largest vectors (reserved, untouched room costs no
  // memory until used).
  const auto foreseen = static_cast<std::size_t>(sim_->estimate.tasks);
  sim_->graph.reserve(foreseen);
  if (options_.task_info) {
    sim_->info.reserve(foreseen);
  } else {
    sim_->brief.reserve(foreseen);
  }
  effects_.of_task.reserve(foreseen);
  effects_.pool.reserve(foreseen);
  sim_->pipeline_ranks = R;
  for (const Pipeline& p : pipelines_) {
    for (int r = 0; r < R; ++r) sim_->gpu_of_rank.push_back(gpu(r, p));
    sim_->pipeline_coordinates.push_back({p.replica, p.tensor});
  }
  for (const workload::StageCost& c : costs_.stages) sim_->stage_layers.push_back(c.layers);
  bool moe = false;
  for (const workload::StageCost& c : costs_.stages) moe = moe || c.moe_layers > 0;
  if (moe) {
    for (const workload::StageCost& c : costs_.stages) {
      sim_->ep_stages.push_back({c.ep_forward_chunks, c.ep_backward_chunks, c.moe_layers, c.input_grad.to_seconds()});
    }
    sim_->a2a_overlap = plan_.overlap.moe_a2a;
    sim_->a2a_slowdown = plan_.overlap.compute_slowdown;
  }
  stages_of_rank_.resize(R);
  for (int s = 0; s < shape_.stages; ++s) stages_of_rank_[shape_.stage_rank[s]].push_back(s);

  // The topology holds the simulated GPUs, and with flow collectives every
  // member of their groups.
  std::vector<int> gpus = sim_->gpu_of_rank;
  if (options_.collectives == CollectiveModel::kFlow) {
    for (int r = 0; r < R; ++r) {
      for (int d = 0; d < plan_.replicas(); ++d) gpus.push_back(plan_.gpu_of(r, d, 0));
    }
  }
  // Symmetric with analytic collectives: only the pipeline sends between the
  // representative's GPUs take routes, and those GPUs alone are built.
  sim_->topology = std::make_unique<hw::Topology>(
      cluster_, sim_->network, gpus, !symmetric() || options_.collectives == CollectiveModel::kFlow);
  sim_->network.record_rates(options_.record_link_rates);
  sim_->blocking_sends = options_.blocking_sends;
  sim_->shard_queue = plan_.zero_stage == 3 && !plan_.fsdp_separate_reduce_scatter_group;
  sim_->shard_groups = plan_.zero_stage == 3 && plan_.shard_replicas() > 1;
  sim_->flow_collectives = options_.collectives == CollectiveModel::kFlow;

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
  sim_->memory.keep_timelines(options_.memory_timelines);
  for (int q = 0; q < Q; ++q) {
    sim_->memory.add_pool(hw::MemoryPool("GPU " + std::to_string(sim_->gpu_of_rank[q]),
                                         tensor_capacity_bytes(cluster_.node.gpu, options_.cuda_context_bytes)));
  }
  compute_order_.resize(Q);
  first_.resize(Q);
  last_.resize(Q);
  last_collective_.resize(Q);
  collective_before_last_.resize(Q);
  last_gather_.resize(Q);
  peer_links_.resize(Q);

  solo_collectives_ = options_.collectives == CollectiveModel::kAnalytic;
  for (const workload::StageCost& c : costs_.stages) {
    if (plan_.overlap.grad_reduce && merges_bucket_train(options_, symmetric(), plan_.overlap.param_gather, c)) {
      solo_collectives_ = false;
    }
  }
  find_concatenated_weight_grads();
  for (int p = 0; p < P; ++p) {
    lower_pipeline(p);
    if (options_.progress) options_.progress(static_cast<std::size_t>(p) + 1, static_cast<std::size_t>(P));
  }
  for (int p = 0; p < P; ++p) wire_dependencies(p);

  sim_->graph.add_edges(std::move(edges_));  // taken over, not copied
  sim_->graph.finalize();

  // Memory: model state is resident from the start; a micro-batch's
  // activations are taken when its F starts and given back when its
  // backward ends (add_activation_effects).
  for (int q = 0; q < Q; ++q) {
    for (int s : stages_of_rank_[q % R]) sim_->memory.pool(q).allocate_resident(costs_.stages[s].model_state_bytes);
  }
  if (!keeping_) {
    add_activation_effects(costs_, [&](core::TaskId t, int q) -> Effect& { return effects_.of(t, q); },
                           sim_->host_offloads);
  } else {
    // Each task the activations touch, with what the lowering alone gave
    // it: a copy starts from these (revalue).
    const Effects before = effects_;
    std::vector<core::TaskId> touched;
    add_activation_effects(
        costs_,
        [&](core::TaskId t, int q) -> Effect& {
          touched.push_back(t);
          return effects_.of(t, q);
        },
        sim_->host_offloads);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (core::TaskId t : touched) activation_base_.push_back({t, t < before.of_task.size() ? before.of_task[t] : Effect{}});
  }
  hand_over(effects_, sim_->memory);
  for (int q = 0; q < Q; ++q) {
    sim_->streams.push_back(std::make_unique<hw::Stream>(std::move(compute_order_[q])));
    sim_->streams.back()->set_trains(&sim_->trains);
  }
  sim_->collectives->set_trains(&sim_->trains);
  sim_->comm_slowdown = options_.comm_slowdown;
  if (options_.comm_slowdown > 0.0) {
    sim_->interference = std::make_unique<Interference>(*sim_, options_.comm_slowdown);
    sim_->collectives->set_listener(sim_->interference.get());
  }
  return std::move(sim_);
}

void Lowering::hand_over(const Effects& effects, hw::MemoryTracker& memory) {
  std::size_t with_effect = 0;
  for (const std::int32_t pool : effects.pool) with_effect += pool >= 0 ? 1 : 0;
  memory.reserve_effects(effects.of_task.size(), with_effect);
  for (core::TaskId task = 0; task < effects.of_task.size(); ++task) {
    const std::int32_t pool = effects.pool[task];
    if (pool < 0) continue;  // in task order, as a map would give
    const Effect& effect = effects.of_task[task];
    memory.set_effect(task, {static_cast<std::uint32_t>(pool), effect.allocate_at_start, effect.release_at_end});
  }
}

PipelineWork Lowering::work_per_pipeline() const {
  const bool full = !symmetric();
  PipelineWork work;
  // A collective over the dp replicas, as flows: n flows a ring step, over
  // 2 (n - 1) steps for an all-reduce (`all_reduce`), n - 1 for a
  // reduce-scatter or an all-gather (`ring`), at most kMaxRingSteps either way
  // (trees and hierarchical rings take fewer).
  const double n = plan_.replicas();
  const bool flows = options_.collectives == CollectiveModel::kFlow;
  const double steps_cap = hw::kMaxRingSteps;
  const double ring = flows ? n * std::min(n - 1, steps_cap) : 0.0;
  const double all_reduce = flows ? n * std::min(2 * (n - 1), steps_cap) : 0.0;
  // A MoE stage's collectives over dp add a second over its experts'
  // expert-data-parallel group (RankLowering::dp_collectives): the stage's
  // ep x etp such groups at once (times tp below, so over tp here).
  const double ne = plan_.expert_replicas();
  const double expert_all_reduce =
      flows ? ne * std::min(2 * (ne - 1), steps_cap) * plan_.ep * plan_.etp / plan_.tp : 0.0;
  const auto twice = [&](const workload::StageCost& c) { return c.expert_params > 0.0 && ne > 1 ? 2.0 : 1.0; };
  // ZeRO-3 with flow collectives: a MoE unit's gather and scatter run the
  // experts' share over edp as a second task (unit_collectives), a ring.
  const double expert_ring = flows ? ne * std::min(ne - 1, steps_cap) * plan_.ep * plan_.etp / plan_.tp : 0.0;
  const auto unit_twice = [&](const workload::StageCost& c) { return flows ? twice(c) : 1.0; };
  // The optimizer step gathers every stage of its rank (ZeRO-1/2): at most
  // this many, each over dp and, on a MoE stage, over edp.
  const double stages_per_rank = std::ceil(static_cast<double>(shape_.stages) / shape_.ranks);
  double most_twice = 1.0;
  for (const workload::StageCost& c : costs_.stages) most_twice = std::max(most_twice, twice(c));
  std::vector<char> cut(static_cast<std::size_t>(shape_.stages));
  for (const auto& actions : program_.ranks) {
    std::fill(cut.begin(), cut.end(), 0);
    // Overlap::param_gather: a stage's first forward runs as a piece per
    // bucket, each after a gather of its own (counted for every stage: more
    // than enough).
    for (const workload::StageCost& c : costs_.stages) {
      const double b = static_cast<double>(c.param_bucket_gather.size());
      work.tasks += (1 + twice(c)) * b;
      work.flow_steps += b * (ring + (twice(c) > 1 ? expert_all_reduce : 0.0));
    }
    for (auto it = actions.rbegin(); it != actions.rend(); ++it) {  // from the end: a stage's last backward first
      const Action& a = *it;
      const workload::StageCost& c = costs_.stages[a.stage];
      const double buckets = static_cast<double>(std::max<std::size_t>(1, c.grad_bucket_share.size()));
      // ZeRO-3: a unit's gather, its part of an action, its gradient scatter.
      const double units = static_cast<double>(c.shard_units.size());
      if (schedule::is_compute(a.op)) {
        // Flow collectives: a MoE action's exchanges as tasks, each layer's
        // cutting its compute twice (and a piece of no time first).
        const auto& exchanges = a.op == Op::kForward ? c.ep_forward_collectives : c.ep_backward_collectives;
        if (flows && a.op != Op::kWeightGrad && !exchanges.empty() && !c.sharded()) {
          const double layers = c.moe_layers;
          const double count = layers * static_cast<double>(exchanges.size()) +
                               (a.op == Op::kForward ? 0.0 : c.moe_layers_redone * static_cast<double>(c.ep_redo_collectives.size()));
          work.tasks += count + 2 * layers + 1;
          // An all-to-all over n GPUs: n (n - 1) flows; the stage's tp x dp / n
          // groups at once (times tp below); a ring's are fewer.
          const double n = std::max(plan_.ep, plan_.etp);
          work.flow_steps += count * plan_.replicas() * (n - 1);
        }
        const bool last_backward = schedule::is_backward_end(a.op) && !cut[a.stage];
        if (last_backward) cut[a.stage] = 1;
        const bool needs_params = a.op != Op::kWeightGrad;
        const double pieces = c.sharded() && needs_params ? units : last_backward ? buckets : 1;
        // FSDP2's copy-outs: at most one a unit an action that uses the parameters.
        const double copies = c.sharded() && needs_params && plan_.fsdp_copy_out ? units : 0.0;
        // DeepSpeed's second gathers: one a recomputed unit a backward.
        double regathers = 0.0;
        if (c.sharded() && (a.op == Op::kBackward || a.op == Op::kInputGrad)) {
          for (const workload::ShardUnit& u : c.shard_units) regathers += u.regather_bytes > 0.0 ? 1.0 : 0.0;
        }
        const double scatters = c.sharded() && schedule::is_backward_end(a.op) ? units : 0.0;
        const double replicated = plan_.zero_stage == 3 && plan_.shard_replicas() > 1 ? scatters : 0.0;
        // (HSDP with experts: their shard's all-reduce a second task, over edp at most.)
        work.tasks += pieces + copies + regathers + (full && plan_.tp > 1 ? 1 : 0) + (scatters + replicated) * unit_twice(c);
        work.flow_steps += (scatters + regathers) * ring + replicated * all_reduce +
                           (unit_twice(c) > 1 ? scatters * expert_ring + replicated * expert_all_reduce : 0.0);
      } else if (a.op == Op::kReduceGrad) {
        const bool embedding = a.stage == 0 || a.stage + 1 == shape_.stages;  // a tied embedding's all-reduce
        const bool copies = shape_.pipelines > 1;  // DualPipe's copies adding their gradients
        work.tasks += twice(c) * buckets + (embedding ? 1 : 0) + (copies ? 1 : 0);
        work.flow_steps += buckets * (all_reduce + (twice(c) > 1 ? expert_all_reduce : 0.0));
      } else if (a.op == Op::kOptimizer) {
        work.tasks += 1 + stages_per_rank * most_twice;  // and ZeRO-1/2's parameter gathers
        work.flow_steps += stages_per_rank * (ring + (most_twice > 1 ? expert_all_reduce : 0.0));
      } else if (a.op == Op::kUnshard) {
        const double gathered = a.unit() >= 0 ? 1.0 : units;  // its own unit, or every unit of the stage
        work.tasks += gathered * unit_twice(c);
        work.flow_steps += gathered * ring + (unit_twice(c) > 1 ? gathered * expert_ring : 0.0);
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

}  // namespace detail

using detail::Lowering;

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
                                  const Wiring& wiring, const workload::StageCosts& costs,
                                  const hw::ClusterSpec& cluster, const workload::Plan& plan, const Options& options) {
  return Lowering(program, shape, wiring, costs, cluster, plan, options).build();
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
