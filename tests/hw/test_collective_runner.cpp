#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "core/engine.hpp"
#include "hw/collective_runner.hpp"
#include "hw/stream.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_collective_runner_test {

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

// Runs what `add` registers (collectives on the runner, a task each in the
// graph) on an otherwise idle network among `gpus`; when the last ends.
Time makespan(const hw::ClusterSpec& c, const std::vector<int>& gpus, hw::CollectiveAlgorithm algorithm,
              const std::function<void(hw::CollectiveRunner&, core::TaskGraph&)>& add) {
  hw::FlowNetwork net;
  hw::Topology topo(c, net, gpus);
  hw::CollectiveRunner runner(c, topo, net, algorithm);
  core::TaskGraph g;
  add(runner, g);
  g.finalize();
  core::Engine e(g);
  runner.set_id(e.add_resource(runner));
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  return e.run().makespan;
}

// Runs collectives, each over its own members, all at once on an otherwise
// idle network; the time until the last ends, in seconds.
double flow_time(const hw::ClusterSpec& c, hw::CollectiveKind kind, double bytes,
                 const std::vector<std::vector<int>>& groups,
                 hw::CollectiveAlgorithm algorithm = hw::CollectiveAlgorithm::kAuto) {
  std::vector<int> gpus;
  for (const auto& g : groups) gpus.insert(gpus.end(), g.begin(), g.end());
  return makespan(c, gpus, algorithm, [&](hw::CollectiveRunner& runner, core::TaskGraph& g) {
           for (const auto& members : groups) g.add({0, runner.add(kind, bytes, members, 1), Time::zero(), 0.0});
         })
      .to_seconds();
}

// One collective over `members` standing for identical ones over `copies`
// (a symmetric representative): only its flows are simulated.
double representative_time(const hw::ClusterSpec& c, hw::CollectiveKind kind, double bytes,
                           const std::vector<int>& members, const std::vector<std::vector<int>>& copies,
                           hw::CollectiveAlgorithm algorithm) {
  return makespan(c, members, algorithm, [&](hw::CollectiveRunner& runner, core::TaskGraph& g) {
           g.add({0, runner.add(kind, bytes, members, 1, std::nullopt, copies), Time::zero(), 0.0});
         })
      .to_seconds();
}

// `copies` identical collectives over the same members.
double flow_time(const hw::ClusterSpec& c, hw::CollectiveKind kind, double bytes, const std::vector<int>& members,
                 int copies = 1, hw::CollectiveAlgorithm algorithm = hw::CollectiveAlgorithm::kAuto) {
  return flow_time(c, kind, bytes, std::vector<std::vector<int>>(copies, members), algorithm);
}

std::vector<int> range(int first, int count, int stride = 1) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}


// Records each start and end a collective runner reports: (group, running).
struct Heard final : hw::CollectiveListener {
  std::vector<std::pair<std::uint32_t, bool>> calls;
  void on_collective(std::uint32_t group, const std::vector<int>&, bool running, core::Engine&, Time) override {
    calls.emplace_back(group, running);
  }
};

// Runs `g` with `runner` (heard by `heard`) and the network's two ids.
core::Timeline run_heard(const core::TaskGraph& g, hw::CollectiveRunner& runner, hw::FlowNetwork& net, Heard& heard) {
  runner.set_listener(&heard);
  core::Engine e(g);
  runner.set_id(e.add_resource(runner));
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  return e.run();
}

}  // namespace

// Group shapes for the agreement tests: even and uneven, one or several
// members per node, NICs of their own or shared.
struct Shape {
  std::string name;
  int nodes;
  std::vector<int> members;
  int nics = 8;
};
std::vector<Shape> shapes() {
  return {
      {"8 GPUs in one node", 1, range(0, 8)},
      {"16 GPUs on 2 nodes", 2, range(0, 16)},
      {"4 GPUs, one per node", 4, range(0, 4, 8)},
      {"8 GPUs, 2 per node", 4, {0, 1, 8, 9, 16, 17, 24, 25}},
      {"16 GPUs on 2 nodes with 2 NICs each", 2, range(0, 16), 2},
      {"6 GPUs, 4 and 2 per node", 2, {0, 1, 2, 3, 8, 9}},
      {"64 GPUs on 8 nodes", 8, range(0, 64)},
      // A ring of 128: 254 all-reduce steps, simulated as 64 (kMaxRingSteps).
      {"128 GPUs, one per node", 128, range(0, 128, 8)},
  };
}

