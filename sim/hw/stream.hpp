// A GPU stream: runs its tasks one at a time, in program order, like a CUDA
// stream. A task that is ready but not at the head of the order waits; the head
// waits for its dependencies even if later tasks are ready.
#pragma once

#include <vector>

#include "core/engine.hpp"

namespace trainsim::hw {

class Stream final : public core::Resource {
 public:
  // `order` lists this stream's tasks in the order they are issued.
  explicit Stream(std::vector<core::TaskId> order) : order_(std::move(order)) {}

  void on_ready(core::TaskId task, core::Engine& engine) override;
  void on_event(std::uint64_t token, core::Engine& engine) override;

  void set_id(core::ResourceId id) { id_ = id; }
  core::ResourceId id() const { return id_; }
  const std::vector<core::TaskId>& order() const { return order_; }

 private:
  void try_start(core::Engine& engine);

  std::vector<core::TaskId> order_;
  std::size_t next_ = 0;
  bool busy_ = false;
  core::ResourceId id_ = 0;
};

}  // namespace trainsim::hw
