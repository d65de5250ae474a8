#include "lower/simulation.hpp"

#include <map>
#include <stdexcept>
#include <string>

#include "hw/topology.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

namespace {

core::ResourceId stream_id(int rank, StreamKind kind) {
  return static_cast<core::ResourceId>(rank * kStreamsPerRank + static_cast<int>(kind));
}

core::Time compute_duration(const schedule::Action& a, const workload::StageCost& c) {
  switch (a.op) {
    case schedule::Op::kForward: return c.forward;
    case schedule::Op::kBackward: return c.backward();
    case schedule::Op::kInputGrad: return c.input_grad;
    case schedule::Op::kWeightGrad: return c.weight_grad;
  }
  return core::Time::zero();
}

}  // namespace

std::unique_ptr<Simulation> lower(const schedule::Program& program, const schedule::Shape& shape,
                                  const workload::StageCosts& costs, const hw::ClusterSpec& cluster,
                                  const std::vector<int>& gpu_of_rank) {
  if (static_cast<int>(costs.stages.size()) != shape.stages) {
    throw std::logic_error("lower: costs for " + std::to_string(costs.stages.size()) + " stages, shape has " +
                           std::to_string(shape.stages));
  }
  if (static_cast<int>(gpu_of_rank.size()) != shape.ranks) throw std::logic_error("lower: placement size");

  auto sim = std::make_unique<Simulation>();
  sim->gpu_of_rank = gpu_of_rank;
  const core::ResourceId network_id = static_cast<core::ResourceId>(shape.ranks * kStreamsPerRank);
  hw::Topology topology(cluster, gpu_of_rank, sim->network);

  for (int r = 0; r < shape.ranks; ++r) {
    sim->memory.add_pool(hw::MemoryPool("GPU " + std::to_string(gpu_of_rank[r]),
                                        static_cast<std::int64_t>(cluster.node.gpu.memory_bytes())));
  }

  auto add_task = [&](const core::Task& task, const TaskInfo& info) {
    const core::TaskId id = sim->graph.add(task);
    sim->info.push_back(info);
    return id;
  };

  // Compute actions, in each rank's issue order.
  std::vector<std::vector<core::TaskId>> compute_order(shape.ranks);
  std::vector<std::vector<core::TaskId>> comm_order(shape.ranks);
  std::vector<std::vector<core::TaskId>> task_of(shape.ranks);
  for (int r = 0; r < shape.ranks; ++r) {
    for (const schedule::Action& a : program.ranks[r]) {
      const workload::StageCost& c = costs.stages[a.stage];
      core::Task t;
      t.resource = stream_id(r, StreamKind::kCompute);
      t.duration = compute_duration(a, c);
      const core::TaskId id = add_task(t, {TaskKind::kCompute, a, r, -1, false});
      task_of[r].push_back(id);
      compute_order[r].push_back(id);
    }
  }

  // Data dependencies; crossing ranks, they become transfers on the network.
  std::vector<std::pair<core::TaskId, core::TaskId>> edges;
  for (const schedule::Dependency& d : schedule::dependencies(program, shape)) {
    const core::TaskId before = task_of[d.before.rank][d.before.index];
    const core::TaskId after = task_of[d.after.rank][d.after.index];
    const schedule::Action& producer = program.ranks[d.before.rank][d.before.index];
    const workload::StageCost& c = costs.stages[producer.stage];
    const double bytes = d.kind == schedule::EdgeKind::kActivation ? c.send_forward_bytes
                         : d.kind == schedule::EdgeKind::kGradient ? c.send_backward_bytes
                                                                   : 0.0;
    if (d.before.rank == d.after.rank || bytes <= 0.0) {
      edges.emplace_back(before, after);
      continue;
    }
    core::Task t;
    t.resource = network_id;
    t.amount = bytes;
    t.route = topology.route(gpu_of_rank[d.before.rank], gpu_of_rank[d.after.rank]);
    const core::TaskId x = add_task(
        t, {TaskKind::kTransfer, producer, d.before.rank, d.after.rank, d.kind == schedule::EdgeKind::kGradient});
    edges.emplace_back(before, x);
    edges.emplace_back(x, after);
  }

  // End of iteration: gradient all-reduce on the comm stream once the rank's
  // last backward is done, then the optimizer step.
  for (int r = 0; r < shape.ranks; ++r) {
    core::Time all_reduce, optimizer;
    std::map<int, bool> seen;
    for (const schedule::Action& a : program.ranks[r]) {
      if (seen[a.stage]) continue;
      seen[a.stage] = true;
      all_reduce += costs.stages[a.stage].grad_all_reduce;
      optimizer += costs.stages[a.stage].optimizer_step;
    }
    core::TaskId last = compute_order[r].empty() ? 0 : compute_order[r].back();
    const bool has_last = !compute_order[r].empty();
    if (all_reduce > core::Time::zero()) {
      core::Task t;
      t.resource = stream_id(r, StreamKind::kComm);
      t.duration = all_reduce;
      const core::TaskId id = add_task(t, {TaskKind::kGradAllReduce, {}, r, -1, false});
      if (has_last) edges.emplace_back(last, id);
      comm_order[r].push_back(id);
      last = id;
    }
    core::Task t;
    t.resource = stream_id(r, StreamKind::kCompute);
    t.duration = optimizer;
    const core::TaskId id = add_task(t, {TaskKind::kOptimizer, {}, r, -1, false});
    if (has_last || all_reduce > core::Time::zero()) edges.emplace_back(last, id);
    compute_order[r].push_back(id);
  }

  for (const auto& [a, b] : edges) sim->graph.add_edge(a, b);
  sim->graph.finalize();

  // Memory: model state is resident from the start; a micro-batch's activations
  // are taken when its F starts and given back when its backward ends.
  for (int r = 0; r < shape.ranks; ++r) {
    std::map<int, bool> seen;
    for (const schedule::Action& a : program.ranks[r]) {
      if (seen[a.stage]) continue;
      seen[a.stage] = true;
      sim->memory.pool(r).allocate(costs.stages[a.stage].model_state_bytes, core::Time::zero());
    }
    for (std::size_t k = 0; k < program.ranks[r].size(); ++k) {
      const schedule::Action& a = program.ranks[r][k];
      const std::int64_t bytes = costs.stages[a.stage].activation_bytes;
      hw::MemoryEffect e;
      e.pool = static_cast<std::uint32_t>(r);
      if (a.op == schedule::Op::kForward) e.allocate_at_start = bytes;
      if (a.op == schedule::Op::kBackward || a.op == schedule::Op::kWeightGrad) e.release_at_end = bytes;
      if (e.allocate_at_start != 0 || e.release_at_end != 0) sim->memory.set_effect(task_of[r][k], e);
    }
  }

  for (int r = 0; r < shape.ranks; ++r) {
    sim->streams.push_back(std::make_unique<hw::Stream>(std::move(compute_order[r])));
    sim->streams.push_back(std::make_unique<hw::Stream>(std::move(comm_order[r])));
  }
  return sim;
}

void run(Simulation& sim) {
  core::Engine engine(sim.graph);
  for (auto& s : sim.streams) s->set_id(engine.add_resource(*s));
  const core::ResourceId completion = engine.add_resource(sim.network);
  const core::ResourceId timers = engine.add_resource(sim.network);
  sim.network.set_ids(completion, timers);
  engine.add_observer(sim.memory);
  sim.timeline = engine.run();
}

}  // namespace trainsim::lower
