#include "workload/burst_planner.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/engine.hpp"
#include "hw/collective.hpp"
#include "hw/flow_network.hpp"
#include "hw/topology.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

std::pair<int, int> sample_range(int batch, int width, int gpu) {
  const int q = batch / width, r = batch % width;
  const int first = gpu * q + std::min(gpu, r);
  return {first, first + q + (gpu < r ? 1 : 0)};
}

std::vector<SampleMove> redistribution(int batch, int from, int to) {
  std::vector<SampleMove> moves;
  for (int a = 0; a < from; ++a) {
    const auto [a0, a1] = sample_range(batch, from, a);
    for (int b = 0; b < to; ++b) {
      if (a == b) continue;
      const auto [b0, b1] = sample_range(batch, to, b);
      const int overlap = std::min(a1, b1) - std::max(a0, b0);
      if (overlap > 0) moves.push_back({a, b, overlap});
    }
  }
  return moves;
}

int BurstCosts::width_index(int gpus) const {
  const auto it = std::find(widths.begin(), widths.end(), gpus);
  return it == widths.end() ? -1 : static_cast<int>(it - widths.begin());
}

std::vector<int> candidate_widths(int cluster_gpus, int global_batch) {
  std::vector<int> w;
  for (int d = 1; d <= cluster_gpus && d <= global_batch; ++d) {
    if (cluster_gpus % d == 0) w.push_back(d);
  }
  return w;
}

namespace {

// The time the moves take alone on the network: their flows on the topology,
// all starting together. One network and topology serve every such run (each
// run leaves the network idle, and routes are found once per pair).
class MoveTimer {
 public:
  explicit MoveTimer(const hw::ClusterSpec& cluster) : topology_(cluster, network_) {}

  core::Time time(const std::vector<SampleMove>& moves, double bytes_per_sample) {
    if (moves.empty() || !(bytes_per_sample > 0.0)) return core::Time::zero();
    core::TaskGraph graph;
    for (const SampleMove& m : moves) {
      core::Task t;
      t.resource = 0;  // the network's completion id, below
      t.amount = m.samples * bytes_per_sample;
      t.route = topology_.route(m.from, m.to);
      graph.add(t);
    }
    graph.finalize();
    core::Engine engine(graph);
    const core::ResourceId completion = engine.add_resource(network_);
    const core::ResourceId timers = engine.add_resource(network_);
    network_.set_ids(completion, timers);
    return engine.run().makespan;
  }

 private:
  hw::FlowNetwork network_;
  hw::Topology topology_;
};

}  // namespace

BurstCosts burst_costs(const LayerTable& table, const hw::ClusterSpec& cluster, int global_batch,
                       double compute_scale) {
  BurstCosts c;
  c.widths = candidate_widths(cluster.gpus(), global_batch);
  const std::size_t W = c.widths.size();
  std::vector<hw::CollectiveGroup> groups;
  for (int w : c.widths) {
    std::vector<int> members(w);
    for (int g = 0; g < w; ++g) members[g] = g;
    groups.push_back(hw::group_of(cluster, members));
  }
  MoveTimer timer(cluster);
  std::map<std::tuple<std::size_t, std::size_t, double>, core::Time> moved;  // layers often share an output size
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const Layer& l = table.layers[i];
    c.names.push_back(l.name);
    std::vector<core::Time> f, a;
    for (std::size_t k = 0; k < W; ++k) {
      const int w = c.widths[k];
      const int busiest = sample_range(global_batch, w, 0).second;
      const core::Time t = layer_forward_time(table, i, busiest, cluster.node.gpu);
      f.push_back(compute_scale == 1.0 ? t : core::Time::seconds(t.to_seconds() * compute_scale));
      // The planner sums GPUs x 3F over the layers in picoseconds: keep that inside 64 bits.
      const auto layers = static_cast<std::int64_t>(table.layers.size());
      if (f.back().ps() > (core::Time::kLimitPs / 3 / w) / layers) {
        throw std::overflow_error("layer " + l.name + " on " + std::to_string(w) +
                                  " GPUs takes too long for the planner to sum its GPU-time");
      }
      const double bytes = l.params * kActivationBytes;
      a.push_back(w > 1 && bytes > 0.0
                      ? hw::collective_time(hw::CollectiveKind::kAllReduce, bytes, groups[k], cluster.node)
                      : core::Time::zero());
    }
    c.forward.push_back(f);
    c.all_reduce.push_back(a);
    std::vector<std::vector<core::Time>> x(W, std::vector<core::Time>(W));
    if (i + 1 < table.layers.size()) {
      for (std::size_t from = 0; from < W; ++from) {
        for (std::size_t to = 0; to < W; ++to) {
          if (from == to) continue;
          const auto key = std::make_tuple(from, to, l.output_bytes_per_sample);
          auto it = moved.find(key);
          if (it == moved.end()) {
            const auto moves = redistribution(global_batch, c.widths[from], c.widths[to]);
            it = moved.emplace(key, timer.time(moves, l.output_bytes_per_sample)).first;
          }
          x[from][to] = it->second;
        }
      }
    } else {
      x.clear();
    }
    c.transfer.push_back(x);
  }
  return c;
}

