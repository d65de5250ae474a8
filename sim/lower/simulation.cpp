#include "lower/simulation.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "hw/topology.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

namespace {

using schedule::Action;
using schedule::Op;

core::ResourceId stream_id(int rank, StreamKind kind) {
  return static_cast<core::ResourceId>(rank * kStreamsPerRank + static_cast<int>(kind));
}

core::Time compute_duration(const Action& a, const workload::StageCost& c) {
  switch (a.op) {
    case Op::kForward: return c.forward;
    case Op::kBackward: return c.backward();
    case Op::kInputGrad: return c.input_grad;
    case Op::kWeightGrad: return c.weight_grad;
    default: return core::Time::zero();
  }
}

// The send a receive waits for: RECV_F(s, mb) <- SEND_F(s - 1, mb); RECV_B(s, mb) <- SEND_B(s + 1, mb).
std::tuple<Op, int, int> matching_send(const Action& recv) {
  if (recv.op == Op::kRecvF) return {Op::kSendF, recv.stage - 1, recv.microbatch};
  return {Op::kSendB, recv.stage + 1, recv.microbatch};
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
  const auto network_id = static_cast<core::ResourceId>(shape.ranks * kStreamsPerRank);
  hw::Topology topology(cluster, sim->network, gpu_of_rank);
  for (int r = 0; r < shape.ranks; ++r) {
    sim->memory.add_pool(hw::MemoryPool("GPU " + std::to_string(gpu_of_rank[r]),
                                        static_cast<std::int64_t>(cluster.node.gpu.memory_bytes())));
  }

  auto add_task = [&](core::Task task, const TaskInfo& info) {
    const core::TaskId id = sim->graph.add(task);
    sim->info.push_back(info);
    return id;
  };
  auto stream_task = [](int rank, StreamKind kind, core::Time duration) {
    core::Task t;
    t.resource = stream_id(rank, kind);
    t.duration = duration;
    return t;
  };

  std::vector<std::vector<int>> stages_of_rank(shape.ranks);
  for (int s = 0; s < shape.stages; ++s) stages_of_rank[shape.stage_rank[s]].push_back(s);

  // Pass 1: a task for every action that has one of its own. An action may
  // become a chain of tasks: the last backward of a stage is cut into one part
  // per gradient bucket, so that each bucket's reduction starts as soon as the
  // backward has produced it; REDUCE_GRAD is the chain of bucket reductions
  // (then the embedding all-reduce, for a tied embedding). What an action waits
  // for enters at its first task, what waits for it leaves from its last.
  std::vector<std::vector<std::optional<core::TaskId>>> task_of(shape.ranks);  // the last task
  std::map<std::pair<int, int>, core::TaskId> first_task_of;  // where it differs from the last
  std::vector<std::vector<core::TaskId>> compute_order(shape.ranks), comm_order(shape.ranks);
  std::map<std::tuple<Op, int, int>, schedule::ActionRef> sends;
  std::vector<std::vector<core::TaskId>> backward_parts(shape.stages);  // of each stage's last backward
  std::vector<std::optional<core::TaskId>> grad_reduced(shape.stages), embedding_sync_of_stage(shape.stages);
  std::vector<std::pair<core::TaskId, core::TaskId>> edges;
  // Transfers between each (sender, receiver) pair, in issue order.
  std::map<std::pair<int, int>, core::TaskId> last_transfer;

  for (int r = 0; r < shape.ranks; ++r) {
    const auto& actions = program.ranks[r];
    task_of[r].resize(actions.size());
    std::map<int, std::size_t> last_backward;  // stage -> index of its last backward-ending action
    for (std::size_t k = 0; k < actions.size(); ++k) {
      if (schedule::is_backward_end(actions[k].op)) last_backward[actions[k].stage] = k;
    }
    for (std::size_t k = 0; k < actions.size(); ++k) {
      const Action& a = actions[k];
      const TaskInfo info{TaskKind::kCompute, a, r, -1};
      if (schedule::is_compute(a.op)) {
        const workload::StageCost& c = costs.stages[a.stage];
        const core::Time duration = compute_duration(a, c);
        const bool split = schedule::is_backward_end(a.op) && last_backward.at(a.stage) == k;
        const std::size_t parts = split ? std::max<std::size_t>(1, c.grad_bucket_share.size()) : 1;
        core::Time done;
        for (std::size_t j = 0; j < parts; ++j) {
          // Parts share the duration by bucket size; the last takes the rounding.
          const core::Time d = j + 1 == parts ? duration - done
                                              : core::Time::seconds(duration.to_seconds() * c.grad_bucket_share[j]);
          // (grad_bucket_share has `parts` entries whenever parts > 1.)
          done += d;
          TaskInfo part = info;
          part.part = static_cast<int>(j);
          part.parts = static_cast<int>(parts);
          const core::TaskId id = add_task(stream_task(r, StreamKind::kCompute, d), part);
          compute_order[r].push_back(id);
          if (j == 0 && parts > 1) first_task_of[{r, static_cast<int>(k)}] = id;
          if (split) backward_parts[a.stage].push_back(id);
          task_of[r][k] = id;
        }
      } else if (a.op == Op::kSendF || a.op == Op::kSendB) {
        sends[{a.op, a.stage, a.microbatch}] = {r, static_cast<int>(k)};
        const workload::StageCost& c = costs.stages[a.stage];
        const double bytes = a.op == Op::kSendF ? c.send_forward_bytes : c.send_backward_bytes;
        if (bytes <= 0.0) continue;  // nothing to move: the consumer waits on the producer directly
        const int peer = shape.stage_rank[a.op == Op::kSendF ? a.stage + 1 : a.stage - 1];
        core::Task t;
        t.resource = network_id;
        t.amount = bytes;
        t.route = topology.route(gpu_of_rank[r], gpu_of_rank[peer]);
        const core::TaskId id = add_task(t, {TaskKind::kTransfer, a, r, peer});
        task_of[r][k] = id;
        if (auto it = last_transfer.find({r, peer}); it != last_transfer.end()) edges.emplace_back(it->second, id);
        last_transfer[{r, peer}] = id;
      } else if (a.op == Op::kReduceGrad) {
        // Wired to the backward's parts below; the data dependencies into
        // REDUCE_GRAD are covered by stream order.
        const workload::StageCost& c = costs.stages[a.stage];
        // Bucket tasks get consecutive ids; the wiring below relies on it.
        std::optional<core::TaskId> previous;
        const std::size_t buckets = std::max<std::size_t>(1, c.grad_bucket_reduce.size());
        for (std::size_t j = 0; j < buckets; ++j) {
          TaskInfo bucket{TaskKind::kGradReduce, a, r, -1};
          bucket.part = static_cast<int>(j);
          bucket.parts = static_cast<int>(buckets);
          const core::Time time = j < c.grad_bucket_reduce.size() ? c.grad_bucket_reduce[j] : core::Time::zero();
          const core::TaskId id = add_task(stream_task(r, StreamKind::kComm, time), bucket);
          comm_order[r].push_back(id);
          if (!previous) first_task_of[{r, static_cast<int>(k)}] = id;
          previous = id;
        }
        grad_reduced[a.stage] = *previous;
        if (c.embedding_grad_all_reduce > core::Time::zero()) {
          const core::TaskId sync = add_task(stream_task(r, StreamKind::kComm, c.embedding_grad_all_reduce),
                                             {TaskKind::kEmbeddingAllReduce, a, r, -1});
          edges.emplace_back(*previous, sync);
          comm_order[r].push_back(sync);
          embedding_sync_of_stage[a.stage] = sync;
          previous = sync;
        }
        task_of[r][k] = *previous;
      } else if (a.op == Op::kOptimizer) {
        core::Time step;
        for (int s : stages_of_rank[r]) step += costs.stages[s].optimizer_step;
        const core::TaskId id = add_task(stream_task(r, StreamKind::kCompute, step), {TaskKind::kOptimizer, a, r, -1});
        task_of[r][k] = id;
        compute_order[r].push_back(id);
        // ZeRO-1/2: each replica updated its shard; gather the full parameters.
        for (int s = 0; s < shape.stages; ++s) {
          if (shape.stage_rank[s] != r || costs.stages[s].param_all_gather <= core::Time::zero()) continue;
          const core::TaskId gather = add_task(stream_task(r, StreamKind::kComm, costs.stages[s].param_all_gather),
                                               {TaskKind::kParamAllGather, {Op::kOptimizer, s, 0}, r, -1});
          edges.emplace_back(id, gather);
          comm_order[r].push_back(gather);
        }
      }
    }
  }

  // Bucket j of a stage's gradients is ready when part j of its last backward ends.
  for (int s = 0; s < shape.stages; ++s) {
    const int r = shape.stage_rank[s];
    for (std::size_t k = 0; k < program.ranks[r].size(); ++k) {
      const Action& a = program.ranks[r][k];
      if (a.op != Op::kReduceGrad || a.stage != s) continue;
      const core::TaskId first_bucket = first_task_of.at({r, static_cast<int>(k)});
      const auto& parts = backward_parts[s];
      for (std::size_t j = 0; j < parts.size(); ++j) edges.emplace_back(parts[j], first_bucket + j);
    }
  }

  // Pass 2: a receive and a transfer-less send stand for the task they wait on.
  auto resolve = [&](schedule::ActionRef ref) -> std::optional<core::TaskId> {
    const Action& a = program.ranks[ref.rank][ref.index];
    if (a.op == Op::kRecvF || a.op == Op::kRecvB) {
      const schedule::ActionRef send = sends.at(matching_send(a));
      ref = send;
    }
    return task_of[ref.rank][ref.index];
  };
  // A zero-byte send has no task: its consumer depends on what the send depends on.
  std::map<std::pair<int, int>, core::TaskId> producer_of_send;
  const std::vector<schedule::Dependency> deps = schedule::dependencies(program, shape);
  for (const schedule::Dependency& d : deps) {
    const Action& after = program.ranks[d.after.rank][d.after.index];
    if ((after.op == Op::kSendF || after.op == Op::kSendB) && !task_of[d.after.rank][d.after.index]) {
      producer_of_send[{d.after.rank, d.after.index}] = *resolve(d.before);
    }
  }
  for (const schedule::Dependency& d : deps) {
    const Action& after = program.ranks[d.after.rank][d.after.index];
    const Action& before = program.ranks[d.before.rank][d.before.index];
    if (after.op == Op::kReduceGrad && schedule::is_compute(before.op)) continue;  // wired bucket by bucket
    std::optional<core::TaskId> from = resolve(d.before);
    std::optional<core::TaskId> to = resolve(d.after);
    if (auto it = first_task_of.find({d.after.rank, d.after.index}); it != first_task_of.end()) to = it->second;
    if (!from) {
      schedule::ActionRef send = d.before;
      const Action& a = program.ranks[send.rank][send.index];
      if (a.op == Op::kRecvF || a.op == Op::kRecvB) send = sends.at(matching_send(a));
      from = producer_of_send.at({send.rank, send.index});
    }
    if (!to || *from == *to) continue;
    edges.emplace_back(*from, *to);
  }

  // A tied embedding's gradient all-reduce joins the first and the last stage.
  const int last_stage = shape.stages - 1;
  if (embedding_sync_of_stage[0] && embedding_sync_of_stage[last_stage] && last_stage > 0) {
    edges.emplace_back(*grad_reduced[0], *embedding_sync_of_stage[last_stage]);
    edges.emplace_back(*grad_reduced[last_stage], *embedding_sync_of_stage[0]);
  }

  for (const auto& [a, b] : edges) sim->graph.add_edge(a, b);
  sim->graph.finalize();

  // Memory: model state is resident from the start; a micro-batch's activations
  // are taken when its F starts and given back when its backward ends.
  for (int r = 0; r < shape.ranks; ++r) {
    for (int s : stages_of_rank[r]) sim->memory.pool(r).allocate(costs.stages[s].model_state_bytes, core::Time::zero());
    for (std::size_t k = 0; k < program.ranks[r].size(); ++k) {
      const Action& a = program.ranks[r][k];
      if (!schedule::is_compute(a.op)) continue;
      const std::int64_t bytes = costs.stages[a.stage].activation_bytes;
      hw::MemoryEffect e;
      e.pool = static_cast<std::uint32_t>(r);
      if (a.op == Op::kForward) e.allocate_at_start = bytes;
      if (schedule::is_backward_end(a.op)) e.release_at_end = bytes;
      if (e.allocate_at_start != 0 || e.release_at_end != 0) sim->memory.set_effect(*task_of[r][k], e);
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
