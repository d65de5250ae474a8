// A GPU's memory: what is in use over time, its peak, and whether it ever
// exceeded the capacity. Exceeding it is recorded (the report's OOM verdict),
// never an error here: a what-if must still say how far over a plan goes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine.hpp"

namespace trainsim::hw {

struct MemorySample {
  core::Time time;
  std::int64_t bytes_in_use = 0;
};

class MemoryPool {
 public:
  MemoryPool(std::string name, std::int64_t capacity_bytes)
      : name_(std::move(name)), capacity_(capacity_bytes) {}

  void allocate(std::int64_t bytes, core::Time now);
  void release(std::int64_t bytes, core::Time now);
  // Memory held for the whole iteration from time zero (weights, gradients,
  // optimizer state): allocated like any other, and also counted apart, so a
  // report can split a peak into the model state and what sits above it.
  void allocate_resident(std::int64_t bytes);

  const std::string& name() const { return name_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t in_use() const { return in_use_; }
  std::int64_t peak() const { return peak_; }
  std::int64_t resident() const { return resident_; }
  bool exceeded() const { return peak_ > capacity_; }
  // One sample per instant at which the amount changed (the last value at
  // that instant); empty when the timeline is not kept.
  const std::vector<MemorySample>& timeline() const { return timeline_; }
  // Off: only the amount in use and its peak are kept (a sweep, which shows
  // no timeline, saves a sample per change).
  void keep_timeline(bool on) { keep_timeline_ = on; }

 private:
  void record(core::Time now);

  std::string name_;
  std::int64_t capacity_;
  std::int64_t in_use_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t resident_ = 0;
  core::Time last_change_;  // when the amount in use last changed
  bool keep_timeline_ = true;
  std::vector<MemorySample> timeline_;
};

// Memory effects carried by tasks: bytes taken from a pool when a task starts
// and given back when it ends.
struct MemoryEffect {
  std::uint32_t pool = 0;
  std::int64_t allocate_at_start = 0;
  std::int64_t release_at_end = 0;
};

class MemoryTracker final : public core::TaskObserver {
 public:
  std::uint32_t add_pool(MemoryPool pool);
  // Whether the pools keep their timelines (MemoryPool::keep_timeline),
  // those added so far and those added later.
  void keep_timelines(bool on);
  // Inline: a lowering hands over one per task that has one, and a struct
  // passed by value to a call is written and read back through the stack.
  void set_effect(core::TaskId task, const MemoryEffect& effect) {
    if (effect.pool >= pools_.size()) throw std::logic_error("memory effect names a missing pool");
    if (effect_of_task_.size() <= task) effect_of_task_.resize(task + 1, -1);
    effect_of_task_[task] = static_cast<std::int32_t>(effects_.size());
    effects_.push_back(effect);
  }
  // Room for effects on tasks below `tasks`, `effects` of them (a hint).
  void reserve_effects(std::size_t tasks, std::size_t effects);
  // The effect set for `task` (std::logic_error where none is), to change
  // before the run: a copy made before its run takes another plan's bytes
  // (lower::SharedLowering).
  MemoryEffect& effect_of(core::TaskId task) {
    if (task >= effect_of_task_.size() || effect_of_task_[task] < 0) {
      throw std::logic_error("memory effect of a task that has none");
    }
    return effects_[static_cast<std::size_t>(effect_of_task_[task])];
  }

  void on_start(core::TaskId task, core::Time now) override;
  void on_finish(core::TaskId task, core::Time now) override;

  const std::vector<MemoryPool>& pools() const { return pools_; }
  MemoryPool& pool(std::uint32_t i) { return pools_[i]; }

 private:
  std::vector<MemoryPool> pools_;
  bool keep_timelines_ = true;
  std::vector<std::int32_t> effect_of_task_;  // index into effects_, -1 for none
  std::vector<MemoryEffect> effects_;
};

}  // namespace trainsim::hw
