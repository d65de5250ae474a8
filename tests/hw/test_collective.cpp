#include <doctest/doctest.h>

#include "hw/collective.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_collective_test {

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
  CHECK(plan.algorithm == hw::CollectiveAlgorithm::kTree);
  CHECK(plan.seconds == doctest::Approx(25.55e-6).scale(0).epsilon(1e-3));
  // At 1 GiB the ring's bandwidth wins: 2 x 15/16 x 2^30 / 192e9 against 2^30 / (0.5 x 192e9 x 0.92).
  CHECK(hw::plan_collective(hw::CollectiveKind::kAllReduce, 1073741824.0, hw::group_of(c, gpus), c.node).algorithm ==
        hw::CollectiveAlgorithm::kRing);
  // Reduce-scatter has no tree in NCCL.
  CHECK(hw::plan_collective(hw::CollectiveKind::kReduceScatter, 8192.0, hw::group_of(c, gpus), c.node).algorithm ==
        hw::CollectiveAlgorithm::kRing);
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

TEST_CASE("a send/recv inside a node moves at NCCL's send/recv rate when the node has one") {
  // nvlink_sendrecv_gb_per_s = 46.1: 11.8 us + 2^30 / 46.1e9 = 11.8 us + 23.2916 ms = 23.3034 ms
  // (Simple, as above). Across nodes (GPUs 0 and 8) the rate does not apply:
  // the same time as on a node without it.
  hw::NodeSpec n = a100_node();
  n.nvlink_sendrecv_gb_per_s = 46.1;
  const double gib = 1073741824.0;
  const hw::ClusterSpec one{n, 1, {}};
  CHECK(hw::collective_time(hw::CollectiveKind::kSendRecv, gib, hw::group_of(one, {0, 1}), n).to_seconds() ==
        doctest::Approx(23.3034e-3).scale(0).epsilon(1e-4));
  const hw::ClusterSpec two{n, 2, {}};
  const hw::NodeSpec plain = a100_node();
  CHECK(hw::collective_time(hw::CollectiveKind::kSendRecv, gib, hw::group_of(two, {0, 8}), n).to_seconds() ==
        hw::collective_time(hw::CollectiveKind::kSendRecv, gib, hw::group_of(two, {0, 8}), plain).to_seconds());
}

TEST_CASE("an all-to-all across nodes is bound by the NICs it crosses") {
  // 16 ranks, 8 on each of 2 nodes, 1 GiB: each rank sends 2^30 / 16 = 67.1 MB
  // to each other rank. Inside the node: 7 of them over NVLink,
  // 7 x 67.1 MB / 240e9 = 1.9573 ms. Across: every GPU has its own NIC, which
  // carries its 8 pairs with the other node: 8 x 67.1 MB / 24e9 = 22.3696 ms.
  // Simple: 8.4 us + max(3.4 us + 1.9573 ms, 14 us + 22.3696 ms) = 22.3920 ms
  // (LL128 at 0.92 of the bandwidth: 24.33 ms; LL: 44.7 ms).
  hw::ClusterSpec c{a100_node(), 2, {}};
  std::vector<int> gpus;
  for (int g = 0; g < 16; ++g) gpus.push_back(g);
  const auto g = hw::group_of(c, gpus);
  CHECK(g.nic_peers == 8);
  CHECK(hw::collective_time(hw::CollectiveKind::kAllToAll, 1073741824.0, g, c.node).to_seconds() ==
        doctest::Approx(22.3920e-3).scale(0).epsilon(1e-4));
  // With 2 NICs per node, 4 GPUs share each: 4 x 8 = 32 pairs through it,
  // 32 x 67.1 MB / 24e9 = 89.478 ms, plus 22.4 us -> 89.501 ms.
  c.node.nics_per_node = 2;
  const auto shared = hw::group_of(c, gpus);
  CHECK(shared.ranks_per_nic == 4);
  CHECK(shared.nic_peers == 32);
  CHECK(hw::collective_time(hw::CollectiveKind::kAllToAll, 1073741824.0, shared, c.node).to_seconds() ==
        doctest::Approx(89.501e-3).scale(0).epsilon(1e-4));
}

