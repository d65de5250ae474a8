#include <doctest/doctest.h>

#include "hw/collective.hpp"

using namespace trainsim;

namespace {
hw::NodeSpec a100_node() {
  hw::NodeSpec n;
  n.gpus_per_node = 8;
  n.nvlink_bus_gb_per_s = 240;
  n.nics_per_node = 8;
  n.nic_bus_gb_per_s = 24;
  return n;
}
}  // namespace

TEST_CASE("ring all-reduce inside one node") {
  // 8 ranks, 1 GiB: bus bytes = 2 * 7/8 * 2^30 = 1.8790e9 B.
  // Simple: 8.4 us + 14 steps * 3.4 us = 56.0 us, plus 1.8790e9 / 240e9 = 7.8293 ms -> 7.8853 ms.
  // LL128 is slower: 40.6 us + 1.8790e9 / (240e9 * 0.92) = 8.5101 ms. So 7.8853 ms.
  hw::ClusterSpec c{a100_node(), 1, {}};
  const auto g = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(g.nodes == 1);
  const double t = hw::collective_time(hw::CollectiveKind::kAllReduce, 1073741824.0, g, c.node).to_seconds();
  CHECK(t == doctest::Approx(7.8853e-3).scale(0).epsilon(1e-4));
}

TEST_CASE("a small all-reduce picks the low-latency protocol") {
  // 8 ranks, 8 KiB: LL = 6.6 + 14 * 0.6 = 15.0 us + 2*7/8*8192 / (240e9 * 0.5) = 0.12 us -> 15.12 us,
  // below LL128 (40.6 us + ...) and Simple (56.0 us + ...).
  hw::ClusterSpec c{a100_node(), 1, {}};
  const auto g = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7});
  const double t = hw::collective_time(hw::CollectiveKind::kAllReduce, 8192.0, g, c.node).to_seconds();
  CHECK(t == doctest::Approx(15.12e-6).scale(0).epsilon(1e-3));
}

