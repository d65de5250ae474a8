// A stage's gradient-bucket train as two tasks instead of two per bucket.
//
// With overlapped gradient reduction, a stage's last backward runs as one
// piece per bucket on the compute stream, and each bucket is reduced on the
// communication stream once its piece has ended and the bucket before it is
// reduced; while a reduction runs, the GPU's compute runs slower
// (lower::Interference). A train stands for the pieces after the first and
// for every reduction: given the instant the first piece ends, run_train
// plays the pieces and reductions out event by event, with the stream's and
// the engine's own arithmetic and order (hw::Stream's rounding at each start
// and change of speed; events at one instant in the order they were
// scheduled), so the times come out to the picosecond as the tasks would
// give them. The stream runs the pieces as one task that ends when the last
// piece would; the reductions still running then (and the last one) run as
// one collective with a boundary, and its change of speed, where each
// reduction would end (CollectiveRunner).
//
// That holds while nothing else changes the GPU's compute speed but the
// collective before the train on its stream, which has ended when the first
// piece does, or is the previous train's reductions (whose boundaries are
// known: a stage's trains follow each other where a rank holds several
// stages), or is another analytic collective, whose end is known once it
// starts (set_gate), or has not started and does not until the last piece
// has ended (a stage whose reductions queue behind those of a stage whose
// last backward comes later: the pieces then run at full speed, and the
// reductions back to back once it ends). In that last case the train
// before it may still run beside the first pieces (queue_train_beside):
// DualPipe's sum of a stage's gradients with its copy's sits between the
// reductions of a rank's two stages and waits for the other rank. The
// stream checks it where the train starts and where it ends, and throws
// TrainBroken where it does not hold; the caller then lowers the plan with
// a task per bucket (lower::Options::merge_bucket_trains). The checks find another collective
// of the GPU only where it changes the stream's speed; the lowering makes
// trains only where every collective of the GPU that moves data runs on the
// one communication stream, in order, so that none can. Events of other
// resources at the very picosecond a train's own would be handled may come
// in another order than with a task per bucket; the README sweep's 20,388
// plans come out byte for byte the same.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/task_graph.hpp"
#include "core/time.hpp"

namespace trainsim::hw {

struct BucketTrain {
  // Buckets 0 .. B - 2 are full: each has the same piece of the backward and
  // the same reduction; bucket B - 1 takes what is left. B >= 3.
  std::uint32_t buckets = 0;
  core::Time piece, last_piece;
  core::Time reduce, last_reduce;  // each above zero
  double slowed_speed = 1.0;       // compute's speed while a reduction runs
  core::Time piece_of(std::uint32_t k) const { return k + 1 < buckets ? piece : last_piece; }
  core::Time reduction_of(std::uint32_t j) const { return j + 1 < buckets ? reduce : last_reduce; }
  // The collective before the train on the GPU's communication stream, and
  // the train whose reductions it is, if one's.
  std::optional<core::TaskId> after;
  std::optional<std::uint32_t> after_train;
  // Where `after` is no train's reductions: the train whose reductions come
  // just before it on the stream, if one's. They may still run when the
  // pieces start, `after` waiting behind them (DualPipe: a stage's sum with
  // its copy's gradients comes between the reductions of a rank's two
  // stages, and waits for the other rank's).
  std::optional<std::uint32_t> beside_train;
  // Where `after` is no train's reductions, when it ends, set as it starts
  // (CollectiveRunner::set_gate).
  std::optional<core::Time> after_end;
  std::optional<core::TaskId> reductions;  // the collective task that runs the tail, once made
  // Filled by run_train: when the last piece ends; when the reductions left
  // then start (the last piece's end, or the end of the collective before,
  // if later); each instant one of them ends, the last the train's end.
  core::Time compute_end, tail_start;
  std::vector<core::Time> tail;
  bool before_runs_at_end = false;  // the collective before still runs at compute_end
  // queue_train's: the tail as times after the reductions start, whenever
  // the collective before lets them.
  bool tail_from_start = false;
  // queue_train_beside's: the pieces played beside beside_train's reductions;
  // run_train's beside `after`, which is no train's reductions, to after_end.
  bool plays_beside = false;
  bool plays_after_end = false;
  // Kept by CollectiveRunner as the reductions run: the tail's instants passed.
  std::size_t tail_passed = 0;
};

// Plays the train out from `first_piece_end`. `before` lists the instants
// at which the collective before the train still has boundaries (the last
// its end; empty when it has ended), the first already scheduled; the
// first reduction starts once it has ended. Fills compute_end, tail_start,
// tail and before_runs_at_end.
void run_train(BucketTrain& train, core::Time first_piece_end, const std::vector<core::Time>& before = {});

// The train whose reductions wait, from `first_piece_end`, for a collective
// before that has not started: fills compute_end, and tail as times after
// the reductions' start (tail_from_start).
void queue_train(BucketTrain& train, core::Time first_piece_end);

// queue_train where beside_train's reductions still run when the first piece
// ends: `before` lists the instants at which they still have boundaries (as
// run_train's), the pieces slowed until the last; the train's reductions
// still wait for `after`, which has not started.
void queue_train_beside(BucketTrain& train, core::Time first_piece_end, const std::vector<core::Time>& before);

class TrainBroken : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim::hw
