#include <doctest/doctest.h>

#include <map>

#include "core/engine.hpp"
#include "hw/flow_network.hpp"

using namespace trainsim;
using core::Time;

namespace {

// Runs transfers (bytes, route) all ready at time 0 and returns their end times in ns.
std::vector<double> run_flows(hw::FlowNetwork& net, const std::vector<std::pair<double, std::uint32_t>>& transfers) {
  core::TaskGraph g;
  for (const auto& [bytes, route] : transfers) g.add({0, Time::zero(), bytes, route});
  g.finalize();
  core::Engine e(g);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  const core::Timeline tl = e.run();
  std::vector<double> ends;
  for (std::size_t i = 0; i < transfers.size(); ++i) ends.push_back(tl.end[i].ps() / 1000.0);
  return ends;
}

// Starts a burst of flows together (FlowNetwork::start_flows) when its one
// task is ready, and records when each ends, in ns, by token.
class Burst final : public core::Resource, public hw::FlowClient {
 public:
  Burst(hw::FlowNetwork& net, std::vector<hw::FlowNetwork::FlowStart> flows) : net_(net), flows_(std::move(flows)) {}
  void on_ready(core::TaskId task, core::Engine& engine) override {
    engine.start(task);
    task_ = task;
    net_.start_flows(flows_, *this, engine);
  }
  void on_event(std::uint64_t, core::Engine&) override {}
  void on_flow_done(std::uint64_t token, core::Engine& engine) override {
    ends[token] = engine.now().ps() / 1000.0;
    if (ends.size() == flows_.size()) engine.finish(task_);
  }
  std::map<std::uint64_t, double> ends;

 private:
  hw::FlowNetwork& net_;
  std::vector<hw::FlowNetwork::FlowStart> flows_;
  core::TaskId task_ = 0;
};

}  // namespace

TEST_CASE("flows started together share links as if started one by one") {
  // The first case's flows (A 1000 B and B 3000 B on L1, C 2000 B on L2,
  // 1 B/ns links) as one burst: A and C end at 2000 ns, B at 4000 ns. A fourth
  // flow D of 1000 B on L2 capped at 0.25 B/ns (2.5e8 B/s) takes its cap,
  // leaving C 0.75 B/ns: C ends at 2000 / 0.75 = 2667 ns, D at 4000 ns. A flow
  // of no bytes ends at once.
  hw::FlowNetwork net;
  const auto l1 = net.add_link({1e9, Time::zero()});
  const auto l2 = net.add_link({1e9, Time::zero()});
  const auto r1 = net.add_route({l1});
  const auto r2 = net.add_route({l2});
  Burst burst(net, {{1000, r1, 0.0, 0}, {3000, r1, 0.0, 1}, {2000, r2, 0.0, 2}, {1000, r2, 2.5e8, 3}, {0, r1, 0.0, 4}});
  core::TaskGraph g;
  g.add({0, Time::zero(), 0.0, 0});
  g.finalize();
  core::Engine e(g);
  e.add_resource(burst);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  e.run();
  CHECK(burst.ends[0] == doctest::Approx(2000).scale(0));
  CHECK(burst.ends[1] == doctest::Approx(4000).scale(0));
  CHECK(burst.ends[2] == doctest::Approx(8000.0 / 3.0).scale(0).epsilon(1e-6));
  CHECK(burst.ends[3] == doctest::Approx(4000).scale(0));
  CHECK(burst.ends[4] == 0.0);
}

TEST_CASE("two flows share a link, a third has its own") {
  // Links of 1 GB/s = 1 byte/ns, no latency.
  // A (1000 B) and B (3000 B) share L1 at 0.5 B/ns each; C (2000 B) has L2 alone.
  //   A ends at 1000 / 0.5 = 2000 ns. B has 3000 - 1000 = 2000 B left, now at
  //   1 B/ns, so it ends at 2000 + 2000 = 4000 ns. C ends at 2000 / 1 = 2000 ns.
  hw::FlowNetwork net;
  const auto l1 = net.add_link({1e9, Time::zero()});
  const auto l2 = net.add_link({1e9, Time::zero()});
  const auto r1 = net.add_route({l1});
  const auto r2 = net.add_route({l2});
  const auto ends = run_flows(net, {{1000, r1}, {3000, r1}, {2000, r2}});
  CHECK(ends[0] == doctest::Approx(2000).scale(0));
  CHECK(ends[1] == doctest::Approx(4000).scale(0));
  CHECK(ends[2] == doctest::Approx(2000).scale(0));
}

