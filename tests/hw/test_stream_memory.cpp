#include <doctest/doctest.h>

#include <stdexcept>

#include "core/engine.hpp"
#include "hw/memory_pool.hpp"
#include "hw/stream.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_stream_memory_test {

using namespace trainsim;
using core::Time;

TEST_CASE("a stream runs in program order even when a later task is ready first") {
  // Stream order: [a, b]. a waits for x (10 ps on another stream); b is ready
  // at once but must wait for a: a runs 10..13, b runs 13..15.
  core::TaskGraph g;
  const auto x = g.add({1, 0, Time::ps(10), 0.0});
  const auto a = g.add({0, 0, Time::ps(3), 0.0});
  const auto b = g.add({0, 0, Time::ps(2), 0.0});
  g.add_edge(x, a);
  g.finalize();
  hw::Stream s0({a, b});
  hw::Stream s1({x});
  core::Engine e(g);
  s0.set_id(e.add_resource(s0));
  s1.set_id(e.add_resource(s1));
  const auto tl = e.run();
  CHECK(tl.start[a].ps() == 10);
  CHECK(tl.start[b].ps() == 13);
  CHECK(tl.end[b].ps() == 15);
}

TEST_CASE("work at a speed takes its time up to the next picosecond, and no more where it is whole") {
  CHECK(hw::Stream::at_speed(10.0, 0.5) == Time::ps(20));  // 20 exactly
  CHECK(hw::Stream::at_speed(10.0, 3.0) == Time::ps(4));   // 3.33... up to 4
  CHECK(hw::Stream::at_speed(7.0, 1.0) == Time::ps(7));
  CHECK(hw::Stream::at_speed(7.25, 1.0) == Time::ps(8));
  CHECK(hw::Stream::at_speed(0.0, 0.8) == Time::zero());
  // Past 2^53 every double is whole: nothing is added.
  CHECK(hw::Stream::at_speed(9007199254740994.0, 1.0) == Time::ps(9007199254740994));
}

TEST_CASE("a memory pool records use, peak and overflow") {
  // 30 + 50 = 80 at t=2 (peak), 80 - 30 = 50 at t=3; capacity 60 is exceeded.
  hw::MemoryPool p("GPU 0", 60);
  p.allocate(30, Time::ps(1));
  p.allocate(50, Time::ps(2));
  p.release(30, Time::ps(3));
  CHECK(p.in_use() == 50);
  CHECK(p.peak() == 80);
  CHECK(p.exceeded());
  REQUIRE(p.timeline().size() == 3);
  CHECK(p.timeline()[1].bytes_in_use == 80);
}

TEST_CASE("resident memory counts toward the peak and is also kept apart") {
  // 40 resident (two stages' model state, 25 + 15) from t=0, then 30 of
  // activations: peak 70, of which 40 resident and 30 above it.
  hw::MemoryPool p("GPU 0", 100);
  p.allocate_resident(25);
  p.allocate_resident(15);
  p.allocate(30, Time::ps(4));
  p.release(30, Time::ps(9));
  CHECK(p.resident() == 40);
  CHECK(p.peak() == 70);
  CHECK(p.in_use() == 40);
  REQUIRE(p.timeline().size() == 3);
  CHECK(p.timeline()[0].time == Time::zero());
  CHECK(p.timeline()[0].bytes_in_use == 40);
  // Resident means held from time zero: not once later use is recorded.
  CHECK_THROWS_AS(p.allocate_resident(5), std::logic_error);
}

TEST_CASE("a pool that keeps no timeline keeps its use, peak and resident part") {
  // As above: 40 resident, then 30 more at t=4 (peak 70), given back at t=9.
  hw::MemoryPool p("GPU 0", 100);
  p.keep_timeline(false);
  p.allocate_resident(40);
  p.allocate(30, Time::ps(4));
  p.release(30, Time::ps(9));
  CHECK(p.timeline().empty());
  CHECK(p.peak() == 70);
  CHECK(p.resident() == 40);
  CHECK(p.in_use() == 40);
  // Still refused once a later change has happened, timeline or not.
  CHECK_THROWS_AS(p.allocate_resident(5), std::logic_error);
}

TEST_CASE("the tracker's timeline setting reaches pools added before and after it") {
  hw::MemoryTracker t;
  t.add_pool(hw::MemoryPool("GPU 0", 100));
  t.keep_timelines(false);
  t.add_pool(hw::MemoryPool("GPU 1", 100));
  t.pool(0).allocate(10, Time::ps(1));
  t.pool(1).allocate(20, Time::ps(1));
  CHECK(t.pools()[0].timeline().empty());
  CHECK(t.pools()[1].timeline().empty());
  CHECK(t.pools()[1].peak() == 20);
}

TEST_CASE("changes at one instant keep one sample, with the last value") {
  hw::MemoryPool p("GPU 0", 100);
  p.allocate(10, Time::ps(5));
  p.release(10, Time::ps(5));
  p.allocate(20, Time::ps(5));
  REQUIRE(p.timeline().size() == 1);
  CHECK(p.timeline()[0].bytes_in_use == 20);
  CHECK(p.peak() == 20);
}

