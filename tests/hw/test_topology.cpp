#include <doctest/doctest.h>

#include "core/engine.hpp"
#include "hw/topology.hpp"
#include "transfers.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_topology_test {

using namespace trainsim;
using core::Time;

namespace {

hw::ClusterSpec cluster(int nodes, int nics_per_node, hw::NetworkSpec net = {}) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  c.node.gpus_per_node = 8;
  c.node.nvlink_gb_per_s = 100;
  c.node.nvlink_latency_us = 0;
  c.node.nics_per_node = nics_per_node;
  c.node.nic_gbit_per_s = 80;  // 10 GB/s
  c.node.nic_latency_us = 0;
  c.network = net;
  return c;
}

using test::transfers;

std::vector<std::string> link_names(hw::Topology& topo, int from, int to) {
  std::vector<std::string> names;
  for (hw::LinkId l : topo.route_links(from, to)) names.push_back(topo.link_name(l));
  return names;
}

std::vector<std::string> route_names(const hw::ClusterSpec& c, int from, int to) {
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  return link_names(topo, from, to);
}

}  // namespace

TEST_CASE("with a NIC per GPU, transfers from two GPUs do not share") {
  // 1e6 B at 10 B/ns = 100 us each.
  const auto ends = transfers(cluster(2, 8), {{0, 8}, {1, 9}});
  CHECK(ends[0] == doctest::Approx(100).scale(0));
  CHECK(ends[1] == doctest::Approx(100).scale(0));
}

TEST_CASE("with one NIC per node, transfers from two GPUs share it") {
  // GPUs 0 and 1 both use NIC 0: 5 B/ns each, 200 us.
  const auto ends = transfers(cluster(2, 1), {{0, 8}, {1, 9}});
  CHECK(ends[0] == doctest::Approx(200).scale(0));
  CHECK(ends[1] == doctest::Approx(200).scale(0));
}

TEST_CASE("routes inside a node take the NVSwitch, across nodes the NICs") {
  CHECK(route_names(cluster(2, 8), 0, 1) ==
        std::vector<std::string>{"gpu0->node0.nvswitch", "node0.nvswitch->gpu1"});
  CHECK(route_names(cluster(2, 8), 0, 8) ==
        std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->core", "core->node1.nic0", "node1.nic0->gpu8"});
}

TEST_CASE("NCCL's send/recv rate caps a transfer inside a node, not one between nodes") {
  // nvlink_sendrecv_gb_per_s = 25: 1e6 B inside node 0 take 1e6 / 25 B/ns =
  // 40 us instead of 10 us at the 100 GB/s NVLink. Between nodes the 10 GB/s
  // NIC sets the pace as before: 100 us.
  hw::ClusterSpec c = cluster(2, 8);
  c.node.nvlink_sendrecv_gb_per_s = 25;
  const auto ends = transfers(c, {{0, 1}, {2, 10}});
  CHECK(ends[0] == doctest::Approx(40).scale(0));
  CHECK(ends[1] == doctest::Approx(100).scale(0));
  // Without the rate (0), NVLink's line rate: 10 us.
  CHECK(transfers(cluster(2, 8), {{0, 1}})[0] == doctest::Approx(10).scale(0));
}

TEST_CASE("a shared route keeps the send/recv cap of the route it stands for") {
  // GPU 0 -> 1 standing for itself and GPU 2 -> 3: the NVLink ports differ, so
  // each link weighs 1 and the cap (25 GB/s) alone sets the pace: 40 us.
  hw::ClusterSpec c = cluster(1, 8);
  c.node.nvlink_sendrecv_gb_per_s = 25;
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  const auto shared = topo.shared_route(0, 1, {{0, 1}, {2, 3}});
  CHECK(net.route(shared).max_bytes_per_s == doctest::Approx(25e9).scale(0));
  CHECK(net.route(topo.route(0, 1)).max_bytes_per_s == doctest::Approx(25e9).scale(0));
}

TEST_CASE("a fat tree sends traffic between leaves over oversubscribed up-links") {
  // 2 nodes per leaf, 4 nodes, oversubscription 4: each leaf's up-link carries
  // 2 nodes x 8 NICs x 10 GB/s / 4 = 40 GB/s.
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kFatTree;
  net.nodes_per_leaf = 2;
  net.oversubscription = 4;
  const hw::ClusterSpec c = cluster(4, 8, net);
  CHECK(route_names(c, 0, 16) == std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0", "leaf0->spine",
                                                           "spine->leaf1", "leaf1->node2.nic0", "node2.nic0->gpu16"});
  // Inside a leaf: no up-link.
  CHECK(route_names(c, 0, 8).size() == 4);
  // Eight transfers leaf 0 -> leaf 1 from eight GPUs of node 0 (own NICs):
  // 80 GB/s of demand on a 40 GB/s up-link: 5 GB/s each, 1e6 B in 200 us.
  std::vector<std::pair<int, int>> pairs;
  for (int g = 0; g < 8; ++g) pairs.emplace_back(g, 16 + g);
  for (double end : transfers(c, pairs)) CHECK(end == doctest::Approx(200).scale(0));
}