TEST_CASE("a group of one GPU per node is bound by one NIC") {
  // GPUs 0, 8, 16, 24 sit on 4 nodes: bus bandwidth = 1 NIC x 24 GB/s.
  hw::ClusterSpec c{a100_node(), 4, {}};
  const auto g = hw::group_of(c, {0, 8, 16, 24});
  CHECK(g.nodes == 4);
  CHECK(g.ranks_per_node == 1);
  CHECK(hw::ring_bus_bytes_per_s(c.node, g) == doctest::Approx(24e9).scale(0));
  // 4 ranks per node on 2 nodes: 4 NICs in parallel = 96 GB/s, below NVLink's 240.
  const auto g2 = hw::group_of(c, {0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(hw::ring_bus_bytes_per_s(c.node, g2) == doctest::Approx(96e9).scale(0));
}

TEST_CASE("one rank needs no collective") {
  hw::ClusterSpec c{a100_node(), 1, {}};
  CHECK(hw::collective_time(hw::CollectiveKind::kAllReduce, 1e9, hw::group_of(c, {3}), c.node).ps() == 0);
}

TEST_CASE("across nodes only the boundary steps pay the network latency") {
  // 16 ranks, 8 on each of 2 nodes, 8 KiB. Steps 2 * 15 = 30, of which
  // 2 * (2 - 1) = 2 cross the network. Bus bandwidth: min(240, 8 NICs x 24) = 192 GB/s.
  // LL: 6.6 + 28 * 0.6 + 2 * 2.7 = 28.8 us, plus 2 * 15/16 * 8192 / (192e9 * 0.5) = 0.16 us -> 28.96 us.
  // LL128: 14 + 28 * 1.9 + 2 * 4 = 75.2 us; Simple: 8.4 + 28 * 3.4 + 2 * 14 = 131.6 us. So LL.
  hw::ClusterSpec c{a100_node(), 2, {}};
  std::vector<int> gpus;
  for (int g = 0; g < 16; ++g) gpus.push_back(g);
  const auto g = hw::group_of(c, gpus);
  CHECK(g.nodes == 2);
  CHECK(g.ranks_per_node == 8);
  const double t = hw::plan_ring(hw::CollectiveKind::kAllReduce, 8192.0, g, c.node).seconds;
  CHECK(t == doctest::Approx(28.96e-6).scale(0).epsilon(1e-3));
}

TEST_CASE("a small all-reduce across nodes takes NCCL's tree") {
  // Same 16 GPUs on 2 nodes, 8 KiB. Tree LL: 6.8 + 2 x (7 x 0.6 + log2(2) x 5.0) = 25.2 us,
  // plus 8192 / (0.5 x 192e9 x 0.92 / 3.8) = 0.35 us -> 25.55 us, below the ring's 28.96 us.
  hw::ClusterSpec c{a100_node(), 2, {}};
  std::vector<int> gpus;
  for (int g = 0; g < 16; ++g) gpus.push_back(g);
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllReduce, 8192.0, hw::group_of(c, gpus), c.node);
  CHECK(plan.tree);
  CHECK(plan.seconds == doctest::Approx(25.55e-6).scale(0).epsilon(1e-3));
  // At 1 GiB the ring's bandwidth wins: 2 x 15/16 x 2^30 / 192e9 against 2^30 / (0.5 x 192e9 x 0.92).
  CHECK_FALSE(hw::plan_collective(hw::CollectiveKind::kAllReduce, 1073741824.0, hw::group_of(c, gpus), c.node).tree);
  // Reduce-scatter has no tree in NCCL.
  CHECK_FALSE(hw::plan_collective(hw::CollectiveKind::kReduceScatter, 8192.0, hw::group_of(c, gpus), c.node).tree);
}

TEST_CASE("with one rank per node LL128 reaches 0.7 of the bus bandwidth") {
  // 2 ranks on 2 nodes, 64 MiB: steps 2, both across the network; bus bandwidth 24 GB/s;
  // bus bytes = 2 * 1/2 * 2^26 = 6.711e7.
  // Simple: 8.4 + 2 * 14 = 36.4 us + 6.711e7 / 24e9 = 2.7962 ms -> 2.8326 ms.
  // LL128: 14 + 2 * 4 = 22 us + 6.711e7 / (24e9 * 0.7) = 3.9946 ms -> 4.0166 ms. So Simple.
  hw::ClusterSpec c{a100_node(), 2, {}};
  const auto g = hw::group_of(c, {0, 8});
  const double t = hw::collective_time(hw::CollectiveKind::kAllReduce, 67108864.0, g, c.node).to_seconds();
  CHECK(t == doctest::Approx(2.8326e-3).scale(0).epsilon(1e-4));
}

TEST_CASE("across oversubscribed leaves a ring gets the NICs' share of the up-links") {
  // Fat tree, 2 nodes per leaf, oversubscription 2: GPUs 0 and 16 sit under
  // different leaves, so one NIC's 24 GB/s becomes 12 GB/s; GPUs 0 and 8 share
  // a leaf and keep 24 GB/s.
  hw::ClusterSpec c{a100_node(), 4, {}};
  c.network.kind = hw::NetworkKind::kFatTree;
  c.network.nodes_per_leaf = 2;
  c.network.oversubscription = 2;
  CHECK(hw::ring_bus_bytes_per_s(c.node, hw::group_of(c, {0, 16})) == doctest::Approx(12e9).scale(0));
  CHECK(hw::ring_bus_bytes_per_s(c.node, hw::group_of(c, {0, 8})) == doctest::Approx(24e9).scale(0));
}

TEST_CASE("broadcast, all-to-all and send/recv in the same model") {
  // 8 ranks in one node, 1 GiB, Simple protocol wins at this size.
  // Broadcast: n = 8 steps: 8.4 + 8 x 3.4 = 35.6 us, plus 2^30 / 240e9 = 4.4739 ms -> 4.5095 ms.
  // All-to-all: one step: 8.4 + 3.4 = 11.8 us, plus 7/8 x 2^30 / 240e9 = 3.9147 ms -> 3.9265 ms.
  // Send/recv between 2 GPUs: 11.8 us + 2^30 / 240e9 = 4.4857 ms.
  hw::ClusterSpec c{a100_node(), 1, {}};
  const auto g = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7});
  const double gib = 1073741824.0;
  CHECK(hw::collective_time(hw::CollectiveKind::kBroadcast, gib, g, c.node).to_seconds() ==
        doctest::Approx(4.5095e-3).scale(0).epsilon(1e-4));
  CHECK(hw::collective_time(hw::CollectiveKind::kAllToAll, gib, g, c.node).to_seconds() ==
        doctest::Approx(3.9265e-3).scale(0).epsilon(1e-4));
  CHECK(hw::collective_time(hw::CollectiveKind::kSendRecv, gib, hw::group_of(c, {0, 1}), c.node).to_seconds() ==
        doctest::Approx(4.4857e-3).scale(0).epsilon(1e-4));
}
