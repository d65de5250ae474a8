#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "core/engine.hpp"
#include "hw/flow_network.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_flow_network_test {

using namespace trainsim;
using core::Time;

namespace {

// Runs transfers (bytes, route) all ready at time 0 and returns their end
// times in ns (and, if asked, the events the engine delivered).
std::vector<double> run_flows(hw::FlowNetwork& net, const std::vector<std::pair<double, std::uint32_t>>& transfers,
                              std::uint64_t* events = nullptr) {
  core::TaskGraph g;
  for (const auto& [bytes, route] : transfers) g.add({0, route, Time::zero(), bytes});
  g.finalize();
  core::Engine e(g);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  const core::Timeline tl = e.run();
  if (events != nullptr) *events = tl.events;
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
  g.add({0, 0, Time::zero(), 0.0});
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

TEST_CASE("a flow whose rate a neighbour's end leaves unchanged keeps its end time") {
  // L1 = 3 B/ns, L2 = 10 B/ns, no latency. X (1000 B) crosses both, Y (350 B)
  // and W (1050 B) only L2. L1 holds X to 3 B/ns; Y and W share L2's other
  // 7 B/ns, 3.5 each. Y ends at 350 / 3.5 = 100 ns; the solve that follows
  // leaves X at 3 B/ns (its time stands, not re-timed) and gives W 7 B/ns:
  // W's last 1050 - 350 = 700 B take 100 ns more, so W ends at 200 ns. X ends
  // when it would alone: ceil(1000 B / 0.003 B/ps) = 333,334 ps.
  hw::FlowNetwork net;
  const auto l1 = net.add_link({3e9, Time::zero()});
  const auto l2 = net.add_link({10e9, Time::zero()});
  const auto both = net.add_route({l1, l2});
  const auto only2 = net.add_route({l2});
  const auto ends = run_flows(net, {{1000, both}, {350, only2}, {1050, only2}});
  CHECK(std::llround(ends[0] * 1000.0) == 333334);
  CHECK(ends[1] == doctest::Approx(100).scale(0).epsilon(1e-6));
  CHECK(ends[2] == doctest::Approx(200).scale(0).epsilon(1e-6));
}

TEST_CASE("latency is paid once, before the bytes flow") {
  // 1 us latency on the route, then 1000 B at 1 B/ns: 1000 + 1000 = 2000 ns.
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::microseconds(1)});
  const auto r = net.add_route({l});
  CHECK(run_flows(net, {{1000, r}})[0] == doctest::Approx(2000).scale(0));
}

