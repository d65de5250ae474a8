#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "hw/collective_layout.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_collective_layout_test {

using namespace trainsim;

namespace {

hw::ClusterSpec dgx_a100(int nodes) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  c.node.gpus_per_node = 8;
  c.node.nvlink_bus_gb_per_s = 240;
  c.node.nics_per_node = 8;
  c.node.nic_bus_gb_per_s = 24;
  return c;
}

std::vector<int> range(int first, int count, int stride = 1) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}

}  // namespace

TEST_CASE("NCCL's tree: chains in the nodes, a double binary tree across, up then down") {
  // 64 GPUs on 8 nodes: 8 channels (one per NIC), each with two trees, each
  // tree n - 1 = 63 transfers up and 63 down: 8 x 2 x 2 x 63 = 2016.
  const hw::ClusterSpec c = dgx_a100(8);
  const std::vector<int> members = range(0, 64);
  const auto group = hw::group_of(c, members);
  const double bytes = 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllReduce, bytes, group, c.node,
                                        hw::CollectiveAlgorithm::kTree);
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kAllReduce, bytes, members, plan);
  REQUIRE(stages.size() == 1);
  const auto& ts = stages[0].transfers;
  CHECK(ts.size() == 2016u);
  // Through each NIC (a GPU's, leaving or entering its node), at most the
  // four transfers of its channel each way: up and down in each tree.
  std::map<int, int> leaving, entering;
  for (const auto& t : ts) {
    for (int i : t.inputs) CHECK(i < static_cast<int>(&t - ts.data()));  // inputs come first
    if (c.node_of(t.from) == c.node_of(t.to)) continue;
    ++leaving[t.from];
    ++entering[t.to];
  }
  for (const auto& [gpu, k] : leaving) CHECK(k <= 4);
  for (const auto& [gpu, k] : entering) CHECK(k <= 4);
  CHECK(leaving.size() == 64u);  // every GPU is some channel's way out of its node
  // Per (channel, tree) the 63 transfers up come first, then the 63 down
  // (the root's first). Up, every member but the root sends once; down,
  // every member but the root receives once: all take part both ways.
  for (int b = 0; b < 16; ++b) {
    const auto* up = &ts[b * 126];
    const auto* down = up + 63;
    const int root = down[0].from;
    std::set<int> senders, receivers;
    for (int i = 0; i < 63; ++i) {
      senders.insert(up[i].from);
      receivers.insert(down[i].to);
    }
    CHECK(senders.size() == 63u);
    CHECK(receivers.size() == 63u);
    CHECK(senders.count(root) == 0u);
    CHECK(receivers.count(root) == 0u);
  }
  // The deepest path, with the start, pays the model's latency: base +
  // 2 x (7 NVLink hops + log2(8) = 3 network hops).
  double deepest = 0.0;
  for (const auto& t : ts) deepest = std::max(deepest, t.start_us);
  const double model_us = plan.base_us + 2.0 * (7 * plan.nvlink_step_us + 3 * plan.network_step_us);
  CHECK(stages[0].start_us + deepest == doctest::Approx(model_us).scale(0).epsilon(1e-9));
}

