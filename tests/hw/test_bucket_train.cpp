// hw::run_train against the engine: a train's play gives the times its
// pieces and reductions take as tasks of their own.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/engine.hpp"
#include "hw/bucket_train.hpp"
#include "hw/stream.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_bucket_train_test {

using namespace trainsim;
using core::Time;

// Reductions as the collective runner and lower::Interference run them for
// one GPU: each takes its task's duration once its inputs are in; while
// any runs, `stream` runs at `slowed`; ends before starts at one instant.
class Reductions final : public core::Resource {
 public:
  hw::Stream* stream = nullptr;
  double slowed = 1.0;
  core::ResourceId id = 0;
  void on_ready(core::TaskId t, core::Engine& e) override {
    e.start(t);
    if (++running_ == 1) stream->set_speed(slowed, e);
    e.schedule(id, e.now() + e.graph().task(t).duration, t);
  }
  void on_event(std::uint64_t token, core::Engine& e) override {
    if (--running_ == 0) stream->set_speed(1.0, e);
    e.finish(static_cast<core::TaskId>(token));
  }

 private:
  int running_ = 0;
};

struct Case {
  std::uint32_t buckets;
  std::int64_t piece, last_piece, reduce, last_reduce;
  double slowed;
  std::vector<std::int64_t> before;  // a collective ahead on the stream: its pieces back to back from t = 0
};

// The tasks: `lead` of compute (0..lead), then the first piece, then the
// others; each piece's reduction after it and the reduction before; the
// collective ahead as reductions of the given lengths from t = 0 (the
// first ready at once). Returns the train as played from the engine's
// times: compute_end, and each reduction's end after it.
// Into `g`: the compute on resource 0 (`lead`, then the pieces), returned,
// and the collective ahead on resource 1 as a chain from t = 0, its last
// task in `ahead` (none without one).
std::vector<core::TaskId> add_pieces_and_ahead(core::TaskGraph& g, const Case& c, std::int64_t lead,
                                               std::optional<core::TaskId>& ahead) {
  std::vector<core::TaskId> compute;
  compute.push_back(g.add({0, 0, Time::ps(lead), 0.0}));
  for (std::uint32_t k = 0; k < c.buckets; ++k) {
    compute.push_back(g.add({0, 0, Time::ps(k + 1 < c.buckets ? c.piece : c.last_piece), 0.0}));
  }
  for (std::int64_t r : c.before) {
    const core::TaskId id = g.add({1, 0, Time::ps(r), 0.0});
    if (ahead) g.add_edge(*ahead, id);
    ahead = id;
  }
  return compute;
}

// Into `g`: each piece's reduction on resource 1, after its piece and after
// `previous` (the reduction before, or what stands ahead of the first).
std::vector<core::TaskId> add_reductions(core::TaskGraph& g, const Case& c, const std::vector<core::TaskId>& compute,
                                         std::optional<core::TaskId> previous) {
  std::vector<core::TaskId> reductions;
  for (std::uint32_t k = 0; k < c.buckets; ++k) {
    const core::TaskId id = g.add({1, 0, Time::ps(k + 1 < c.buckets ? c.reduce : c.last_reduce), 0.0});
    g.add_edge(compute[k + 1], id);
    if (previous) g.add_edge(*previous, id);
    previous = id;
    reductions.push_back(id);
  }
  return reductions;
}

hw::BucketTrain by_tasks(const Case& c, std::int64_t lead, Time* first_piece_end) {
  core::TaskGraph g;
  std::optional<core::TaskId> ahead;
  const std::vector<core::TaskId> compute = add_pieces_and_ahead(g, c, lead, ahead);
  const std::vector<core::TaskId> reductions = add_reductions(g, c, compute, ahead);
  g.finalize();
  hw::Stream stream(compute);
  Reductions reduce;
  reduce.stream = &stream;
  reduce.slowed = c.slowed;
  core::Engine e(g);
  stream.set_id(e.add_resource(stream));
  reduce.id = e.add_resource(reduce);
  const core::Timeline tl = e.run();
  *first_piece_end = tl.end[compute[1]];
  hw::BucketTrain t;
  t.compute_end = tl.end[compute.back()];
  for (core::TaskId r : reductions) {
    if (tl.end[r] > t.compute_end) t.tail.push_back(tl.end[r]);
  }
  t.tail_start = std::max(t.compute_end, tl.start[reductions.front()]);
  return t;
}

// The train a case describes, before any play.
hw::BucketTrain train_of(const Case& c) {
  hw::BucketTrain t;
  t.buckets = c.buckets;
  t.piece = Time::ps(c.piece);
  t.last_piece = Time::ps(c.last_piece);
  t.reduce = Time::ps(c.reduce);
  t.last_reduce = Time::ps(c.last_reduce);
  t.slowed_speed = c.slowed;
  return t;
}

// The collective ahead's boundaries (back to back from t = 0) still to come
// once the first piece has ended.
std::vector<Time> boundaries_after(const Case& c, Time first_piece_end) {
  std::vector<Time> before;
  std::int64_t at = 0;
  for (std::int64_t r : c.before) {
    at += r;
    if (Time::ps(at) > first_piece_end) before.push_back(Time::ps(at));
  }
  return before;
}

// The same played by run_train from the first piece's end, as the engine
// ran it, with the collective ahead's boundaries left then.
hw::BucketTrain played(const Case& c, Time first_piece_end) {
  hw::BucketTrain t = train_of(c);
  hw::run_train(t, first_piece_end, boundaries_after(c, first_piece_end));
  return t;
}