namespace {

core::Time compute_of(const BurstCosts& c, std::size_t layer, std::size_t k) { return c.forward[layer][k] * 3; }

// GPU-time of one layer: its GPUs x its compute (ps; far below 2^63 for any plan the config allows).
std::int64_t gpu_time(const BurstCosts& c, std::size_t layer, std::size_t k) {
  return static_cast<std::int64_t>(c.widths[k]) * compute_of(c, layer, k).ps();
}

core::Time max0(core::Time t) { return t < core::Time::zero() ? core::Time::zero() : t; }

BurstPlan describe(const BurstCosts& c, const std::vector<std::size_t>& k) {
  BurstPlan plan;
  const std::size_t L = c.layers();
  core::Time time, backlog;
  std::int64_t used = 0, single = 0;
  plan.layers.resize(L);
  for (std::size_t n = L; n-- > 0;) {
    BurstLayerPlan& lp = plan.layers[n];
    lp.gpus = c.widths[k[n]];
    lp.compute = compute_of(c, n, k[n]);
    lp.all_reduce = c.all_reduce[n][k[n]];
    lp.amplification = static_cast<double>(gpu_time(c, n, k[n])) / static_cast<double>(compute_of(c, n, 0).ps());
    const core::Time out = n + 1 < L ? c.transfer[n][k[n]][k[n + 1]] : core::Time::zero();
    if (n + 1 < L) plan.layers[n + 1].transfer_in = out;
    time += lp.compute + out * 2;
    backlog = max0(backlog - out - c.forward[n][k[n]] * 2) + lp.all_reduce;
    used += gpu_time(c, n, k[n]);
    single += compute_of(c, n, 0).ps();
  }
  plan.exposed_reduce = backlog;
  plan.predicted = time + backlog;
  plan.amplification = single > 0 ? static_cast<double>(used) / static_cast<double>(single) : 1.0;
  return plan;
}

}  // namespace

BurstPlan evaluate_plan(const BurstCosts& costs, const std::vector<int>& gpus) {
  if (gpus.size() != costs.layers()) throw std::invalid_argument("a plan needs one GPU count per layer");
  std::vector<std::size_t> k;
  for (int g : gpus) {
    const int idx = costs.width_index(g);
    if (idx < 0) throw std::invalid_argument(std::to_string(g) + " GPUs is not a candidate width");
    k.push_back(static_cast<std::size_t>(idx));
  }
  return describe(costs, k);
}

BurstPlan plan_burst(const BurstCosts& costs, double amplification_limit) {
  const std::size_t L = costs.layers(), W = costs.widths.size();
  if (L == 0 || W == 0) throw std::invalid_argument("nothing to plan");
  std::int64_t single = 0;
  for (std::size_t n = 0; n < L; ++n) single += compute_of(costs, n, 0).ps();
  const double budget = amplification_limit * static_cast<double>(single);

  // A partial plan of layers n .. L-1 with layer n at width k.
  struct Point {
    core::Time time;     // compute and transfers of layers n .. L-1
    core::Time backlog;  // all-reduce queued when layer n's backward ends
    std::int64_t used = 0;
    std::uint32_t prev = 0;  // index into the frontier of (n + 1, width of layer n + 1)
    std::uint32_t prev_k = 0;
    core::Time total() const { return time + backlog; }
  };
  // frontier[n][k]: the partial plans no other beats.
  std::vector<std::vector<std::vector<Point>>> frontier(L, std::vector<std::vector<Point>>(W));
  auto prune = [](std::vector<Point>& pts) {
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return std::tie(a.time, a.backlog, a.used, a.prev_k, a.prev) < std::tie(b.time, b.backlog, b.used, b.prev_k, b.prev);
    });
    std::vector<Point> kept;
    for (const Point& p : pts) {
      const bool beaten = std::any_of(kept.begin(), kept.end(), [&](const Point& q) {
        return q.total() <= p.total() && q.used <= p.used;  // q.time <= p.time by the order
      });
      if (!beaten) kept.push_back(p);
    }
    pts = std::move(kept);
  };
  for (std::size_t k = 0; k < W; ++k) {
    Point p;
    p.time = compute_of(costs, L - 1, k);
    p.backlog = costs.all_reduce[L - 1][k];
    p.used = gpu_time(costs, L - 1, k);
    if (static_cast<double>(p.used) <= budget) frontier[L - 1][k].push_back(p);
  }
  for (std::size_t n = L - 1; n-- > 0;) {
    for (std::size_t k = 0; k < W; ++k) {
      std::vector<Point> pts;
      for (std::size_t next = 0; next < W; ++next) {
        const auto& from = frontier[n + 1][next];
        const core::Time x = costs.transfer[n][k][next];
        for (std::size_t i = 0; i < from.size(); ++i) {
          Point p;
          p.used = from[i].used + gpu_time(costs, n, k);
          if (static_cast<double>(p.used) > budget) continue;
          p.time = from[i].time + compute_of(costs, n, k) + x * 2;
          p.backlog = max0(from[i].backlog - x - costs.forward[n][k] * 2) + costs.all_reduce[n][k];
          p.prev = static_cast<std::uint32_t>(i);
          p.prev_k = static_cast<std::uint32_t>(next);
          pts.push_back(p);
        }
      }
      prune(pts);
      frontier[n][k] = std::move(pts);
    }
  }
  // The fastest complete plan; ties to less GPU-time, then to narrower first layers.
  std::size_t best_k = W, best_i = 0;
  for (std::size_t k = 0; k < W; ++k) {
    for (std::size_t i = 0; i < frontier[0][k].size(); ++i) {
      const Point& p = frontier[0][k][i];
      if (best_k == W) {
        best_k = k, best_i = i;
        continue;
      }
      const Point& b = frontier[0][best_k][best_i];
      if (std::make_pair(p.total(), p.used) < std::make_pair(b.total(), b.used)) best_k = k, best_i = i;
    }
  }
  if (best_k == W) throw std::invalid_argument("no plan fits the amplification limit");  // limit < 1
  std::vector<std::size_t> choice(L);
  std::size_t k = best_k, i = best_i;
  for (std::size_t n = 0; n < L; ++n) {
    choice[n] = k;
    const Point& p = frontier[n][k][i];
    k = p.prev_k;
    i = p.prev;
  }
  return describe(costs, choice);
}

}  // namespace trainsim::workload