TEST_CASE("a broadcast is a chain along each channel's ring from the first member") {
  // 16 GPUs on 2 nodes: 8 channels, each a chain of 15 transfers visiting
  // every member once. Channel c's ring enters node 0 at GPU c + 1 and leaves
  // it at GPU c (NIC c); from root GPU 0 its chain crosses to node 1 and back
  // (twice), except channel 7's, which enters node 0 at GPU 0 (once).
  const hw::ClusterSpec c = dgx_a100(2);
  const std::vector<int> members = range(0, 16);
  const double bytes = 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kBroadcast, bytes, hw::group_of(c, members), c.node);
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kBroadcast, bytes, members, plan);
  REQUIRE(stages.size() == 1);
  const auto& ts = stages[0].transfers;
  REQUIRE(ts.size() == 8u * 15u);
  for (int ch = 0; ch < 8; ++ch) {
    CAPTURE(ch);
    CHECK(ts[ch * 15].from == 0);
    std::set<int> got = {0};
    int crossings = 0;
    for (int i = 0; i < 15; ++i) {
      const auto& t = ts[ch * 15 + i];
      if (i > 0) CHECK(t.from == ts[ch * 15 + i - 1].to);
      got.insert(t.to);
      crossings += c.node_of(t.from) != c.node_of(t.to);
      // Leaving a node, always through the channel's NIC.
      if (c.node_of(t.from) != c.node_of(t.to)) CHECK(t.from % 8 == ch);
    }
    CHECK(got.size() == 16u);
    CHECK(crossings == (ch == 7 ? 1 : 2));
  }
  // Alone, each chain's latency is the model's: base + 14 NVLink steps + 1
  // network step after the start (n = 16 steps, nodes - 1 = 1 across).
  const double model_us = plan.base_us + 15 * plan.nvlink_step_us + plan.network_step_us;
  for (int ch = 0; ch < 8; ++ch) {
    CHECK(stages[0].start_us + ts[ch * 15 + 14].start_us == doctest::Approx(model_us).scale(0).epsilon(1e-9));
  }
}

TEST_CASE("a hierarchical all-reduce: rings inside the nodes, one ring per local rank across, rings inside again") {
  // 16 GPUs on 2 nodes: reduce-scatter over each node's 8, all-reduce over
  // {l, 8 + l} for each local rank l, all-gather over each node's 8.
  const hw::ClusterSpec c = dgx_a100(2);
  const std::vector<int> members = range(0, 16);
  const double bytes = 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllReduce, bytes, hw::group_of(c, members), c.node,
                                        hw::CollectiveAlgorithm::kHierarchical);
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kAllReduce, bytes, members, plan);
  REQUIRE(stages.size() == 3u);
  CHECK(stages[0].ring.rings == std::vector<std::vector<int>>{range(0, 8), range(8, 8)});
  CHECK(stages[0].ring.steps == 7);
  REQUIRE(stages[1].ring.rings.size() == 8u);
  for (int l = 0; l < 8; ++l) CHECK(stages[1].ring.rings[l] == std::vector<int>{l, 8 + l});
  CHECK(stages[1].ring.steps == 2);
  // Each carries bytes / 8 over 2 ranks: chunks of bytes / 16 (over the share).
  CHECK(stages[1].ring.wire_bytes * stages[1].ring.rings[0].size() * plan.phases[1].plan.bandwidth_share ==
        doctest::Approx(bytes / 8).scale(0).epsilon(1e-12));
  CHECK(stages[2].ring.rings == stages[0].ring.rings);
}

TEST_CASE("a ring past kMaxRingSteps carries several steps a chunk, its bytes and latencies summed") {
  // A ring all-reduce over 128 GPUs, one per node: NCCL's 2 (128 - 1) = 254
  // steps. kMaxRingSteps = 64: ceil(254 / 64) = 4 steps a chunk, so
  // ceil(254 / 4) = 64 chunks, each 254 / 64 = 3.97 steps' bytes and hop
  // latencies: every position still sends 254 steps' bytes in all, and the
  // chain of receives pays 254 hops' latency.
  const hw::ClusterSpec c = dgx_a100(128);
  std::vector<int> members;
  for (int n = 0; n < 128; ++n) members.push_back(8 * n);
  const double bytes = 256.0 * 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllReduce, bytes, hw::group_of(c, members), c.node,
                                        hw::CollectiveAlgorithm::kRing);
  REQUIRE(plan.steps == 254);
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kAllReduce, bytes, members, plan);
  REQUIRE(stages.size() == 1u);
  const hw::RingSteps& r = stages[0].ring;
  CHECK(r.steps == 64);
  CHECK(r.wire_bytes * r.steps * plan.bandwidth_share == doctest::Approx(bytes / 128 * 254).epsilon(1e-12));
  // Every hop of this ring crosses nodes; unmerged, its 254 hops would pay an
  // NVLink step's latency each plus the model's extra network latency
  // (network_steps of them) spread over them. The 64 chunks pay the same sum.
  CHECK(r.network_hop_us * 64 ==
        doctest::Approx(254 * plan.nvlink_step_us + (plan.network_step_us - plan.nvlink_step_us) * plan.network_steps)
            .epsilon(1e-12));
}