TEST_CASE("max-min fairness gives a bottlenecked flow's leftover to the others") {
  // L1 = 1 B/ns, L2 = 3 B/ns. X crosses both, Y only L1, Z only L2.
  // Progressive filling: L1's fair share is 1/2 (X, Y), L2's is 3/2 (X, Z):
  // L1 binds first, X = Y = 0.5; Z takes L2's rest, 3 - 0.5 = 2.5 B/ns.
  // With 1000 B each: X and Y end at 2000 ns; Z at 1000 / 2.5 = 400 ns.
  hw::FlowNetwork net;
  const auto l1 = net.add_link({1e9, Time::zero()});
  const auto l2 = net.add_link({3e9, Time::zero()});
  const auto both = net.add_route({l1, l2});
  const auto only1 = net.add_route({l1});
  const auto only2 = net.add_route({l2});
  const auto ends = run_flows(net, {{1000, both}, {1000, only1}, {1000, only2}});
  // After Z ends at 400 ns, X is still held to 0.5 B/ns by L1: no change.
  CHECK(ends[0] == doctest::Approx(2000).scale(0));
  CHECK(ends[1] == doctest::Approx(2000).scale(0));
  CHECK(ends[2] == doctest::Approx(400).scale(0));
}

TEST_CASE("latency is paid once, before the bytes flow") {
  // 1 us latency on the route, then 1000 B at 1 B/ns: 1000 + 1000 = 2000 ns.
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::microseconds(1)});
  const auto r = net.add_route({l});
  CHECK(run_flows(net, {{1000, r}})[0] == doctest::Approx(2000).scale(0));
}

TEST_CASE("a route's rate cap holds a transfer below its links, and leaves the rest to others") {
  // One link of 4 B/ns. Route `slow` caps its transfers at 1 B/ns, route
  // `free` has no cap. 1000 B on each, together: max-min gives `slow` its cap
  // (1 B/ns, below the fair 2) and `free` the remaining 3 B/ns. `free` ends at
  // 1000 / 3 = 333.3 ns, `slow` at 1000 ns; alone, `slow` still takes 1000 ns
  // (ends fall on whole picoseconds).
  hw::FlowNetwork net;
  const auto l = net.add_link({4e9, Time::zero()});
  const auto slow = net.add_route({l}, Time::zero(), {}, 1e9);
  const auto free = net.add_route({l});
  const auto ends = run_flows(net, {{1000, slow}, {1000, free}});
  CHECK(ends[0] == doctest::Approx(1000).scale(0));
  CHECK(ends[1] == doctest::Approx(1000.0 / 3.0).epsilon(1e-5).scale(0));  // within a picosecond
  CHECK(run_flows(net, {{1000, slow}})[0] == doctest::Approx(1000).scale(0));
  CHECK_THROWS_AS(net.add_route({l}, Time::zero(), {}, -1.0), std::invalid_argument);
}

TEST_CASE("a zero-byte transfer costs only the latency") {
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::microseconds(2)});
  const auto r = net.add_route({l});
  CHECK(run_flows(net, {{0, r}})[0] == doctest::Approx(2000).scale(0));
}

TEST_CASE("a flow standing for several weighs that many on a link") {
  // One link of 1 B/ns: flow A stands for 3 identical flows, B for 1. Max-min
  // over 4 equal shares: each of A's copies and B get 0.25 B/ns.
  // 1000 B each: both end at 4000 ns.
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::zero()});
  const auto shared = net.add_route({l}, Time::zero(), {3.0});
  const auto single = net.add_route({l});
  const auto ends = run_flows(net, {{1000, shared}, {1000, single}});
  CHECK(ends[0] == doctest::Approx(4000).scale(0));
  CHECK(ends[1] == doctest::Approx(4000).scale(0));
}
