#include "hw/stream.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::hw {

void Stream::on_ready(core::TaskId, core::Engine& engine) { try_start(engine); }

void Stream::try_start(core::Engine& engine) {
  if (busy_ || next_ >= order_.size()) return;
  const core::TaskId head = order_[next_];
  if (!engine.is_ready(head)) return;
  busy_ = true;
  engine.start(head);
  const core::Time duration = engine.graph().task(head).duration;
  work_left_ps_ = static_cast<double>(duration.ps());
  updated_ = engine.now();
  engine.schedule(id_, speed_ == 1.0 ? engine.now() + duration : engine.now() + at_speed(work_left_ps_, speed_), head);
}

core::Time Stream::at_speed(double work_ps, double speed) {
  return core::Time::ps(static_cast<std::int64_t>(std::ceil(work_ps / speed)));
}

void Stream::set_speed(double speed, core::Engine& engine) {
  if (speed == speed_) return;
  if (busy_) {
    // Work done so far at the old speed; the rest at the new one.
    const core::TaskId running = order_[next_];
    work_left_ps_ = std::max(0.0, work_left_ps_ - static_cast<double>((engine.now() - updated_).ps()) * speed_);
    updated_ = engine.now();
    engine.cancel_pending(id_);
    engine.schedule(id_, engine.now() + at_speed(work_left_ps_, speed), running);
  }
  speed_ = speed;
}

void Stream::on_event(std::uint64_t token, core::Engine& engine) {
  busy_ = false;
  ++next_;
  engine.finish(static_cast<core::TaskId>(token));
  try_start(engine);
}

}  // namespace trainsim::hw
