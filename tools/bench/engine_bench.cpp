// Microbenchmarks of the event engine: events per second for the queue alone,
// for streams running chains of tasks, and for flows sharing links.
// Run: build/tools/bench/engine_bench (or tools/bench/run.sh for everything).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/engine.hpp"
#include "core/event_queue.hpp"
#include "hw/flow_network.hpp"
#include "hw/stream.hpp"

using namespace trainsim;
using core::Time;

// Push n events at random times, then pop them all.
static void BM_EventQueuePushPop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(1);
  std::vector<std::int64_t> times(n);
  for (auto& t : times) t = static_cast<std::int64_t>(rng() % 1'000'000'000);
  for (auto _ : state) {
    core::EventQueue q;
    q.reserve(n);
    for (std::size_t i = 0; i < n; ++i) q.push(Time::ps(times[i]), 0, 0, i);
    while (!q.empty()) benchmark::DoNotOptimize(q.pop());
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(n) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EventQueuePushPop)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// `streams` streams, each running `per_stream` tasks in order; task i of stream
// s also waits for task i - 1 of stream s - 1 (a pipeline-like wavefront).
static void BM_EngineStreams(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  const int per_stream = static_cast<int>(state.range(1));
  core::TaskGraph g;
  std::vector<std::vector<core::TaskId>> order(streams);
  std::mt19937_64 rng(2);
  for (int s = 0; s < streams; ++s) {
    for (int i = 0; i < per_stream; ++i) {
      order[s].push_back(g.add({static_cast<core::ResourceId>(s), 0, Time::ps(1000 + static_cast<std::int64_t>(rng() % 1000)), 0.0}));
    }
  }
  for (int s = 1; s < streams; ++s) {
    for (int i = 1; i < per_stream; ++i) g.add_edge(order[s - 1][i - 1], order[s][i]);
  }
  g.finalize();
  std::uint64_t events = 0;
  for (auto _ : state) {
    std::vector<std::unique_ptr<hw::Stream>> res;
    core::Engine e(g);
    for (int s = 0; s < streams; ++s) {
      res.push_back(std::make_unique<hw::Stream>(order[s]));
      res.back()->set_id(e.add_resource(*res.back()));
    }
    const core::Timeline tl = e.run();
    events += tl.events;
    benchmark::DoNotOptimize(tl.makespan);
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineStreams)->Args({8, 1000})->Args({64, 10000})->Unit(benchmark::kMillisecond);

// `flows` transfers over `links` links, each flow crossing two random links,
// arriving in waves so that rates are re-solved on every start and end.
static void BM_FlowNetwork(benchmark::State& state) {
  const int flows = static_cast<int>(state.range(0));
  const int links = static_cast<int>(state.range(1));
  std::mt19937_64 rng(3);
  std::uint64_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    hw::FlowNetwork net;
    for (int l = 0; l < links; ++l) net.add_link({1e9 * (1 + l % 4), Time::microseconds(1)});
    core::TaskGraph g;
    std::vector<core::TaskId> ids;
    for (int f = 0; f < flows; ++f) {
      const auto a = static_cast<hw::LinkId>(rng() % links);
      const auto b = static_cast<hw::LinkId>(rng() % links);
      const auto route = a == b ? net.add_route({a}) : net.add_route({a, b});
      ids.push_back(g.add({0, route, Time::zero(), 1e5 + static_cast<double>(rng() % 100000)}));
    }
    // Waves of 32: each flow after the first wave waits for one of the previous wave.
    for (int f = 32; f < flows; ++f) g.add_edge(ids[f - 32], ids[f]);
    g.finalize();
    core::Engine e(g);
    const auto completion = e.add_resource(net);
    const auto timers = e.add_resource(net);
    net.set_ids(completion, timers);
    state.ResumeTiming();
    const core::Timeline tl = e.run();
    events += tl.events;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlowNetwork)->Args({10000, 64})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
