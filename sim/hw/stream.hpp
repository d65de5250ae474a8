// A GPU stream: runs its tasks one at a time, in program order, like a CUDA
// stream. A task that is ready but not at the head of the order waits; the head
// waits for its dependencies even if later tasks are ready.
//
// A task's duration is its work at full speed; set_speed() changes the speed
// of the running and later tasks (a compute kernel slowed while a collective
// runs beside it on the same GPU), moving the pending completion. A
// slow-down whose end is known (a collective with an analytic time) says
// when full speed returns: the completion is then scheduled where it will
// fall once it has, worked out as set_speed will work it out then, so that
// the change back finds the completion already in place and moves nothing.
//
// A task whose `route` is n > 0 runs bucket train n - 1 (set_trains,
// hw/bucket_train.hpp): the pieces of a stage's last backward after the
// first, ending when the train's play of them says. It throws TrainBroken
// where the train's premise fails (see there).
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine.hpp"
#include "hw/bucket_train.hpp"

namespace trainsim::hw {

class Stream final : public core::Resource {
 public:
  // `order` lists this stream's tasks in the order they are issued.
  explicit Stream(std::vector<core::TaskId> order) : order_(std::move(order)) {}

  void on_ready(core::TaskId task, core::Engine& engine) override;
  void on_event(std::uint64_t token, core::Engine& engine) override;
  void settle(core::Engine& engine) override;  // retime's

  void set_id(core::ResourceId id) { id_ = id; }
  // Played (run_train) as each starts; outlives the run.
  void set_trains(std::vector<BucketTrain>* trains) { trains_ = trains; }
  // 1 is full speed; 0.9 runs the same work in 1/0.9 of the time. Below
  // full speed, `back_at` is when full speed returns if known (no later
  // change meanwhile), else Time::max().
  void set_speed(double speed, core::Engine& engine, core::Time back_at = core::Time::max());
  // How long `work_ps` of work takes at `speed`, up to the next picosecond
  // (a bucket train's play rounds as the stream does).
  // Inline, without a call into the maths library for the ceiling: work
  // and speed are never negative, so truncation is the floor.
  static core::Time at_speed(double work_ps, double speed) {
    const double q = work_ps / speed;
    const auto whole = static_cast<std::int64_t>(q);
    return core::Time::ps(whole + (static_cast<double>(whole) < q ? 1 : 0));
  }
  core::ResourceId id() const { return id_; }
  const std::vector<core::TaskId>& order() const { return order_; }

 private:
  void try_start(core::Engine& engine);
  // When the running task ends at the speed in force, full speed returning
  // at back_at_ if known: the instant set_speed(1.0) would schedule then.
  core::Time projected_end() const;
  // Moves the pending completion to projected_end(), unless it is there
  // already, once the event being handled is done (Engine::settle_later).
  void retime(core::Engine& engine);

  std::vector<core::TaskId> order_;
  std::size_t next_ = 0;
  bool busy_ = false;
  core::ResourceId id_ = 0;
  double speed_ = 1.0;
  double work_left_ps_ = 0.0;  // of the running task, at full speed
  bool train_ = false;         // the running task is a bucket train
  std::vector<BucketTrain>* trains_ = nullptr;
  core::Time updated_;         // when work_left_ps_ was last brought up to date
  core::Time back_at_ = core::Time::max();  // set_speed's, while below full speed
  core::Time scheduled_;       // the running task's pending completion
  bool retiming_ = false;      // settle_later asked for
};

}  // namespace trainsim::hw
