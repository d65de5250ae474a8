#include "hw/stream.hpp"

namespace trainsim::hw {

void Stream::on_ready(core::TaskId, core::Engine& engine) { try_start(engine); }

void Stream::try_start(core::Engine& engine) {
  if (busy_ || next_ >= order_.size()) return;
  const core::TaskId head = order_[next_];
  if (!engine.is_ready(head)) return;
  busy_ = true;
  engine.start(head);
  engine.schedule(id_, engine.now() + engine.graph().task(head).duration, head);
}

void Stream::on_event(std::uint64_t token, core::Engine& engine) {
  busy_ = false;
  ++next_;
  engine.finish(static_cast<core::TaskId>(token));
  try_start(engine);
}

}  // namespace trainsim::hw
