// A custom network's reach: every pair of GPUs the plan makes exchange data
// has a path.
#include "config/sections.hpp"

#include "hw/custom_network.hpp"

namespace trainsim::config::detail {

// A custom network may leave GPUs apart. Every pair that exchanges data needs
// a path: pipeline neighbours, tensor- and data-parallel peers (any two of a
// group: a collective's ring may put them side by side), and the first and
// last stages, which all-reduce a tied embedding.
void check_custom_network_reach(const Scenario& sc, const Context& ctx) {
  const hw::ClusterSpec& cluster = sc.cluster;
  if (cluster.network.kind != hw::NetworkKind::kCustom) return;
  hw::FlowNetwork scratch;
  const hw::Topology topology(cluster, scratch);
  const hw::GpuReach reach(topology);
  const workload::Plan& p = sc.plan;
  // `why` makes the reason only when a message needs it.
  auto need = [&](int a, int b, const auto& why) {
    if (reach.connected(a, b)) return;
    auto nic = [&](int gpu) { return fmt::format("node{}.nic{}", cluster.node_of(gpu), cluster.nic_of(gpu)); };
    ctx.fail("cluster.network.links", fmt::format("GPU {} and GPU {} must talk ({}) but no path of links joins them "
                                                  "(GPU {} uses {}, GPU {} uses {})",
                                                  a, b, why(), a, nic(a), b, nic(b)));
  };
  for (int s = 0; s < p.pp; ++s) {
    for (int d = 0; d < p.replicas(); ++d) {
      for (int t = 0; t < p.tp; ++t) {
        const int gpu = p.gpu_of(s, d, t);
        if (s + 1 < p.pp) {
          need(gpu, p.gpu_of(s + 1, d, t), [&] { return fmt::format("pipeline neighbours: stages {} and {}", s, s + 1); });
        }
        for (int u = t + 1; u < p.tp; ++u) {
          need(gpu, p.gpu_of(s, d, u), [&] { return fmt::format("tensor-parallel peers in stage {}", s); });
        }
        for (int e = d + 1; e < p.replicas(); ++e) {
          need(gpu, p.gpu_of(s, e, t), [&] { return fmt::format("data-parallel peers in stage {}", s); });
        }
      }
    }
  }
  const int last = p.stages() - 1;
  if (sc.model.arch == workload::Arch::kGpt && p.rank_of_stage(0) != p.rank_of_stage(last)) {
    for (int d = 0; d < p.replicas(); ++d) {
      for (int t = 0; t < p.tp; ++t) {
        need(p.gpu_of(0, d, t), p.gpu_of(p.rank_of_stage(last), d, t),
             [] { return std::string("first and last stages: they all-reduce the tied embedding"); });
      }
    }
  }
  if (p.vp > 1 && p.pp > 1 && p.placement() == schedule::Placement::kLooped) {
    // Looped stages: the last rank's chunk feeds the first rank's next chunk.
    for (int d = 0; d < p.replicas(); ++d) {
      for (int t = 0; t < p.tp; ++t) {
        need(p.gpu_of(p.pp - 1, d, t), p.gpu_of(0, d, t),
             [] { return std::string("looped pipeline: the last rank sends to the first"); });
      }
    }
  }
}

}  // namespace trainsim::config::detail