TEST_CASE("a rail-optimised network keeps each NIC index on its own leaf") {
  // 2 nodes in one rail group: GPU 0 (NIC 0) to GPU 8 (NIC 0) stays on rail 0.
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kRail;
  net.nodes_per_leaf = 2;
  const hw::ClusterSpec c = cluster(2, 8, net);
  CHECK(route_names(c, 0, 8) ==
        std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0.rail0", "leaf0.rail0->node1.nic0",
                                 "node1.nic0->gpu8"});
}

TEST_CASE("a non-blocking up-link is left out of routes but keeps its latency") {
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kFatTree;
  net.nodes_per_leaf = 2;
  net.oversubscription = 1;
  net.switch_latency_us = 0.5;
  const hw::ClusterSpec c = cluster(4, 8, net);
  // gpu0 -> nic -> leaf0 (-> spine -> leaf1, left out) -> nic -> gpu16.
  CHECK(route_names(c, 0, 16) == std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0", "leaf1->node2.nic0",
                                                           "node2.nic0->gpu16"});
  hw::FlowNetwork network;
  hw::Topology topo(c, network);
  // Two up-link hops of 0.5 us each.
  CHECK(network.route(topo.route(0, 16)).latency == Time::microseconds(1));
}

TEST_CASE("routes are cached") {
  const hw::ClusterSpec c = cluster(2, 8);
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  CHECK(topo.route(0, 8) == topo.route(0, 8));
  CHECK(topo.route(0, 8) != topo.route(8, 0));
}

TEST_CASE("a shared route weighs each link by the copies that take it") {
  // One NIC per node: GPUs 0..3 of node 0 send to GPUs 8..11 of node 1. The
  // representative 0 -> 8 uses its own GPU-NIC cable (weight 1) but shares the
  // NIC's switch links with the 3 others (weight 4).
  const hw::ClusterSpec c = cluster(2, 1);
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 8});
  const auto r = topo.shared_route(0, 8, {{0, 8}, {1, 9}, {2, 10}, {3, 11}});
  CHECK(net.route(r).weights == std::vector<double>{1, 4, 4, 1});
  CHECK(net.route(r).links == net.route(topo.route(0, 8)).links);
}

TEST_CASE("a topology of the listed GPUs alone routes as the whole nodes do") {
  // Fat tree of 2 nodes a leaf, 4 nodes, 8 NICs a node; GPUs 3 (node 0, NIC
  // 3) and 27 (node 3, NIC 3). Whole nodes: per node 8 GPU-NVSwitch, 8 GPU-NIC
  // and 8 NIC-leaf cables, and 2 leaf-spine cables: (2 * 24 + 2) * 2 = 100
  // links. GPUs alone: per node one GPU-NVSwitch, one GPU-NIC and one
  // NIC-leaf cable: (2 * 3 + 2) * 2 = 16 links, and the same route by name.
  hw::NetworkSpec spec;
  spec.kind = hw::NetworkKind::kFatTree;
  spec.nodes_per_leaf = 2;
  spec.oversubscription = 2;  // keeps the up-links in routes
  const hw::ClusterSpec c = cluster(4, 8, spec);
  hw::FlowNetwork whole_net, listed_net;
  hw::Topology whole(c, whole_net, {3, 27});
  hw::Topology listed(c, listed_net, {3, 27}, false);
  CHECK(whole_net.link_count() == 100);
  CHECK(listed_net.link_count() == 16);
  CHECK(link_names(listed, 3, 27) == link_names(whole, 3, 27));
  CHECK(link_names(listed, 3, 27) == std::vector<std::string>{"gpu3->node0.nic3", "node0.nic3->leaf0", "leaf0->spine",
                                                               "spine->leaf1", "leaf1->node3.nic3", "node3.nic3->gpu27"});
  // A GPU of a built node that was not listed has no vertex.
  CHECK_THROWS((void)listed.route(3, 4));
}