// Flow time over analytic time for `kind` run by `algorithm` over `shape`.
double flow_over_analytic(const Shape& shape, hw::CollectiveKind kind, double bytes, hw::CollectiveAlgorithm algorithm) {
  hw::ClusterSpec c = dgx_a100(shape.nodes);
  c.node.nics_per_node = shape.nics;
  const double analytic =
      hw::collective_time(kind, bytes, hw::group_of(c, shape.members), c.node, algorithm).to_seconds();
  return flow_time(c, kind, bytes, shape.members, 1, algorithm) / analytic;
}

TEST_CASE("on an idle network flow-level and analytic collectives agree within 5%") {
  // The flow version takes the analytic plan's protocol, latencies and bus
  // bandwidth, but moves the bytes as flows; alone on the network nothing
  // slows them, so the two must agree for every size from 1 MiB to 1 GiB.
  for (const Shape& k : shapes()) {
    for (auto kind : {hw::CollectiveKind::kAllReduce, hw::CollectiveKind::kReduceScatter, hw::CollectiveKind::kAllGather,
                      hw::CollectiveKind::kBroadcast, hw::CollectiveKind::kAllToAll}) {
      for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
        CAPTURE(k.name);
        CAPTURE(static_cast<int>(kind));
        CAPTURE(mib);
        CHECK(flow_over_analytic(k, kind, mib * 1048576.0, hw::CollectiveAlgorithm::kAuto) ==
              doctest::Approx(1.0).scale(0).epsilon(0.05));
      }
    }
  }
}

TEST_CASE("forced trees and hierarchical collectives agree with their analytic time on an idle network") {
  // Each algorithm's layout keeps every flow under its cap alone and its
  // deepest path pays the model's latency, so the same 5% holds for the tree
  // all-reduce and for the hierarchical all-reduce, reduce-scatter and
  // all-gather (where hierarchical does not apply, one node or uneven nodes,
  // both fall back to the ring).
  for (const Shape& k : shapes()) {
    for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
      const double bytes = mib * 1048576.0;
      CAPTURE(k.name);
      CAPTURE(mib);
      CHECK(flow_over_analytic(k, hw::CollectiveKind::kAllReduce, bytes, hw::CollectiveAlgorithm::kTree) ==
            doctest::Approx(1.0).scale(0).epsilon(0.05));
      for (auto kind : {hw::CollectiveKind::kAllReduce, hw::CollectiveKind::kReduceScatter,
                        hw::CollectiveKind::kAllGather}) {
        CAPTURE(static_cast<int>(kind));
        CHECK(flow_over_analytic(k, kind, bytes, hw::CollectiveAlgorithm::kHierarchical) ==
              doctest::Approx(1.0).scale(0).epsilon(0.05));
      }
    }
  }
}

TEST_CASE("where NCCL's tuner picks the tree, the flow-level tree agrees with it") {
  // Small all-reduces across nodes: latency dominates, and the tree's deepest
  // path (up a node's chain and the tree over nodes, then down) pays the
  // model's 2 x ((ranks per node - 1) x NVLink + log2(nodes) x network) latency.
  int trees = 0;
  for (const Shape& k : shapes()) {
    hw::ClusterSpec c = dgx_a100(k.nodes);
    c.node.nics_per_node = k.nics;
    for (double kib : {4.0, 32.0, 256.0, 1024.0}) {
      const double bytes = kib * 1024.0;
      if (hw::plan_collective(hw::CollectiveKind::kAllReduce, bytes, hw::group_of(c, k.members), c.node).algorithm !=
          hw::CollectiveAlgorithm::kTree) {
        continue;
      }
      ++trees;
      CAPTURE(k.name);
      CAPTURE(kib);
      CHECK(flow_over_analytic(k, hw::CollectiveKind::kAllReduce, bytes, hw::CollectiveAlgorithm::kAuto) ==
            doctest::Approx(1.0).scale(0).epsilon(0.05));
    }
  }
  // The tuner does pick it: for 16 GPUs on 2 nodes at 8 KiB (test_collective.cpp)
  // and likewise here for the larger groups at the small sizes.
  CHECK(trees >= 6);
}

