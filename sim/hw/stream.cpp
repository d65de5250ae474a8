#include "hw/stream.hpp"

#include <algorithm>

namespace trainsim::hw {

void Stream::on_ready(core::TaskId, core::Engine& engine) { try_start(engine); }

void Stream::try_start(core::Engine& engine) {
  if (busy_ || next_ >= order_.size()) return;
  const core::TaskId head = order_[next_];
  if (!engine.is_ready(head)) return;
  busy_ = true;
  engine.start(head);
  if (const std::uint32_t route = engine.graph().task(head).route; route > 0) {
    BucketTrain& train = (*trains_)[route - 1];
    if (train.after && !engine.is_done(*train.after) && !engine.is_running(*train.after)) {
      // The reductions wait for a collective that has not started; only
      // the train's before that, whose boundaries are known, may still run.
      if (speed_ == 1.0) {
        queue_train(train, engine.now());
      } else {
        const BucketTrain* beside = train.beside_train ? &(*trains_)[*train.beside_train] : nullptr;
        if (beside == nullptr || !beside->reductions || !engine.is_running(*beside->reductions) ||
            beside->tail_from_start || speed_ != beside->slowed_speed) {
          throw TrainBroken("a bucket train starts beside a running collective");
        }
        queue_train_beside(train, engine.now(),
                           {beside->tail.begin() + static_cast<std::ptrdiff_t>(beside->tail_passed), beside->tail.end()});
      }
    } else if (train.after && !engine.is_done(*train.after)) {
      // Only a collective whose end is known may still run: the previous
      // train's reductions (their boundaries too), or one that tells the
      // train its end as it starts (CollectiveRunner::set_gate).
      if (train.after_train) {
        const BucketTrain& before = (*trains_)[*train.after_train];
        if (speed_ != before.slowed_speed) throw TrainBroken("a bucket train starts beside another collective");
        run_train(train, engine.now(), {before.tail.begin() + static_cast<std::ptrdiff_t>(before.tail_passed), before.tail.end()});
      } else {
        if (!train.after_end || !engine.is_running(*train.after) || speed_ != train.slowed_speed) {
          throw TrainBroken("a bucket train starts beside a collective not yet ended");
        }
        run_train(train, engine.now(), {*train.after_end});
        train.plays_after_end = true;
      }
    } else {
      if (speed_ != 1.0) throw TrainBroken("a bucket train starts beside a running collective");
      run_train(train, engine.now());
    }
    train_ = true;
    engine.schedule(id_, train.compute_end, head);
    return;
  }
  const core::Time duration = engine.graph().task(head).duration;
  work_left_ps_ = static_cast<double>(duration.ps());
  updated_ = engine.now();
  scheduled_ = speed_ == 1.0 ? engine.now() + duration : projected_end();
  engine.schedule(id_, scheduled_, head);
}

core::Time Stream::projected_end() const {
  const core::Time slowed = updated_ + at_speed(work_left_ps_, speed_);
  // Ending before full speed returns, or at that very instant (then which
  // comes first is the engine's order, as without a known return).
  if (speed_ == 1.0 || slowed <= back_at_) return slowed;
  // set_speed(1.0)'s arithmetic at back_at_.
  const double left = std::max(0.0, work_left_ps_ - static_cast<double>((back_at_ - updated_).ps()) * speed_);
  return back_at_ + at_speed(left, 1.0);
}

void Stream::retime(core::Engine& engine) {
  // Once the event being handled is done: one instant may change the speed
  // several times (a collective ends as the next one starts).
  if (retiming_) return;
  retiming_ = true;
  engine.settle_later(*this);
}

void Stream::settle(core::Engine& engine) {
  retiming_ = false;
  if (!busy_ || train_) return;  // ended, or a train began, in the same instant
  const core::Time end = projected_end();
  if (end == scheduled_) return;
  scheduled_ = end;
  engine.cancel_pending(id_);
  engine.schedule(id_, end, order_[next_]);
}

void Stream::set_speed(double speed, core::Engine& engine, core::Time back_at) {
  if (speed == 1.0) back_at = core::Time::max();
  if (speed == speed_) {
    // Only when full speed returns may have moved.
    if (back_at != back_at_) {
      back_at_ = back_at;
      if (busy_ && !train_) retime(engine);
    }
    return;
  }
  back_at_ = back_at;
  if (busy_ && train_) {
    // Only the collective before the train, the previous train's, at one of
    // the boundaries the play took in (its runner has counted it passed).
    const BucketTrain& train = (*trains_)[engine.graph().task(order_[next_]).route - 1];
    if (train.plays_after_end) {
      // Only `after`, as it ends.
      if (engine.now() != *train.after_end) throw TrainBroken("a collective ran beside a bucket train's pieces");
      speed_ = speed;
      return;
    }
    const BucketTrain* before = train.plays_beside                          ? &(*trains_)[*train.beside_train]
                                : train.after_train && !train.tail_from_start ? &(*trains_)[*train.after_train]
                                                                              : nullptr;
    if (before == nullptr || before->tail_passed == 0 || before->tail[before->tail_passed - 1] != engine.now()) {
      throw TrainBroken("a collective ran beside a bucket train's pieces");
    }
    speed_ = speed;
    return;
  }
  if (busy_) {
    // Work done so far at the old speed; the rest at the new one.
    work_left_ps_ = std::max(0.0, work_left_ps_ - static_cast<double>((engine.now() - updated_).ps()) * speed_);
    updated_ = engine.now();
    speed_ = speed;
    retime(engine);
    return;
  }
  speed_ = speed;
}

void Stream::on_event(std::uint64_t token, core::Engine& engine) {
  busy_ = false;
  if (train_) {
    const BucketTrain& train = (*trains_)[engine.graph().task(static_cast<core::TaskId>(token)).route - 1];
    if (speed_ != (train.before_runs_at_end ? train.slowed_speed : 1.0)) {
      throw TrainBroken("a collective other than the one before ran beside a bucket train");
    }
    if (train.tail_from_start && engine.is_done(*train.after)) {
      throw TrainBroken("the collective a queued bucket train waits for ended beside its pieces");
    }
    train_ = false;
  }
  ++next_;
  engine.finish(static_cast<core::TaskId>(token));
  try_start(engine);
}

}  // namespace trainsim::hw