TEST_CASE("a train's play matches its pieces and reductions run as tasks") {
  const double slowed = 1.0 / 1.189;  // workload::kOverlapComputeSlowdown's speed
  const std::vector<Case> cases = {
      // Reductions longer than pieces: back to back from the first piece's end.
      {6, 1000, 700, 2500, 1800, slowed, {}},
      // Shorter: each ends inside the next piece.
      {6, 5000, 3000, 1200, 900, slowed, {}},
      // About as long as a slowed piece (5000 / slowed = 5945): the two ways cross.
      {9, 5000, 4999, 5945, 6100, slowed, {}},
      {9, 5000, 4999, 5946, 10, slowed, {}},
      // A last piece of nothing, and no slowdown at all.
      {4, 3000, 0, 2000, 2000, slowed, {}},
      {5, 3000, 1000, 4000, 100, 1.0, {}},
      // A collective ahead (another stage's reductions) still running when
      // the first piece ends (at 17 + 1000, slowed: about 1206), with
      // boundaries inside the train's first pieces; and one that ends
      // after the last piece.
      {6, 1000, 700, 2500, 1800, slowed, {600, 900, 1300}},
      {6, 5000, 3000, 1200, 900, slowed, {400, 2000, 3100}},
      {4, 1000, 1000, 300, 200, slowed, {1500, 9000}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.piece);
    CAPTURE(c.reduce);
    CAPTURE(c.before.size());
    Time first_piece_end;
    const hw::BucketTrain tasks = by_tasks(c, 17, &first_piece_end);
    const hw::BucketTrain t = played(c, first_piece_end);
    CHECK(t.compute_end == tasks.compute_end);
    CHECK(t.tail_start == tasks.tail_start);
    CHECK(t.tail == tasks.tail);
    CHECK(!t.tail.empty());
  }
}

// DualPipe's case (queue_train_beside): the collective ahead still runs
// when the first piece ends, and between it and the train's reductions a
// gate waits for something else (the other rank's half of a gradient sum),
// which lets it start only at `gate_ready`, after the last piece. The
// reductions then run back to back from the gate's end. Returns the
// compute's end and each reduction's end after the gate's.
hw::BucketTrain gated_by_tasks(const Case& c, std::int64_t gate, std::int64_t gate_ready, Time* first_piece_end) {
  core::TaskGraph g;
  std::optional<core::TaskId> ahead;
  const std::vector<core::TaskId> compute = add_pieces_and_ahead(g, c, 17, ahead);
  const core::TaskId waited = g.add({2, 0, Time::ps(gate_ready), 0.0});  // on a stream of its own
  const core::TaskId gate_task = g.add({1, 0, Time::ps(gate), 0.0});
  g.add_edge(*ahead, gate_task);
  g.add_edge(waited, gate_task);
  const std::vector<core::TaskId> reductions = add_reductions(g, c, compute, gate_task);
  g.finalize();
  hw::Stream stream(compute), other({waited});
  Reductions reduce;
  reduce.stream = &stream;
  reduce.slowed = c.slowed;
  core::Engine e(g);
  stream.set_id(e.add_resource(stream));
  reduce.id = e.add_resource(reduce);
  other.set_id(e.add_resource(other));
  const core::Timeline tl = e.run();
  *first_piece_end = tl.end[compute[1]];
  hw::BucketTrain t;
  t.compute_end = tl.end[compute.back()];
  for (core::TaskId r : reductions) t.tail.push_back(tl.end[r] - tl.end[gate_task]);
  return t;
}

TEST_CASE("a train whose reductions wait behind a gate plays its pieces beside the collective ahead") {
  const double slowed = 1.0 / 1.189;
  // The collective ahead runs back to back from t = 0 (boundaries at
  // 400, 2400, 5500 and 8000 in the first case); the first piece, slowed
  // from the start, ends at 17 + ceil(5000 * 1.189) = 5962, so one
  // boundary (8000) falls in the pieces, which run at full speed after
  // it. In the last case the collective ahead (to 6000) outlasts the
  // pieces (17 + 4 x 1189 = 4773). The gate opens at 100,000, after the
  // last piece, and takes 700.
  const std::vector<Case> cases = {
      {6, 5000, 3000, 1200, 900, slowed, {400, 2000, 3100, 2500}},
      {5, 1000, 700, 2500, 1800, slowed, {600, 900, 1300}},
      {4, 1000, 1000, 300, 200, slowed, {1500, 2000, 2500}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.piece);
    Time first_piece_end;
    const hw::BucketTrain tasks = gated_by_tasks(c, 700, 100'000, &first_piece_end);
    hw::BucketTrain t = train_of(c);
    const std::vector<Time> before = boundaries_after(c, first_piece_end);
    REQUIRE(!before.empty());  // the collective ahead runs beside the pieces
    hw::queue_train_beside(t, first_piece_end, before);
    CHECK(t.compute_end == tasks.compute_end);
    CHECK(t.tail == tasks.tail);
    CHECK(t.tail_from_start);
    CHECK(t.before_runs_at_end == (before.back() > t.compute_end));
    // Beside nothing, the pieces take their own times back to back.
    CHECK(t.compute_end > first_piece_end + Time::ps(c.piece) * static_cast<std::int64_t>(c.buckets - 2) + Time::ps(c.last_piece));
  }
}

}  // namespace hw_bucket_train_test
