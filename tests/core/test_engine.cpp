#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "core/engine.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace core_engine_test {

using namespace trainsim::core;

namespace {

// Runs every ready task at once for its duration (unlimited parallelism).
class Delay final : public Resource {
 public:
  ResourceId id = 0;
  void on_ready(TaskId t, Engine& e) override {
    e.start(t);
    e.schedule(id, e.now() + e.graph().task(t).duration, t);
  }
  void on_event(std::uint64_t token, Engine& e) override { e.finish(static_cast<TaskId>(token)); }
};

// Runs `g` on one Delay resource.
Timeline run_delayed(const TaskGraph& g) {
  Engine e(g);
  Delay d;
  d.id = e.add_resource(d);
  return e.run();
}

// Schedules two events for each task, cancels the first, and finishes the task
// on the second: checks lazy cancellation.
class Flaky final : public Resource {
 public:
  ResourceId id = 0;
  std::vector<std::uint64_t> seen;
  void on_ready(TaskId t, Engine& e) override {
    e.start(t);
    e.schedule(id, e.now() + Time::ps(5), 1000 + t);  // will be cancelled
    e.cancel_pending(id);
    e.schedule(id, e.now() + Time::ps(10), t);
  }
  void on_event(std::uint64_t token, Engine& e) override {
    seen.push_back(token);
    e.finish(static_cast<TaskId>(token));
  }
};

TaskGraph chain(std::vector<std::int64_t> durations) {
  TaskGraph g;
  for (auto d : durations) g.add({0, 0, Time::ps(d), 0.0});
  for (TaskId t = 1; t < durations.size(); ++t) g.add_edge(t - 1, t);
  g.finalize();
  return g;
}

}  // namespace

TEST_CASE("a chain runs back to back") {
  // 1 + 2 + 3 = 6 ps, each task starting when its predecessor ends.
  TaskGraph g = chain({1, 2, 3});
  const Timeline tl = run_delayed(g);
  CHECK(tl.makespan.ps() == 6);
  CHECK(tl.start[1].ps() == 1);
  CHECK(tl.start[2].ps() == 3);
  CHECK(tl.events == 3);
}

TEST_CASE("a join waits for its slowest predecessor") {
  // a(4) and b(9) both feed c(1): c starts at max(4, 9) = 9, ends at 10.
  TaskGraph g;
  const TaskId a = g.add({0, 0, Time::ps(4), 0.0});
  const TaskId b = g.add({0, 0, Time::ps(9), 0.0});
  const TaskId c = g.add({0, 0, Time::ps(1), 0.0});
  g.add_edge(a, c);
  g.add_edge(b, c);
  g.finalize();
  const Timeline tl = run_delayed(g);
  CHECK(tl.start[c].ps() == 9);
  CHECK(tl.makespan.ps() == 10);
}

TEST_CASE("cancelled events never arrive") {
  // Each task's 5 ps event is cancelled; only the 10 ps one fires: 2 tasks in a
  // chain end at 10 and 20.
  TaskGraph g = chain({0, 0});
  Engine e(g);
  Flaky f;
  f.id = e.add_resource(f);
  const Timeline tl = e.run();
  CHECK(f.seen == std::vector<std::uint64_t>{0, 1});
  CHECK(tl.makespan.ps() == 20);
  CHECK(tl.events == 2);
}

TEST_CASE("a task that can never run is reported") {
  // A cycle: neither task ever becomes ready.
  TaskGraph g;
  g.add({0, 0, Time::ps(1), 0.0});
  g.add({0, 0, Time::ps(1), 0.0});
  g.add_edge(0, 1);
  g.add_edge(1, 0);
  g.finalize();
  CHECK_THROWS_AS(run_delayed(g), std::runtime_error);
}

TEST_CASE("the same graph gives the same timeline") {
  auto run_once = [] {
    TaskGraph g;
    for (int i = 0; i < 50; ++i) g.add({0, 0, Time::ps(7 * (i % 5) + 1), 0.0});
    for (TaskId i = 0; i + 3 < 50; ++i) g.add_edge(i, i + 3);
    g.finalize();
    const Timeline tl = run_delayed(g);
    std::vector<std::int64_t> out;
    for (TaskId i = 0; i < 50; ++i) out.push_back(tl.end[i].ps());
    return out;
  };
  CHECK(run_once() == run_once());
}

TEST_CASE("progress is reported every 1,024 events") {
  // A chain of 3,000 one-picosecond tasks on a Delay resource: one event
  // each, so reports come after events 1,024 and 2,048, when that many tasks
  // have finished (each event finishes its task before the report).
  TaskGraph g = chain(std::vector<std::int64_t>(3000, 1));
  Engine e(g);
  Delay d;
  d.id = e.add_resource(d);
  std::vector<std::pair<std::size_t, std::size_t>> reports;
  e.set_progress([&](std::size_t done, std::size_t total) { reports.emplace_back(done, total); });
  e.run();
  CHECK(reports == std::vector<std::pair<std::size_t, std::size_t>>{{1024, 3000}, {2048, 3000}});
}

TEST_CASE("an engine hands its timeline over once; a second run is refused") {
  // The chain of 1 + 2 ps: the timeline comes out whole (both tasks' ends);
  // running the same engine again would find it empty, so it throws.
  TaskGraph g = chain({1, 2});
  Engine e(g);
  Delay d;
  d.id = e.add_resource(d);
  const Timeline tl = e.run();
  REQUIRE(tl.end.size() == 2);
  CHECK(tl.end[1].ps() == 3);
  CHECK_THROWS_AS(e.run(), std::logic_error);
}

TEST_CASE("edges handed over as a vector run as if added one by one; a bad one is refused") {
  // Tasks 0 (2 ps) and 1 (3 ps) both before 2 (1 ps): 2 starts at 3 ps and
  // ends at 4, as with add_edge.
  TaskGraph g;
  for (std::int64_t d : {2, 3, 1}) g.add({0, 0, Time::ps(d), 0.0});
  std::vector<std::pair<TaskId, TaskId>> edges = {{0, 2}, {1, 2}};
  g.add_edges(std::move(edges));
  g.finalize();
  const Timeline tl = run_delayed(g);
  CHECK(tl.start[2].ps() == 3);
  CHECK(tl.end[2].ps() == 4);
  TaskGraph bad;
  bad.add({0, 0, Time::ps(1), 0.0});
  CHECK_THROWS_AS(bad.add_edges({{0, 5}}), std::logic_error);
}

}  // namespace core_engine_test
