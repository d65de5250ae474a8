#include "lower/burst.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "hw/collective.hpp"
#include "hw/collective_layout.hpp"
#include "workload/burst_planner.hpp"
#include "workload/stage_costs.hpp"
#include "workload/transformer.hpp"

namespace trainsim::lower {

namespace {

using schedule::Action;
using schedule::Op;

// Gives each GPU's idle stretches to the background job as the engine runs:
// a span opens when the GPU's compute task ends and closes when the next starts.
class BackgroundFill final : public core::TaskObserver {
 public:
  explicit BackgroundFill(Simulation& sim)
      : sim_(sim), idle_since_(sim.gpu_of_rank.size(), core::Time::zero()) {
    sim_.background.assign(sim.gpu_of_rank.size(), {});
  }
  void on_start(core::TaskId task, core::Time now) override {
    const TaskInfo& ti = sim_.info[task];
    if (ti.kind != TaskKind::kCompute) return;
    if (const auto since = idle_since_[ti.rank]; since && now > *since) sim_.background[ti.rank].emplace_back(*since, now);
    idle_since_[ti.rank].reset();
  }
  void on_finish(core::TaskId task, core::Time now) override {
    const TaskInfo& ti = sim_.info[task];
    if (ti.kind == TaskKind::kCompute) idle_since_[ti.rank] = now;
  }
  // The iteration ends: every GPU idle since some time gives the rest away.
  void close(core::Time end) {
    for (std::size_t q = 0; q < idle_since_.size(); ++q) {
      if (idle_since_[q] && end > *idle_since_[q]) sim_.background[q].emplace_back(*idle_since_[q], end);
    }
  }