TEST_CASE("a transfer alone on its links waits out its latency with no event, and shares them once it begins") {
  // One link of 1 B/ns. Alone, 1000 B after 100 ns of latency end at
  // 100 + 1000 = 1100 ns, in one event (the completion check).
  // P (100 ns of latency) and Q (50 ns), 1000 B each, both ready at 0: P
  // takes its place first, Q sends it back to its timer. Q moves alone from
  // 50 to 100 ns (50 B), then both at 0.5 B/ns: Q's 950 B end at
  // 100 + 1900 = 2000 ns, when P has 1000 - 950 = 50 B left, alone again:
  // 2050 ns. Four events: both timers and a completion check for each end.
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::zero()});
  const auto p = net.add_route({l}, Time::ps(100'000));
  const auto q = net.add_route({l}, Time::ps(50'000));
  std::uint64_t events = 0;
  CHECK(run_flows(net, {{1000, p}}, &events)[0] == doctest::Approx(1100).scale(0));
  CHECK(events == 1);
  const auto ends = run_flows(net, {{1000, p}, {1000, q}}, &events);
  CHECK(ends[0] == doctest::Approx(2050).scale(0));
  CHECK(ends[1] == doctest::Approx(2000).scale(0));
  CHECK(events == 4);
}

TEST_CASE("a collective's flow that joins a waiting transfer's link sends the transfer back to its timer") {
  // One link of 1 B/ns. P: 1000 B after 100 ns of latency; a burst of one
  // flow of 1000 B starts on the link at 0. The burst moves alone until
  // 100 ns (100 B), then both at 0.5 B/ns: its 900 B end at 100 + 1800 =
  // 1900 ns, when P has 1000 - 900 = 100 B left, alone: 2000 ns.
  hw::FlowNetwork net;
  const auto l = net.add_link({1e9, Time::zero()});
  const auto p = net.add_route({l}, Time::ps(100'000));
  const auto b = net.add_route({l});
  core::TaskGraph g;
  g.add({0, p, Time::zero(), 1000});
  g.add({2, 0, Time::zero(), 0.0});
  g.finalize();
  core::Engine e(g);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  Burst burst(net, {{1000, b, 0.0, 7}});
  e.add_resource(burst);
  const core::Timeline tl = e.run();
  CHECK(tl.end[0].ps() / 1000.0 == doctest::Approx(2000).scale(0));
  CHECK(burst.ends.at(7) == doctest::Approx(1900).scale(0));
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

TEST_CASE("a flow alone on its links runs at its tightest link's share, or its cap when lower") {
  // Links of 8 and 3 B/ns; the flow weighs 2 on the first (it stands for two
  // there), 1 on the second. Shares 8 / 2 = 4 and 3 / 1 = 3 B/ns: 3000 B take
  // 1000 ns. With a cap of 1.5 B/ns: 2000 ns. A route over the 8 B/ns link
  // twice (weights 1 + 1 there, 2 in all) gets 8 / 2 = 4 B/ns: 750 ns.
  hw::FlowNetwork net;
  const auto wide = net.add_link({8e9, Time::zero()});
  const auto narrow = net.add_link({3e9, Time::zero()});
  const auto both = net.add_route({wide, narrow}, Time::zero(), {2.0, 1.0});
  const auto capped = net.add_route({wide, narrow}, Time::zero(), {2.0, 1.0}, 1.5e9);
  const auto twice = net.add_route({wide, wide});
  CHECK(run_flows(net, {{3000, both}})[0] == doctest::Approx(1000).scale(0));
  CHECK(run_flows(net, {{3000, capped}})[0] == doctest::Approx(2000).scale(0));
  CHECK(run_flows(net, {{3000, twice}})[0] == doctest::Approx(750).scale(0));
  // The share a route keeps for its lone flows, found by the first, serves
  // the next (the same network run again); a link's bandwidth scaled since
  // is seen: the narrow link halved to 1.5 B/ns, 3000 B take 2000 ns.
  CHECK(run_flows(net, {{3000, both}})[0] == doctest::Approx(1000).scale(0));
  net.scale_bandwidth(narrow, 0.5);
  CHECK(run_flows(net, {{3000, both}})[0] == doctest::Approx(2000).scale(0));
}

TEST_CASE("a link whose caps it can carry joins no flows; one they overfill does, until it has room again") {
  // L1 = 1 B/ns, L2 = 1.2 B/ns. X (1200 B, cap 0.6 B/ns) crosses L1 and L2,
  // Y (600 B, cap 0.6) L1 only, Z (1400 B, no cap) L2 only.
  // From 0: L1's caps add up to 1.2 > 1, so L1 limits: its share 1/2 is below
  //   L2's 1.2/2, so X = Y = 0.5 B/ns; Z takes L2's rest, 0.7 B/ns.
  // Y ends at 600 / 0.5 = 1200 ns. X has 600 B left, Z 1400 - 840 = 560 B.
  // Then L1 carries X alone (cap 0.6 <= 1): it limits nothing. L2 (Z has no
  //   cap) shares 1.2 / 2 = 0.6 = X's cap: X = Z = 0.6 B/ns.
  // Z ends at 1200 + 560 / 0.6 = 2133.3 ns; X, at its cap either way, at
  //   1200 + 600 / 0.6 = 2200 ns.
  hw::FlowNetwork net;
  const auto l1 = net.add_link({1e9, Time::zero()});
  const auto l2 = net.add_link({1.2e9, Time::zero()});
  const auto x = net.add_route({l1, l2}, Time::zero(), {}, 0.6e9);
  const auto y = net.add_route({l1}, Time::zero(), {}, 0.6e9);
  const auto z = net.add_route({l2});
  const auto ends = run_flows(net, {{1200, x}, {600, y}, {1400, z}});
  CHECK(ends[0] == doctest::Approx(2200).epsilon(1e-6).scale(0));
  CHECK(ends[1] == doctest::Approx(1200).epsilon(1e-6).scale(0));
  CHECK(ends[2] == doctest::Approx(1200 + 560 / 0.6).epsilon(1e-6).scale(0));
}

TEST_CASE("capped flows that their links can all carry are solved alone, however long the chain they form") {
  // n flows on a chain of n + 1 links of 1 B/ns, flow i crossing links i and
  // i + 1, each capped at 0.4 B/ns: a link carries at most two (0.8 B/ns),
  // so none limits, and without that rule the chain would be one component.
  // Flow i starts (in order, all at time 0) and re-solves the flows on its own
  // links: itself and flow i - 1 (none before flow 0): 1 + 2 (n - 1) = 2n - 1
  // rates. All end together at 1000 / 0.4 = 2500 ns, leaving nothing to
  // re-solve. A chain solved whole would take n (n + 1) / 2.
  const int n = 200;
  hw::FlowNetwork net;
  std::vector<hw::LinkId> links;
  for (int i = 0; i <= n; ++i) links.push_back(net.add_link({1e9, Time::zero()}));
  std::vector<std::pair<double, std::uint32_t>> transfers;
  for (int i = 0; i < n; ++i) transfers.emplace_back(1000, net.add_route({links[i], links[i + 1]}, Time::zero(), {}, 0.4e9));
  const auto ends = run_flows(net, transfers);
  CHECK(net.flows_solved() == 2 * n - 1);
  for (double end : ends) CHECK(end == doctest::Approx(2500).scale(0));
}

namespace {

// Max-min fair rates by water-filling, written plainly for the test below:
// raise every unfrozen flow by the largest step no link or cap refuses,
// freeze the flows at their cap or on a full link, repeat.
struct RefFlow {
  std::vector<int> links;
  double cap = 0.0;  // B/ns; 0 for none
  double left = 0.0;
  double rate = 0.0;
};
void water_fill(std::vector<RefFlow>& flows, const std::vector<double>& bandwidth, const std::vector<int>& live) {
  std::vector<char> frozen(flows.size(), 0);
  for (int f : live) flows[f].rate = 0.0;
  for (;;) {
    std::vector<double> used(bandwidth.size(), 0.0);
    std::vector<int> unfrozen(bandwidth.size(), 0);
    bool any = false;
    for (int f : live) {
      for (int l : flows[f].links) {
        used[l] += flows[f].rate;
        if (!frozen[f]) ++unfrozen[l];
      }
      any = any || !frozen[f];
    }
    if (!any) return;
    double step = 1e300;
    for (std::size_t l = 0; l < bandwidth.size(); ++l) {
      if (unfrozen[l] > 0) step = std::min(step, (bandwidth[l] - used[l]) / unfrozen[l]);
    }
    for (int f : live) {
      if (!frozen[f] && flows[f].cap > 0.0) step = std::min(step, flows[f].cap - flows[f].rate);
    }
    for (int f : live) {
      if (!frozen[f]) flows[f].rate += step;
    }
    for (int f : live) {
      if (frozen[f]) continue;
      bool full = flows[f].cap > 0.0 && flows[f].rate >= flows[f].cap * (1 - 1e-12);
      for (int l : flows[f].links) {
        double sum = 0.0;
        for (int g : live) {
          for (int l2 : flows[g].links) {
            if (l2 == l) sum += flows[g].rate;
          }
        }
        full = full || sum >= bandwidth[l] * (1 - 1e-12);
      }
      if (full) frozen[f] = 1;
    }
  }
}

}  // namespace

TEST_CASE("random networks: every transfer ends when plain water-filling over the whole network says") {
  // 40 networks of 5 links (0.5-2 B/ns) and 10 transfers of 100-3,000 B on 1-3
  // links, a third of them uncapped, the rest capped at 0.1-1 B/ns. The
  // reference re-solves every flow at every end (no components, no slack
  // rule). The network rounds each projected end up to a whole picosecond
  // whenever it re-solves a flow, at most 20 times a flow here (10 starts, 10
  // ends): ends agree within 20 ps.
  std::mt19937 rng(12345);
  const auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * (rng() / 4294967296.0); };
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    hw::FlowNetwork net;
    std::vector<double> bandwidth;
    for (int l = 0; l < 5; ++l) {
      bandwidth.push_back(uniform(0.5, 2.0));
      net.add_link({bandwidth.back() * 1e9, Time::zero()});
    }
    std::vector<RefFlow> ref;
    std::vector<std::pair<double, std::uint32_t>> transfers;
    for (int f = 0; f < 10; ++f) {
      RefFlow r;
      std::vector<int> order = {0, 1, 2, 3, 4};
      for (int i = 4; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
      r.links.assign(order.begin(), order.begin() + 1 + rng() % 3);
      r.cap = rng() % 3 == 0 ? 0.0 : uniform(0.1, 1.0);
      r.left = std::round(uniform(100, 3000));
      std::vector<hw::LinkId> links(r.links.begin(), r.links.end());
      transfers.emplace_back(r.left, net.add_route(links, Time::zero(), {}, r.cap * 1e9));
      ref.push_back(r);
    }
    // The reference: from 0, solve, run to the next end, drop what ended.
    std::vector<double> ref_end(ref.size(), 0.0);
    std::vector<int> live = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    double now = 0.0;
    while (!live.empty()) {
      water_fill(ref, bandwidth, live);
      double next = 1e300;
      for (int f : live) next = std::min(next, ref[f].left / ref[f].rate);
      now += next;
      std::vector<int> still;
      for (int f : live) {
        ref[f].left -= ref[f].rate * next;
        if (ref[f].left <= 1e-9 * 3000) {
          ref_end[f] = now;
        } else {
          still.push_back(f);
        }
      }
      live = still;
    }
    const auto ends = run_flows(net, transfers);
    for (std::size_t f = 0; f < ends.size(); ++f) {
      CAPTURE(f);
      CHECK(std::abs(ends[f] - ref_end[f]) <= 0.020);
    }
  }
}

}  // namespace hw_flow_network_test