TEST_CASE("a shared route's weights are the same asked again, and differ for other copies") {
  // As above, 4 GPUs of node 0 to node 1, one NIC a node. Asked again (the
  // second answer is the one kept): the same. With two copies only, the
  // NIC's switch links weigh 2.
  const hw::ClusterSpec c = cluster(2, 1);
  for (int round = 0; round < 2; ++round) {
    hw::FlowNetwork net;
    hw::Topology topo(c, net, {0, 8});
    const auto r = topo.shared_route(0, 8, {{0, 8}, {1, 9}, {2, 10}, {3, 11}});
    CHECK(net.route(r).weights == std::vector<double>{1, 4, 4, 1});
  }
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 8});
  CHECK(net.route(topo.shared_route(0, 8, {{0, 8}, {1, 9}})).weights == std::vector<double>{1, 2, 2, 1});
}

TEST_CASE("routes never pass through another GPU") {
  // Rail network: GPU 4 (NIC 4, rail 4) to GPU 8 (node 1, NIC 0, rail 0). The
  // way through GPU 0's NIC is as short, but GPUs do not forward traffic: up
  // rail 4, over the spine, down rail 0.
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kRail;
  net.nodes_per_leaf = 2;
  net.oversubscription = 2;  // keeps the up-links in routes
  const hw::ClusterSpec c = cluster(2, 8, net);
  CHECK(route_names(c, 4, 8) == std::vector<std::string>{"gpu4->node0.nic4", "node0.nic4->leaf0.rail4",
                                                          "leaf0.rail4->spine", "spine->leaf0.rail0",
                                                          "leaf0.rail0->node1.nic0", "node1.nic0->gpu8"});
}

TEST_CASE("a degraded non-blocking up-link stays in routes") {
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kFatTree;
  net.nodes_per_leaf = 1;
  const hw::ClusterSpec c = cluster(2, 8, net);
  hw::FlowNetwork network;
  hw::Topology topo(c, network);
  topo.degrade("leaf0<->spine", 0.5);
  const auto& links = topo.route_links(0, 8);
  bool has_uplink = false;
  for (hw::LinkId l : links) has_uplink = has_uplink || topo.link_class(l) == hw::LinkClass::kUplink;
  CHECK(has_uplink);
}

TEST_CASE("a built-in network's routes are the paths a search finds, without the search") {
  // route() takes the network's own path hop by hop; a breadth-first search
  // over the built graph finds the same links, for every pair of GPUs of
  // every kind of built-in network (up-links oversubscribed, so that none
  // is left out of the route), with one NIC a node or one a GPU.
  for (hw::NetworkKind kind : {hw::NetworkKind::kFlat, hw::NetworkKind::kFatTree, hw::NetworkKind::kRail}) {
    for (int nics : {1, 8}) {
      hw::NetworkSpec net;
      net.kind = kind;
      net.nodes_per_leaf = 2;
      net.oversubscription = 2;
      const hw::ClusterSpec c = cluster(5, nics, net);
      hw::FlowNetwork flows;
      hw::Topology topo(c, flows);
      for (int a = 0; a < 40; ++a) {
        for (int b = 0; b < 40; ++b) {
          if (a == b) continue;
          CAPTURE(static_cast<int>(kind));
          CAPTURE(nics);
          CAPTURE(a);
          CAPTURE(b);
          CHECK(topo.route_links(a, b) == topo.searched_links(a, b));
        }
      }
    }
  }
  // With a failed link the route is the search's (the same path here, the
  // failure being elsewhere), and a pair it cuts off has none.
  hw::NetworkSpec net;
  net.kind = hw::NetworkKind::kFatTree;
  net.nodes_per_leaf = 2;
  net.oversubscription = 2;
  const hw::ClusterSpec c = cluster(4, 8, net);
  hw::FlowNetwork flows;
  hw::Topology topo(c, flows);
  topo.fail("gpu8<->node1.nic0");
  CHECK(route_names(c, 0, 16) == std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0", "leaf0->spine",
                                                           "spine->leaf1", "leaf1->node2.nic0", "node2.nic0->gpu16"});
  CHECK(topo.route_links(0, 16) == topo.searched_links(0, 16));
  CHECK_THROWS_AS(topo.route(8, 16), hw::NoRoute);
}

}  // namespace hw_topology_test