TEST_CASE("a hierarchical all-reduce is the sum of its three rings") {
  // 16 GPUs on 2 nodes, 1 GiB.
  // 1. Reduce-scatter over each node's 8 GPUs: Simple, 8.4 + 7 x 3.4 = 32.2 us
  //    + 7/8 x 2^30 / 240e9 = 3.9147 ms -> 3.9469 ms (LL128: 4.2824 ms).
  // 2. All-reduce of 2^30 / 8 over {l, 8 + l}, one ring per local rank, each
  //    on its own NIC (24 GB/s): Simple, 8.4 + 2 x 14 = 36.4 us
  //    + 2 x 1/2 x 2^27 / 24e9 = 5.5924 ms -> 5.6288 ms (LL128 at 0.7: 8.0112 ms).
  // 3. All-gather over each node's 8 GPUs: as 1, 3.9469 ms.
  // In all 13.5226 ms; the ring takes 10.6174 ms (test above's model:
  // 131.6 us + 2 x 15/16 x 2^30 / 192e9), so NCCL's choice stays the ring.
  hw::ClusterSpec c{a100_node(), 2, {}};
  std::vector<int> gpus;
  for (int g = 0; g < 16; ++g) gpus.push_back(g);
  const auto g = hw::group_of(c, gpus);
  const double gib = 1073741824.0;
  const auto h = hw::plan_collective(hw::CollectiveKind::kAllReduce, gib, g, c.node, hw::CollectiveAlgorithm::kHierarchical);
  CHECK(h.algorithm == hw::CollectiveAlgorithm::kHierarchical);
  REQUIRE(h.phases.size() == 3);
  CHECK(h.phases[0].plan.seconds == doctest::Approx(3.9469e-3).scale(0).epsilon(1e-4));
  CHECK(h.phases[1].across_nodes);
  CHECK(h.phases[1].plan.seconds == doctest::Approx(5.6288e-3).scale(0).epsilon(1e-4));
  CHECK(h.seconds == doctest::Approx(13.5226e-3).scale(0).epsilon(1e-4));
  const auto ring = hw::plan_collective(hw::CollectiveKind::kAllReduce, gib, g, c.node, hw::CollectiveAlgorithm::kRing);
  CHECK(ring.seconds == doctest::Approx(10.6174e-3).scale(0).epsilon(1e-4));
  CHECK(hw::plan_collective(hw::CollectiveKind::kAllReduce, gib, g, c.node).algorithm == hw::CollectiveAlgorithm::kRing);
  // Reduce-scatter stops after the rings across nodes (a reduce-scatter of
  // 2^27 over 2 ranks: 8.4 + 14 = 22.4 us + 1/2 x 2^27 / 24e9 = 2.7962 ms);
  // all-gather starts with them.
  const auto rs = hw::plan_collective(hw::CollectiveKind::kReduceScatter, gib, g, c.node,
                                      hw::CollectiveAlgorithm::kHierarchical);
  REQUIRE(rs.phases.size() == 2);
  CHECK(rs.seconds == doctest::Approx(3.9469e-3 + 2.8186e-3).scale(0).epsilon(1e-4));
  const auto ag = hw::plan_collective(hw::CollectiveKind::kAllGather, gib, g, c.node,
                                      hw::CollectiveAlgorithm::kHierarchical);
  REQUIRE(ag.phases.size() == 2);
  CHECK(ag.phases[0].across_nodes);
  CHECK(ag.seconds == doctest::Approx(rs.seconds).scale(0).epsilon(1e-9));
}

TEST_CASE("tree and hierarchical fall back to the ring where they do not apply") {
  hw::ClusterSpec c{a100_node(), 2, {}};
  using A = hw::CollectiveAlgorithm;
  using K = hw::CollectiveKind;
  const double mib = 1048576.0;
  auto algorithm_of = [&](K kind, const std::vector<int>& gpus, A asked) {
    return hw::plan_collective(kind, mib, hw::group_of(c, gpus), c.node, asked).algorithm;
  };
  const std::vector<int> two_nodes = {0, 1, 8, 9};
  // NCCL's tree is an all-reduce only.
  CHECK(algorithm_of(K::kAllReduce, two_nodes, A::kTree) == A::kTree);
  CHECK(algorithm_of(K::kReduceScatter, two_nodes, A::kTree) == A::kRing);
  CHECK(algorithm_of(K::kAllGather, two_nodes, A::kTree) == A::kRing);
  // Hierarchical needs two nodes or more, two members or more on each, as many on every node.
  CHECK(algorithm_of(K::kAllReduce, two_nodes, A::kHierarchical) == A::kHierarchical);
  CHECK(algorithm_of(K::kAllReduce, {0, 1, 2, 3}, A::kHierarchical) == A::kRing);
  CHECK(algorithm_of(K::kAllReduce, {0, 8}, A::kHierarchical) == A::kRing);
  CHECK(algorithm_of(K::kAllReduce, {0, 1, 2, 8}, A::kHierarchical) == A::kRing);
  CHECK(algorithm_of(K::kBroadcast, two_nodes, A::kHierarchical) == A::kRing);
  // The forced ring is the ring, even where the tuner would take the tree
  // (16 GPUs on 2 nodes at 8 KiB, as in the test above).
  std::vector<int> sixteen;
  for (int g = 0; g < 16; ++g) sixteen.push_back(g);
  CHECK(hw::plan_collective(K::kAllReduce, 8192.0, hw::group_of(c, sixteen), c.node).algorithm == A::kTree);
  CHECK(hw::plan_collective(K::kAllReduce, 8192.0, hw::group_of(c, sixteen), c.node, A::kRing).algorithm == A::kRing);
  // All-to-all and send/recv have one algorithm whatever is asked.
  CHECK(hw::plan_collective(K::kAllToAll, mib, hw::group_of(c, two_nodes), c.node, A::kTree).point_to_point);
}

