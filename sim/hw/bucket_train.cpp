#include "hw/bucket_train.hpp"

#include <algorithm>

#include "hw/stream.hpp"

namespace trainsim::hw {

namespace {

// What the tasks would do, with their own state: the compute stream's
// running piece and speed, the communication stream's running reduction,
// and each pending event's place in the engine's order (time, then the
// order scheduled).
class Play {
 public:
  // `queued`: the train's reductions wait for a collective that has not
  // started, so the play runs the pieces alone (beside `before`).
  Play(BucketTrain& t, const std::vector<core::Time>& before, bool queued = false)
      : t_(t), before_(before), queued_(queued) {}

  void run(core::Time start) {
    // The first piece has ended. Its bucket's reduction starts (slowing
    // the stream between pieces) if the collective before has ended; then
    // the next piece starts, slowed while either runs.
    now_ = start;
    pieces_done_ = 1;
    t_.tail.clear();
    if (!before_.empty()) {
      speed_ = t_.slowed_speed;
      before_end_ = before_.front();
      before_seq_ = -1;  // scheduled before anything here
    } else if (!queued_) {
      start_reduction(0);
    }
    start_piece(1);
    while (busy_ || reducing_ || next_before_ < before_.size()) {
      const Event piece{busy_, piece_end_, piece_seq_};
      const Event reduction{reducing_, reduce_end_, reduce_seq_};
      const Event before{next_before_ < before_.size(), before_end_, before_seq_};
      if (piece.before(reduction) && piece.before(before)) {
        piece_ended();
      } else if (reduction.before(before)) {
        reduction_ended();
      } else {
        before_passed();
      }
    }
  }

 private:
  // A pending event in the engine's order: by time, then as scheduled.
  struct Event {
    bool pending;
    core::Time at;
    std::int64_t seq;
    bool before(const Event& o) const { return pending && (!o.pending || at < o.at || (at == o.at && seq < o.seq)); }
  };

  // hw::Stream::try_start for piece k.
  void start_piece(std::uint32_t k) {
    piece_ = k;
    busy_ = true;
    work_left_ps_ = static_cast<double>(t_.piece_of(k).ps());
    updated_ = now_;
    piece_end_ = speed_ == 1.0 ? now_ + t_.piece_of(k) : now_ + Stream::at_speed(work_left_ps_, speed_);
    piece_seq_ = seq_++;
  }
  // hw::Stream::set_speed.
  void set_speed(double speed) {
    if (speed == speed_) return;
    if (busy_) {
      work_left_ps_ = std::max(0.0, work_left_ps_ - static_cast<double>((now_ - updated_).ps()) * speed_);
      updated_ = now_;
      piece_end_ = now_ + Stream::at_speed(work_left_ps_, speed);
      piece_seq_ = seq_++;
    }
    speed_ = speed;
  }
  // CollectiveRunner::launch of reduction j: the stream slows, then its end is scheduled.
  void start_reduction(std::uint32_t j) {
    if (j == 0) first_reduction_ = now_;
    set_speed(t_.slowed_speed);
    reducing_ = true;
    next_reduction_ = j + 1;
    reduce_end_ = now_ + t_.reduction_of(j);
    reduce_seq_ = seq_++;
  }
  bool before_ended() const { return next_before_ >= before_.size(); }
  // The stream's event: the piece ends, its bucket's reduction starts if
  // the one before has ended, and the next piece starts.
  void piece_ended() {
    now_ = piece_end_;
    busy_ = false;
    pieces_done_ = piece_ + 1;
    if (!reducing_ && next_reduction_ == piece_ && next_reduction_ > 0) start_reduction(piece_);
    if (piece_ + 1 < t_.buckets) {
      start_piece(piece_ + 1);
    } else {
      t_.compute_end = now_;
      t_.before_runs_at_end = !before_ended();
    }
  }
  // The runner's event: the reduction ends (the stream speeds up), and the
  // next starts if its piece has ended (the stream slows again).
  void reduction_ended() {
    now_ = reduce_end_;
    reducing_ = false;
    set_speed(1.0);
    if (pieces_done_ == t_.buckets) t_.tail.push_back(now_);
    if (next_reduction_ < t_.buckets && next_reduction_ < pieces_done_) start_reduction(next_reduction_);
  }
  // The collective before: at a boundary it ends and starts again; at its
  // end the first reduction starts.
  void before_passed() {
    now_ = before_end_;
    set_speed(1.0);
    if (++next_before_ < before_.size()) {
      set_speed(t_.slowed_speed);
      before_end_ = before_[next_before_];
      before_seq_ = seq_++;
    } else if (!queued_) {
      start_reduction(0);
    }
  }

  BucketTrain& t_;
  const std::vector<core::Time>& before_;
  bool queued_ = false;
  core::Time now_;
  std::int64_t seq_ = 0;
  double speed_ = 1.0;
  // The compute stream.
  bool busy_ = false;
  std::uint32_t piece_ = 0, pieces_done_ = 0;
  double work_left_ps_ = 0.0;
  core::Time updated_, piece_end_;
  std::int64_t piece_seq_ = 0;
  // The communication stream: the train's reductions, and the collective before.
  bool reducing_ = false;
  std::uint32_t next_reduction_ = 0;
  core::Time reduce_end_, first_reduction_;
  std::int64_t reduce_seq_ = 0;
  std::size_t next_before_ = 0;
  core::Time before_end_;
  std::int64_t before_seq_ = 0;

 public:
  core::Time first_reduction() const { return first_reduction_; }
};

}  // namespace

void run_train(BucketTrain& train, core::Time first_piece_end, const std::vector<core::Time>& before) {
  Play play(train, before);
  play.run(first_piece_end);
  train.tail_start = std::max(train.compute_end, play.first_reduction());
  train.tail_passed = 0;
  train.tail_from_start = false;
  train.plays_beside = false;
  train.plays_after_end = false;
}

namespace {
// The reductions back to back from their start, whenever that is.
void tail_from_start(BucketTrain& train) {
  train.tail.clear();
  core::Time end;
  for (std::uint32_t j = 0; j < train.buckets; ++j) {
    end += train.reduction_of(j);
    train.tail.push_back(end);
  }
  train.tail_passed = 0;
  train.tail_from_start = true;
}
}  // namespace

void queue_train(BucketTrain& train, core::Time first_piece_end) {
  // Nothing runs beside the pieces: each takes its time at full speed.
  core::Time at = first_piece_end;
  for (std::uint32_t k = 1; k < train.buckets; ++k) at += train.piece_of(k);
  train.compute_end = at;
  train.before_runs_at_end = false;
  tail_from_start(train);
  train.plays_beside = false;
  train.plays_after_end = false;
}

void queue_train_beside(BucketTrain& train, core::Time first_piece_end, const std::vector<core::Time>& before) {
  Play play(train, before, true);
  play.run(first_piece_end);
  tail_from_start(train);
  train.plays_beside = true;
  train.plays_after_end = false;
}

}  // namespace trainsim::hw
