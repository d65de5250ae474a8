#include <doctest/doctest.h>

#include <string>

#include "core/engine.hpp"
#include "hw/collective_runner.hpp"
#include "hw/stream.hpp"

using namespace trainsim;
using core::Time;

namespace {

hw::ClusterSpec dgx_a100(int nodes) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  hw::NodeSpec& n = c.node;
  n.gpus_per_node = 8;
  n.nvlink_gb_per_s = 300;
  n.nvlink_latency_us = 0.6;
  n.nvlink_bus_gb_per_s = 240;
  n.nics_per_node = 8;
  n.nic_gbit_per_s = 200;
  n.nic_bus_gb_per_s = 24;
  n.nic_latency_us = 0.6;
  return c;
}

// Runs `copies` identical collectives at once on an otherwise idle network;
// the time until the last ends, in seconds.
double flow_time(const hw::ClusterSpec& c, hw::CollectiveKind kind, double bytes, const std::vector<int>& members,
                 int copies = 1) {
  hw::FlowNetwork net;
  hw::Topology topo(c, net, members);
  hw::CollectiveRunner runner(c, topo, net);
  core::TaskGraph g;
  for (int k = 0; k < copies; ++k) g.add({0, Time::zero(), 0.0, runner.add(kind, bytes, members, 1)});
  g.finalize();
  core::Engine e(g);
  runner.set_id(e.add_resource(runner));
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  return e.run().makespan.to_seconds();
}

std::vector<int> range(int first, int count, int stride = 1) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}

}  // namespace

TEST_CASE("on an idle network flow-level and analytic collectives agree within 5%") {
  // The flow version takes the analytic plan's protocol, latencies and bus
  // bandwidth, but moves the bytes as flows; alone on the network nothing
  // slows them, so the two must agree for every size from 1 MiB to 1 GiB.
  struct Case {
    std::string name;
    int nodes;
    std::vector<int> members;
    int nics = 8;
  };
  const std::vector<Case> cases = {
      {"8 GPUs in one node", 1, range(0, 8)},
      {"16 GPUs on 2 nodes", 2, range(0, 16)},
      {"4 GPUs, one per node", 4, range(0, 4, 8)},
      {"8 GPUs, 2 per node", 4, {0, 1, 8, 9, 16, 17, 24, 25}},
      {"16 GPUs on 2 nodes with 2 NICs each", 2, range(0, 16), 2},
      {"6 GPUs, 4 and 2 per node", 2, {0, 1, 2, 3, 8, 9}},
      {"64 GPUs on 8 nodes", 8, range(0, 64)},
  };
  for (const Case& k : cases) {
    hw::ClusterSpec c = dgx_a100(k.nodes);
    c.node.nics_per_node = k.nics;
    const auto group = hw::group_of(c, k.members);
    for (auto kind : {hw::CollectiveKind::kAllReduce, hw::CollectiveKind::kReduceScatter, hw::CollectiveKind::kAllGather,
                      hw::CollectiveKind::kBroadcast, hw::CollectiveKind::kAllToAll}) {
      for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
        const double bytes = mib * 1048576.0;
        const double analytic = hw::collective_time(kind, bytes, group, c.node).to_seconds();
        const double flow = flow_time(c, kind, bytes, k.members);
        CAPTURE(k.name);
        CAPTURE(static_cast<int>(kind));
        CAPTURE(mib);
        CHECK(flow == doctest::Approx(analytic).scale(0).epsilon(0.05));
      }
    }
  }
}

TEST_CASE("two collectives on the same links share them") {
  // Two 256 MiB all-reduces over the same 4 GPUs (one per node) at once take
  // about twice as long as one alone: they split each NIC.
  const hw::ClusterSpec c = dgx_a100(4);
  const std::vector<int> members = range(0, 4, 8);
  const double one = flow_time(c, hw::CollectiveKind::kAllReduce, 256.0 * 1048576.0, members);
  const double both = flow_time(c, hw::CollectiveKind::kAllReduce, 256.0 * 1048576.0, members, 2);
  // NIC links run at 25 GB/s while one ring is capped at 24: two rings get 12.5 each.
  CHECK(both == doctest::Approx(one * 24.0 / 12.5).scale(0).epsilon(0.05));
}

TEST_CASE("a collective waits for all its participants") {
  // Two tasks join one all-reduce; one is ready at once, the other after 1 ms:
  // the collective starts at 1 ms and both tasks end together.
  const hw::ClusterSpec c = dgx_a100(1);
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 1});
  hw::CollectiveRunner runner(c, topo, net);
  // A delay resource for the late participant: a one-task stream.
  core::TaskGraph g;
  const std::uint32_t ar = runner.add(hw::CollectiveKind::kAllReduce, 1048576.0, {0, 1}, 2);
  const auto early = g.add({0, Time::zero(), 0.0, ar});
  const auto late = g.add({0, Time::zero(), 0.0, ar});
  const auto wait = g.add({1, Time::microseconds(1000), 0.0, 0});
  g.add_edge(wait, late);
  g.finalize();
  core::Engine e(g);
  runner.set_id(e.add_resource(runner));
  hw::Stream delay({wait});
  delay.set_id(e.add_resource(delay));
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  const auto tl = e.run();
  CHECK(tl.end[early] == tl.end[late]);
  const double alone = hw::collective_time(hw::CollectiveKind::kAllReduce, 1048576.0, hw::group_of(c, {0, 1}), c.node).to_seconds();
  CHECK(tl.end[early].to_seconds() == doctest::Approx(1e-3 + alone).scale(0).epsilon(0.05));
}