TEST_CASE("the memory tracker applies task effects as tasks start and end") {
  // Task 0 (4 ps) takes 100 B at start; task 1 (after it, 6 ps) frees it at its end (t = 10).
  core::TaskGraph g;
  g.add({0, 0, Time::ps(4), 0.0});
  g.add({0, 0, Time::ps(6), 0.0});
  g.add_edge(0, 1);
  g.finalize();
  hw::Stream s({0, 1});
  hw::MemoryTracker mem;
  mem.add_pool(hw::MemoryPool("GPU 0", 1000));
  mem.set_effect(0, {0, 100, 0});
  mem.set_effect(1, {0, 0, 100});
  core::Engine e(g);
  s.set_id(e.add_resource(s));
  e.add_observer(mem);
  e.run();
  const auto& tl = mem.pools()[0].timeline();
  REQUIRE(tl.size() == 2);
  CHECK(tl[0].time.ps() == 0);
  CHECK(tl[0].bytes_in_use == 100);
  CHECK(tl[1].time.ps() == 10);
  CHECK(tl[1].bytes_in_use == 0);
}

TEST_CASE("memory beyond 2^62 bytes is an error, not a wrap-around") {
  hw::MemoryPool p("GPU 0", 100);
  p.allocate(std::int64_t{1} << 61, Time::ps(1));
  CHECK_THROWS_AS(p.allocate((std::int64_t{1} << 61) + 1, Time::ps(2)), std::overflow_error);
}

// One task of 10 ps on a stream, and one task on `slower` (a resource with
// members `stream` and `id`), which changes the stream's speed as it runs:
// when the stream's task ends, in picoseconds.
template <class Slower>
std::int64_t end_beside(Slower& slower) {
  core::TaskGraph g;
  const auto work = g.add({0, 0, Time::ps(10), 0.0});
  g.add({1, 0, Time::zero(), 0.0});
  g.finalize();
  hw::Stream s({work});
  slower.stream = &s;
  core::Engine e(g);
  s.set_id(e.add_resource(s));
  slower.id = e.add_resource(slower);
  return e.run().end[work].ps();
}

TEST_CASE("a stream slowed mid-task finishes the rest of the work at the new speed") {
  // One task of 10 ps. A second resource slows the stream to half speed at
  // t = 4: 4 ps of work are done, the other 6 take 12 ps, so it ends at 16.
  class Slower final : public core::Resource {
   public:
    hw::Stream* stream = nullptr;
    core::ResourceId id = 0;
    void on_ready(core::TaskId t, core::Engine& e) override {
      e.start(t);
      e.schedule(id, e.now() + Time::ps(4), t);
    }
    void on_event(std::uint64_t token, core::Engine& e) override {
      stream->set_speed(0.5, e);
      e.finish(static_cast<core::TaskId>(token));
    }
  };
  Slower slower;
  CHECK(end_beside(slower) == 16);
}

TEST_CASE("a slow-down whose end is known gives the end a slow-down ended later by set_speed(1.0) gives") {
  // One task of 10 ps; at t = 2 the stream runs at half speed until t = 6
  // (a collective beside it), then at full speed: 2 ps of work by t = 2,
  // 2 more by t = 6, the other 6 ps at full speed, so it ends at 12. Told
  // when full speed returns (`back_at`) or told only as it returns, the
  // stream ends the task at 12 either way; a return told that does not
  // come (the slow-down lasts) gives 2 + 16 = 18.
  enum class Tell { kAtTheStart, kAsItReturns, kNeverReturns };
  auto end_of = [](Tell tell) {
    class Slower final : public core::Resource {
     public:
      hw::Stream* stream = nullptr;
      core::ResourceId id = 0;
      Tell tell = Tell::kAtTheStart;
      core::TaskId task = 0;
      void on_ready(core::TaskId t, core::Engine& e) override {
        e.start(t);
        task = t;
        e.schedule(id, e.now() + Time::ps(2), 0);
      }
      void on_event(std::uint64_t token, core::Engine& e) override {
        if (token == 0) {
          stream->set_speed(0.5, e, tell == Tell::kAsItReturns ? Time::max() : Time::ps(6));
          e.schedule(id, e.now() + Time::ps(4), 1);
        } else if (tell == Tell::kNeverReturns) {
          stream->set_speed(0.5, e);  // the return told at the start does not come
          e.finish(task);
        } else {
          stream->set_speed(1.0, e);
          e.finish(task);
        }
      }
    };
    Slower slower;
    slower.tell = tell;
    return end_beside(slower);
  };
  CHECK(end_of(Tell::kAtTheStart) == 12);
  CHECK(end_of(Tell::kAsItReturns) == 12);
  CHECK(end_of(Tell::kNeverReturns) == 18);
}

}  // namespace hw_stream_memory_test