TEST_CASE("an all-to-all is every ordered pair at once") {
  // 6 GPUs (4 on node 0, 2 on node 1): 30 transfers, none waiting for another.
  const hw::ClusterSpec c = dgx_a100(2);
  const std::vector<int> members = {0, 1, 2, 3, 8, 9};
  const double bytes = 6.0 * 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllToAll, bytes, hw::group_of(c, members), c.node);
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kAllToAll, bytes, members, plan);
  REQUIRE(stages.size() == 1u);
  CHECK(stages[0].transfers.size() == 30u);
  for (const auto& t : stages[0].transfers) CHECK(t.inputs.empty());
}

TEST_CASE("DeepEP's all-to-all crosses the NICs once a node and forwards over NVLink") {
  // 8 GPUs, 4 on each of 2 nodes, each sending 1/8 of its 8 MiB to each
  // member (per_peer, before the protocol's bandwidth share). A member sends
  // its node's 3 others their parts over NVLink (24 transfers in all); the
  // other node's 4 parts cross once, as one transfer of across_share x 4
  // parts to the member at its own place there (8), which forwards 3 of
  // them over NVLink, each waiting for that crossing (24): 56 transfers, as
  // the plain all-to-all's 8 x 7, but 8 across the NICs instead of 32.
  const hw::ClusterSpec c = dgx_a100(2);
  const std::vector<int> members = {0, 1, 2, 3, 8, 9, 10, 11};
  const double bytes = 8.0 * 1048576.0;
  const auto plan = hw::plan_collective(hw::CollectiveKind::kAllToAll, bytes, hw::group_of(c, members), c.node);
  const double per_peer = bytes / 8.0 / plan.bandwidth_share;
  const auto stages = hw::lay_out(c, hw::CollectiveKind::kAllToAll, bytes, members, plan, 0.5);
  REQUIRE(stages.size() == 1u);
  const auto& t = stages[0].transfers;
  CHECK(t.size() == 56u);
  int across = 0, forwarded = 0, direct = 0;
  for (const auto& x : t) {
    const bool crosses = c.node_of(x.from) != c.node_of(x.to);
    if (crosses) {
      ++across;
      CHECK(x.to == (x.from + 8) % 16);  // the same place on the other node
      CHECK(x.bytes == doctest::Approx(0.5 * 4 * per_peer));
      CHECK(x.inputs.empty());
    } else if (!x.inputs.empty()) {
      ++forwarded;
      REQUIRE(x.inputs.size() == 1u);
      CHECK(t[static_cast<std::size_t>(x.inputs[0])].to == x.from);  // it forwards what crossed to it
      CHECK(x.bytes == doctest::Approx(per_peer));
    } else {
      ++direct;
      CHECK(x.bytes == doctest::Approx(per_peer));
    }
  }
  CHECK(across == 8);
  CHECK(forwarded == 24);
  CHECK(direct == 24);
  // Inside one node it is the plain all-to-all.
  const std::vector<int> one_node = {0, 1, 2, 3};
  const auto plain = hw::plan_collective(hw::CollectiveKind::kAllToAll, bytes, hw::group_of(c, one_node), c.node);
  CHECK(hw::lay_out(c, hw::CollectiveKind::kAllToAll, bytes, one_node, plain, 0.5)[0].transfers.size() == 12u);
}

}  // namespace hw_collective_layout_test
