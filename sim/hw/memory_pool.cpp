#include "hw/memory_pool.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::hw {

namespace {
constexpr std::size_t kAhead = 16;
}  // namespace

void MemoryPool::allocate(std::int64_t bytes, core::Time now) {
  if (__builtin_add_overflow(in_use_, bytes, &in_use_) || in_use_ > (std::int64_t{1} << 62)) {
    throw std::overflow_error("memory in use on " + name_ + " passes 2^62 bytes, beyond what the simulator represents");
  }
  peak_ = std::max(peak_, in_use_);
  record(now);
}

void MemoryPool::allocate_resident(std::int64_t bytes) {
  // Held from time zero: only before anything later has been recorded.
  if (last_change_ != core::Time::zero()) {
    throw std::logic_error("resident memory on " + name_ + " allocated after time zero");
  }
  allocate(bytes, core::Time::zero());
  resident_ += bytes;
}

void MemoryPool::release(std::int64_t bytes, core::Time now) {
  in_use_ -= bytes;
  if (in_use_ < 0) throw std::logic_error("memory pool '" + name_ + "' released more than it held");
  record(now);
}

void MemoryPool::record(core::Time now) {
  last_change_ = now;
  if (!keep_timeline_) return;
  if (!timeline_.empty() && timeline_.back().time == now) {
    timeline_.back().bytes_in_use = in_use_;
  } else {
    timeline_.push_back({now, in_use_});
  }
}

void MemoryTracker::keep_timelines(bool on) {
  keep_timelines_ = on;
  for (MemoryPool& p : pools_) p.keep_timeline(on);
}

std::uint32_t MemoryTracker::add_pool(MemoryPool pool) {
  pool.keep_timeline(keep_timelines_);
  pools_.push_back(std::move(pool));
  return static_cast<std::uint32_t>(pools_.size() - 1);
}

void MemoryTracker::reserve_effects(std::size_t tasks, std::size_t effects) {
  if (effect_of_task_.size() < tasks) effect_of_task_.resize(tasks, -1);
  effects_.reserve(effects_.size() + effects);
}

void MemoryTracker::on_start(core::TaskId task, core::Time now) {
  // A GPU's tasks are numbered in about the order they start, so the effect
  // of the task kAhead on is fetched now, to be in cache when it starts: a
  // pipeline of many ranks reads the effects at as many places at once, more
  // than the hardware's prefetchers follow (a cache miss here was the most
  // sampled instruction of a ZeRO-3 sweep at pp 32).
  if (const std::size_t ahead = static_cast<std::size_t>(task) + kAhead; ahead < effect_of_task_.size()) {
    if (const std::int32_t e = effect_of_task_[ahead]; e >= 0) __builtin_prefetch(effects_.data() + e);
  }
  if (task >= effect_of_task_.size() || effect_of_task_[task] < 0) return;
  const MemoryEffect& e = effects_[effect_of_task_[task]];
  if (e.allocate_at_start != 0) pools_[e.pool].allocate(e.allocate_at_start, now);
}

void MemoryTracker::on_finish(core::TaskId task, core::Time now) {
  if (task >= effect_of_task_.size() || effect_of_task_[task] < 0) return;
  const MemoryEffect& e = effects_[effect_of_task_[task]];
  if (e.release_at_end != 0) pools_[e.pool].release(e.release_at_end, now);
}

}  // namespace trainsim::hw