TEST_CASE("groups reducing at once split the NICs their members share") {
  // 2 nodes of 8 GPUs and 4 NICs (GPU l uses NIC l / 2).
  hw::NodeSpec n = a100_node();
  n.nics_per_node = 4;
  hw::ClusterSpec c{n, 2, {}};
  // Tensor parallel 8 inside each node, data parallel 2 across: 8 groups
  // {l, 8 + l}, one member per node, each ring wants one NIC: 8 wanted, 4
  // offered on each node -> each group keeps half.
  std::vector<std::vector<int>> one_per_node;
  for (int l = 0; l < 8; ++l) one_per_node.push_back({l, 8 + l});
  CHECK(hw::concurrent_nic_share(c, one_per_node) == doctest::Approx(0.5).scale(0));
  // Two groups of 4 per node (tensor parallel 2): each ring wants
  // min(4, 4) = 4 NICs, 8 wanted on 4 -> half again.
  const std::vector<std::vector<int>> two_groups{{0, 2, 4, 6, 8, 10, 12, 14}, {1, 3, 5, 7, 9, 11, 13, 15}};
  CHECK(hw::concurrent_nic_share(c, two_groups) == doctest::Approx(0.5).scale(0));
  // One group of all 16: 4 NICs wanted, 4 offered.
  std::vector<int> all;
  for (int g = 0; g < 16; ++g) all.push_back(g);
  CHECK(hw::concurrent_nic_share(c, {all}) == doctest::Approx(1.0).scale(0));
  // A NIC per GPU (8 per node): the 8 one-per-node groups get one each.
  hw::ClusterSpec wide{a100_node(), 2, {}};
  CHECK(hw::concurrent_nic_share(wide, one_per_node) == doctest::Approx(1.0).scale(0));
  // Groups inside one node cross no NIC.
  CHECK(hw::concurrent_nic_share(c, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}) == doctest::Approx(1.0).scale(0));
}

TEST_CASE("members of one group on one NIC give its ring that NIC alone") {
  // Nodes of 6 GPUs and 2 NICs (GPU l on NIC l x 2 / 6: 0, 0, 0, 1, 1, 1).
  // Group {4, 5, 6, 7}: GPUs 4 and 5 on node 0 both use NIC 1, GPUs 6 and 7
  // (local 0, 1) on node 1 both NIC 0. Its ring drives one NIC, not two:
  // 24 GB/s. Alone it crowds nobody else (share 1); the hierarchical plan
  // splits that NIC between its two rings across nodes (ranks_per_nic 2).
  hw::NodeSpec n = a100_node();
  n.gpus_per_node = 6;
  n.nics_per_node = 2;
  hw::ClusterSpec c{n, 2, {}};
  const auto g = hw::group_of(c, {4, 5, 6, 7});
  CHECK(g.min_ranks_per_node == 2);
  CHECK(g.min_nics_per_node == 1);
  CHECK(g.ranks_per_nic == 2);
  CHECK(hw::ring_bus_bytes_per_s(c.node, g) == doctest::Approx(24e9).scale(0));
  CHECK(hw::concurrent_nic_share(c, {{4, 5, 6, 7}}) == doctest::Approx(1.0).scale(0));
  // GPUs 2 and 3 on node 0 (NICs 0 and 1) with 8 and 9 on node 1 (NICs 0 and 1): two NICs.
  CHECK(hw::group_of(c, {2, 3, 8, 9}).min_nics_per_node == 2);
}

TEST_CASE("a GPU outside the cluster is refused by name") {
  hw::ClusterSpec c{a100_node(), 2, {}};
  CHECK_THROWS_WITH_AS(hw::concurrent_nic_share(c, {{0, 16}}), "GPU 16 is outside the cluster (GPUs 0 to 15)",
                       std::invalid_argument);
}

}  // namespace hw_collective_test