 private:
  Simulation& sim_;
  std::vector<std::optional<core::Time>> idle_since_;
};

}  // namespace

std::unique_ptr<Simulation> lower_burst(const workload::LayerTable& table, const std::vector<int>& layer_gpus,
                                        int global_batch, const hw::ClusterSpec& cluster, const BurstOptions& options) {
  const int G = cluster.gpus();
  const std::size_t L = table.layers.size();
  if (layer_gpus.size() != L) throw std::logic_error("lower_burst: one GPU count per layer is needed");
  for (int w : layer_gpus) {
    if (w < 1 || w > G || w > global_batch) throw std::logic_error("lower_burst: a layer's GPU count is out of range");
  }
  // Per layer and GPU of it: a forward, a backward and an all-reduce task;
  // per layer, moves of samples to and from the previous layer's GPUs (at
  // most one per GPU of either, each way).
  // With flow collectives, each layer's all-reduce over its w GPUs is a
  // ring of 2 (w - 1) steps (at most kMaxRingSteps) of w flows.
  const bool flows = options.collectives == CollectiveModel::kFlow;
  PipelineWork per_layer_table;
  for (std::size_t i = 0; i < L; ++i) {
    const double w = layer_gpus[i];
    per_layer_table.tasks += 3.0 * w + 2.0 * (w + (i ? layer_gpus[i - 1] : 0));
    per_layer_table.flow_steps += flows ? w * std::min(2.0 * (w - 1), static_cast<double>(hw::kMaxRingSteps)) : 0.0;
  }
  const WorkEstimate work = work_estimate(1, G, per_layer_table, flows);
  check_work(work, options.limits, fmt::format("simulating {} layers on up to {} GPUs", L, G),
             "simulate fewer GPUs or fewer layers");
  auto sim = std::make_unique<Simulation>();
  sim->estimate = work;
  sim->pipelines = 1;
  sim->flow_collectives = flows;
  sim->pipeline_ranks = G;
  for (int g = 0; g < G; ++g) sim->gpu_of_rank.push_back(g);
  for (const workload::Layer& l : table.layers) sim->stage_names.push_back(l.name);
  sim->topology = std::make_unique<hw::Topology>(cluster, sim->network, sim->gpu_of_rank);
  sim->network.record_rates(options.record_link_rates);
  apply_link_faults(*sim->topology, options.link_faults);
  sim->collectives = std::make_unique<hw::CollectiveRunner>(cluster, *sim->topology, sim->network);
  const auto network_id = static_cast<core::ResourceId>(G);
  const auto runner_id = static_cast<core::ResourceId>(G + 2);  // after the network's two ids (see run_burst)
  sim->gpu_memory_bytes = static_cast<std::int64_t>(cluster.node.gpu.memory_bytes());
  sim->cuda_context_bytes = options.cuda_context_bytes;
  for (int g = 0; g < G; ++g) {
    sim->memory.add_pool(
        hw::MemoryPool("GPU " + std::to_string(g), tensor_capacity_bytes(cluster.node.gpu, options.cuda_context_bytes)));
  }

  // Per GPU: how much longer its compute takes (a straggler, and the
  // background job's interference).
  std::vector<double> scale(G, options.background ? 1.0 + options.interference : 1.0);
  for (const GpuSpeed& s : options.gpu_speed) {
    if (s.gpu >= 0 && s.gpu < G) scale[s.gpu] /= s.factor;
  }
  std::vector<std::vector<core::TaskId>> order(G);
  std::vector<std::pair<core::TaskId, core::TaskId>> edges;
  std::map<core::TaskId, hw::MemoryEffect> effects;
  auto add = [&](const core::Task& t, const TaskInfo& info) {
    const core::TaskId id = sim->graph.add(t);
    sim->info.push_back(info);
    return id;
  };
  auto compute = [&](int g, core::Time duration, const Action& a) {
    core::Task t;
    t.resource = static_cast<core::ResourceId>(g);
    t.duration = scale[g] == 1.0 ? duration : core::Time::seconds(duration.to_seconds() * scale[g]);
    const core::TaskId id = add(t, {TaskKind::kCompute, a, g, -1});
    order[g].push_back(id);
    return id;
  };
  auto transfer = [&](int from, int to, double bytes, const Action& a) {
    core::Task t;
    t.resource = network_id;
    t.amount = bytes;
    t.route = sim->topology->route(from, to);
    return add(t, {TaskKind::kTransfer, a, from, to});
  };

  // Forward, layer by layer. fwd[i][g]: layer i's forward on GPU g.
  std::vector<std::vector<core::TaskId>> fwd(L), bwd(L);
  for (std::size_t i = 0; i < L; ++i) {
    const int w = layer_gpus[i];
    const workload::Layer& layer = table.layers[i];
    for (int g = 0; g < w; ++g) {
      const auto [first, last] = workload::sample_range(global_batch, w, g);
      const core::Time d = workload::layer_forward_time(table, i, last - first, cluster.node.gpu);
      const core::TaskId id = compute(g, d, {Op::kForward, static_cast<int>(i), 0});
      fwd[i].push_back(id);
      effects[id].allocate_at_start += static_cast<std::int64_t>(layer.output_bytes_per_sample * (last - first));
    }
    if (i == 0) continue;
    const int prev = layer_gpus[i - 1];
    // Samples that stay on a GPU (the same range there) wait on its own forward.
    for (int g = 0; g < std::min(w, prev); ++g) {
      const auto a = workload::sample_range(global_batch, prev, g), b = workload::sample_range(global_batch, w, g);
      if (std::min(a.second, b.second) > std::max(a.first, b.first)) edges.emplace_back(fwd[i - 1][g], fwd[i][g]);
    }
    for (const workload::SampleMove& m : workload::redistribution(global_batch, prev, w)) {
      const double bytes = m.samples * table.layers[i - 1].output_bytes_per_sample;
      const core::TaskId t = transfer(m.from, m.to, bytes, {Op::kSendF, static_cast<int>(i - 1), 0});
      edges.emplace_back(fwd[i - 1][m.from], t);
      edges.emplace_back(t, fwd[i][m.to]);
    }
  }
  // Backward, last layer first; then each layer's all-reduce over its GPUs.
  std::vector<std::optional<core::TaskId>> last_collective(G);
  for (std::size_t i = L; i-- > 0;) {
    const int w = layer_gpus[i];
    const workload::Layer& layer = table.layers[i];
    for (int g = 0; g < w; ++g) {
      const auto [first, last] = workload::sample_range(global_batch, w, g);
      const core::Time d = workload::layer_forward_time(table, i, last - first, cluster.node.gpu) * 2;
      const core::TaskId id = compute(g, d, {Op::kBackward, static_cast<int>(i), 0});
      bwd[i].push_back(id);
      edges.emplace_back(fwd[i][g], id);
      effects[id].release_at_end += static_cast<std::int64_t>(layer.output_bytes_per_sample * (last - first));
    }
    if (i + 1 < L) {
      const int next = layer_gpus[i + 1];
      for (int g = 0; g < std::min(w, next); ++g) {
        const auto a = workload::sample_range(global_batch, next, g), b = workload::sample_range(global_batch, w, g);
        if (std::min(a.second, b.second) > std::max(a.first, b.first)) edges.emplace_back(bwd[i + 1][g], bwd[i][g]);
      }
      for (const workload::SampleMove& m : workload::redistribution(global_batch, next, w)) {
        const double bytes = m.samples * layer.output_bytes_per_sample;
        const core::TaskId t = transfer(m.from, m.to, bytes, {Op::kSendB, static_cast<int>(i + 1), 0});
        edges.emplace_back(bwd[i + 1][m.from], t);
        edges.emplace_back(t, bwd[i][m.to]);
      }
    }
    const double grad_bytes = layer.params * workload::kActivationBytes;
    if (w > 1 && grad_bytes > 0.0) {
      std::vector<int> members(w);
      for (int g = 0; g < w; ++g) members[g] = g;
      const std::optional<core::Time> fixed =
          options.collectives == CollectiveModel::kAnalytic
              ? std::optional<core::Time>(hw::collective_time(hw::CollectiveKind::kAllReduce, grad_bytes,
                                                              hw::group_of(cluster, members), cluster.node))
              : std::nullopt;
      const std::uint32_t instance =
          sim->collectives->add(hw::CollectiveKind::kAllReduce, grad_bytes, members, w, fixed);
      for (int g = 0; g < w; ++g) {
        core::Task t;
        t.resource = runner_id;
        t.route = instance;
        const core::TaskId id = add(t, {TaskKind::kGradReduce, {Op::kReduceGrad, static_cast<int>(i), 0}, g, -1});
        edges.emplace_back(bwd[i][g], id);
        if (last_collective[g]) edges.emplace_back(*last_collective[g], id);
        last_collective[g] = id;
      }
    }
  }
  for (const auto& [a, b] : edges) sim->graph.add_edge(a, b);
  sim->graph.finalize();

  // Memory: each GPU holds the model state of the layers it runs from the
  // start; a layer's output for a GPU's samples is kept from its forward to
  // its backward.
  for (int g = 0; g < G; ++g) {
    double params = 0.0;
    for (std::size_t i = 0; i < L; ++i) {
      if (g < layer_gpus[i]) params += table.layers[i].params;
    }
    sim->memory.pool(g).allocate_resident(
        static_cast<std::int64_t>(params * workload::model_state_bytes_per_param(0, 1)));
  }
  for (auto& [task, effect] : effects) {
    effect.pool = static_cast<std::uint32_t>(sim->info[task].rank);
    sim->memory.set_effect(task, effect);
  }
  for (int g = 0; g < G; ++g) sim->streams.push_back(std::make_unique<hw::Stream>(std::move(order[g])));
  return sim;
}

void run_burst(Simulation& sim, bool background) {
  std::optional<BackgroundFill> fill;
  if (background) fill.emplace(sim);
  run(sim, fill ? &*fill : nullptr);
  if (fill) fill->close(sim.timeline.makespan);
}

}  // namespace trainsim::lower
