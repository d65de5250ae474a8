#include <doctest/doctest.h>

#include "core/engine.hpp"
#include "hw/topology.hpp"

using namespace trainsim;
using core::Time;

namespace {

hw::ClusterSpec cluster(int nics_per_node) {
  hw::ClusterSpec c;
  c.nodes = 2;
  c.node.gpus_per_node = 8;
  c.node.nvlink_gb_per_s = 100;
  c.node.nvlink_latency_us = 0;
  c.node.nics_per_node = nics_per_node;
  c.node.nic_gbit_per_s = 80;  // 10 GB/s
  c.node.nic_latency_us = 0;
  return c;
}

// Two transfers of 1e6 bytes at once, GPU 0 -> 8 and GPU 1 -> 9; their end times in us.
std::pair<double, double> two_cross_node_transfers(int nics_per_node) {
  const hw::ClusterSpec c = cluster(nics_per_node);
  hw::FlowNetwork net;
  hw::Topology topo(c, {0, 1, 8, 9}, net);
  core::TaskGraph g;
  g.add({0, Time::zero(), 1e6, topo.route(0, 8)});
  g.add({0, Time::zero(), 1e6, topo.route(1, 9)});
  g.finalize();
  core::Engine e(g);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  const auto tl = e.run();
  return {tl.end[0].to_microseconds(), tl.end[1].to_microseconds()};
}

}  // namespace

TEST_CASE("with a NIC per GPU, transfers from two GPUs do not share") {
  // 1e6 B at 10 B/ns = 100 us each.
  const auto [a, b] = two_cross_node_transfers(8);
  CHECK(a == doctest::Approx(100));
  CHECK(b == doctest::Approx(100));
}

TEST_CASE("with one NIC per node, transfers from two GPUs share it") {
  // GPUs 0 and 1 both use NIC 0: 5 B/ns each, 200 us.
  const auto [a, b] = two_cross_node_transfers(1);
  CHECK(a == doctest::Approx(200));
  CHECK(b == doctest::Approx(200));
}

TEST_CASE("routes inside a node take NVLink, across nodes the NICs") {
  const hw::ClusterSpec c = cluster(8);
  hw::FlowNetwork net;
  hw::Topology topo(c, {0, 1, 8}, net);
  CHECK(net.link(net.route(topo.route(0, 1)).links[0]).name == "gpu0.nvlink.out");
  CHECK(net.link(net.route(topo.route(0, 8)).links[0]).name == "node0.nic0.out");
  CHECK(net.link(net.route(topo.route(0, 8)).links[1]).name == "node1.nic0.in");
  // Cached: the same pair gives the same route.
  CHECK(topo.route(0, 8) == topo.route(0, 8));
}