TEST_CASE("send/recv as a flow agrees with its analytic time") {
  // One transfer of the buffer, inside a node over NVLink (GPUs 0 -> 1) or
  // across nodes through the NICs (GPUs 0 -> 8), after base + one step's latency.
  const hw::ClusterSpec c = dgx_a100(2);
  for (const std::vector<int>& pair : {std::vector<int>{0, 1}, std::vector<int>{0, 8}, std::vector<int>{9, 2}}) {
    for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
      const double bytes = mib * 1048576.0;
      const double analytic =
          hw::collective_time(hw::CollectiveKind::kSendRecv, bytes, hw::group_of(c, pair), c.node).to_seconds();
      CAPTURE(pair[1]);
      CAPTURE(mib);
      CHECK(flow_time(c, hw::CollectiveKind::kSendRecv, bytes, pair) ==
            doctest::Approx(analytic).scale(0).epsilon(0.05));
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

TEST_CASE("two all-to-alls sharing NICs take about twice as long") {
  // Nodes of 8 GPUs and 2 NICs: GPUs 0-3 use NIC 0. All-to-all A over GPUs
  // 0, 8, 16, 24 (one per node) and B over 1, 9, 17, 25: A's and B's member
  // on each node share that node's NIC 0.
  // Alone, each member sends 3 flows of bytes/4 (one to each other node)
  // through its NIC, and receives 3; the busiest NIC carries 3 pairs, so each
  // flow is capped at 24 / 3 = 8 GB/s (24 GB/s of the 25 GB/s NIC link).
  // Together, 6 flows cross each NIC link each way, wanting 48 GB/s of 25:
  // max-min gives each 25/6 = 4.17 GB/s, so the bytes take 8 / (25/6) = 1.92
  // times as long (the few microseconds of latency aside).
  hw::ClusterSpec c = dgx_a100(4);
  c.node.nics_per_node = 2;
  const double bytes = 256.0 * 1048576.0;
  const std::vector<int> a = range(0, 4, 8), b = range(1, 4, 8);
  const double one = flow_time(c, hw::CollectiveKind::kAllToAll, bytes, {a});
  const double alone_b = flow_time(c, hw::CollectiveKind::kAllToAll, bytes, {b});
  const double both = flow_time(c, hw::CollectiveKind::kAllToAll, bytes, {a, b});
  CHECK(alone_b == doctest::Approx(one).scale(0).epsilon(1e-6));
  CHECK(both == doctest::Approx(one * 1.92).scale(0).epsilon(0.01));
  // On different NICs (GPU 4 uses NIC 1) they do not meet.
  const double apart = flow_time(c, hw::CollectiveKind::kAllToAll, bytes, {a, range(4, 4, 8)});
  CHECK(apart == doctest::Approx(one).scale(0).epsilon(1e-6));
}

TEST_CASE("a tree all-reduce's transfers contend like any flow") {
  // 4 GPUs, one per node, tree forced, 256 MiB. Tree 0 in heap order: node 0
  // the root with children 1 and 2, node 3 under 1; tree 1 the same over the
  // nodes reversed: node 3 the root with children 2 and 1, node 0 under 2.
  // Up and down both trees, every NIC then sends 3 transfers and receives 3,
  // each of bytes / 2 / (0.92 x Simple's 1) capped at a quarter of the 24 GB/s
  // bus bandwidth, 6 GB/s: 18 GB/s of the 25 GB/s NIC link.
  // Two such all-reduces at once put 6 transfers on each NIC link each way,
  // wanting 36 GB/s of 25: each gets 25/6 = 4.17 GB/s, and every transfer
  // takes 6 / (25/6) = 1.44 times as long.
  const hw::ClusterSpec c = dgx_a100(4);
  const double bytes = 256.0 * 1048576.0;
  const std::vector<int> members = range(0, 4, 8);
  const auto tree = hw::CollectiveAlgorithm::kTree;
  const double one = flow_time(c, hw::CollectiveKind::kAllReduce, bytes, members, 1, tree);
  const double both = flow_time(c, hw::CollectiveKind::kAllReduce, bytes, members, 2, tree);
  CHECK(both == doctest::Approx(one * 1.44).scale(0).epsilon(0.01));
}

TEST_CASE("a representative's flows weigh its copies on shared links, whatever the algorithm") {
  // Four nodes with one NIC each: collective A over GPUs 0, 1 of every node
  // and its copy B over GPUs 2, 3 share each node's NIC (their NVLinks are
  // their own). A alone, standing for B, must take as long as A and B both
  // simulated: each of A's flows counts twice on the NIC links, as the two
  // flows there would. (On two nodes a tree would not contend: each NIC
  // carries two of its transfers, 12 of 25 GB/s.)
  hw::ClusterSpec c = dgx_a100(4);
  c.node.nics_per_node = 1;
  const double bytes = 64.0 * 1048576.0;
  const std::vector<int> a = {0, 1, 8, 9, 16, 17, 24, 25}, b = {2, 3, 10, 11, 18, 19, 26, 27};
  using K = hw::CollectiveKind;
  using A = hw::CollectiveAlgorithm;
  const std::vector<std::pair<K, A>> runs = {{K::kAllReduce, A::kRing},         {K::kAllReduce, A::kTree},
                                             {K::kAllReduce, A::kHierarchical}, {K::kReduceScatter, A::kHierarchical},
                                             {K::kBroadcast, A::kAuto},         {K::kAllToAll, A::kAuto}};
  for (const auto& run : runs) {
    const K kind = run.first;  // named copies: doctest's CAPTURE is a lambda
    const A algorithm = run.second;
    CAPTURE(static_cast<int>(kind));
    CAPTURE(static_cast<int>(algorithm));
    const double both = flow_time(c, kind, bytes, {a, b}, algorithm);
    const double alone = flow_time(c, kind, bytes, {a}, algorithm);
    CHECK(both > alone * 1.2);  // they do contend
    CHECK(representative_time(c, kind, bytes, a, {b}, algorithm) == doctest::Approx(both).scale(0).epsilon(0.01));
  }
}

TEST_CASE("a host copy after a collective's flows ends it that much later; an analytic time already holds it") {
  // An all-reduce of 1 MiB over GPUs 0 and 1, alone, then the same with a
  // 2 ms copy to the host after its data has moved: 2 ms later to the
  // picosecond. Over one GPU (no data to move) the copy is all it takes.
  // Given an analytic time of 5 ms, the collective takes 5 ms, copy or not.
  const hw::ClusterSpec c = dgx_a100(1);
  auto end_of = [&](const std::vector<int>& members, std::optional<Time> analytic, Time host_copy) {
    return makespan(c, members, hw::CollectiveAlgorithm::kAuto, [&](hw::CollectiveRunner& runner, core::TaskGraph& g) {
      const auto group = runner.add_group(members);
      g.add({0, runner.add(hw::CollectiveKind::kAllReduce, 1048576.0, group, 1, analytic, 1.0, host_copy), Time::zero(),
             0.0});
    });
  };
  const Time copy = Time::microseconds(2000);
  const Time flows = end_of({0, 1}, std::nullopt, Time::zero());
  CHECK(flows > Time::zero());
  CHECK(end_of({0, 1}, std::nullopt, copy) == flows + copy);
  CHECK(end_of({0}, std::nullopt, copy) == copy);
  CHECK(end_of({0, 1}, Time::microseconds(5000), copy) == Time::microseconds(5000));
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
  const auto early = g.add({0, ar, Time::zero(), 0.0});
  const auto late = g.add({0, ar, Time::zero(), 0.0});
  const auto wait = g.add({1, 0, Time::microseconds(1000), 0.0});
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


TEST_CASE("collectives over one registered group share it, and the listener is told the group's id") {
  // Two analytic all-reduces of 1 ms and 2 ms, one after the other, over one
  // group of GPUs {0, 1}; a third over a group of its own ({2, 3}) at the
  // same time as the first. The listener hears each start and end with the
  // collective's group: 0, 0 for the first two, 1 for the third.
  const hw::ClusterSpec c = dgx_a100(1);
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 1, 2, 3});
  hw::CollectiveRunner runner(c, topo, net);
  const hw::CollectiveRunner::GroupId pair = runner.add_group({0, 1});
  const std::uint32_t first = runner.add(hw::CollectiveKind::kAllReduce, 1.0, pair, 1, Time::microseconds(1000));
  const std::uint32_t second = runner.add(hw::CollectiveKind::kAllReduce, 1.0, pair, 1, Time::microseconds(2000));
  const std::uint32_t other = runner.add(hw::CollectiveKind::kAllReduce, 1.0, {2, 3}, 1, Time::microseconds(1000));
  CHECK(runner.members(pair) == std::vector<int>{0, 1});
  CHECK(runner.describe(core::Task{0, second, Time::zero(), 0.0}).members == 2);
  core::TaskGraph g;
  const auto a = g.add({0, first, Time::zero(), 0.0});
  const auto b = g.add({0, second, Time::zero(), 0.0});
  g.add({0, other, Time::zero(), 0.0});
  g.add_edge(a, b);
  g.finalize();
  Heard heard;
  const auto tl = run_heard(g, runner, net, heard);
  CHECK(tl.end[b].to_seconds() == doctest::Approx(3e-3).scale(0).epsilon(1e-12));
  // In task order at time 0 (first, other), then their ends at 1 ms (in the
  // order they were scheduled), then the second's start and end.
  const std::vector<std::pair<std::uint32_t, bool>> expected = {{0, true}, {1, true}, {0, false}, {0, true}, {1, false}, {0, false}};
  CHECK(heard.calls == expected);
}

TEST_CASE("a solo collective runs as an instance of one participant does, from its task alone") {
  // The test above's three collectives (1 ms then 2 ms over group {0, 1},
  // 1 ms over {2, 3} beside the first), once as instances and once as solo
  // tasks (the route from solo_route, the analytic time as the duration,
  // the bytes as the amount): the same ends (1, 3 and 1 ms) and the same
  // calls to the listener in the same order.
  const hw::ClusterSpec c = dgx_a100(1);
  struct Run {
    std::vector<Time> ends;
    std::vector<std::pair<std::uint32_t, bool>> calls;
  };
  auto run = [&](bool solo) {
    hw::FlowNetwork net;
    hw::Topology topo(c, net, {0, 1, 2, 3});
    hw::CollectiveRunner runner(c, topo, net);
    const hw::CollectiveRunner::GroupId pair = runner.add_group({0, 1}), other = runner.add_group({2, 3});
    core::TaskGraph g;
    auto add = [&](hw::CollectiveRunner::GroupId group, Time time) {
      if (!solo) return g.add({0, runner.add(hw::CollectiveKind::kAllReduce, 4096.0, group, 1, time), Time::zero(), 0.0});
      return g.add({0, *runner.solo_route(hw::CollectiveKind::kAllReduce, group), time, 4096.0});
    };
    const auto a = add(pair, Time::microseconds(1000));
    const auto b = add(pair, Time::microseconds(2000));
    add(other, Time::microseconds(1000));
    g.add_edge(a, b);
    g.finalize();
    const hw::CollectiveRunner::Description d = runner.describe(g.task(b));
    CHECK(d.kind == hw::CollectiveKind::kAllReduce);
    CHECK(d.bytes == 4096.0);
    CHECK(d.members == 2);
    Heard heard;
    const auto tl = run_heard(g, runner, net, heard);
    return Run{tl.end, heard.calls};
  };
  const Run instances = run(false), solos = run(true);
  CHECK(solos.ends == std::vector<Time>{Time::microseconds(1000), Time::microseconds(3000), Time::microseconds(1000)});
  CHECK(solos.ends == instances.ends);
  CHECK(solos.calls == instances.calls);
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 1});
  hw::CollectiveRunner runner(c, topo, net);
  CHECK_THROWS_AS((void)runner.solo_route(hw::CollectiveKind::kAllGather, 0), std::logic_error);  // no group yet
}

}  // namespace hw_collective_runner_test
