// A schedule plugin turns a pipeline shape into a Program. Plugins are listed
// in registry.cpp, nowhere else.
#pragma once

#include <string_view>

#include "schedule/action.hpp"

namespace trainsim::schedule {

class Schedule {
 public:
  virtual ~Schedule() = default;
  // The name `parallel.schedule` takes.
  virtual std::string_view name() const = 0;
  // One line for `trainsim schedules`.
  virtual std::string_view description() const = 0;
  // Throws std::invalid_argument when the shape does not suit the schedule.
  virtual Program program(const Shape& shape) const = 0;
  // Where its stages run; the driver builds the Shape (and the plan places
  // the stages' costs) accordingly.
  virtual Placement placement() const { return Placement::kLooped; }
  // Whether program() reads Shape::times (the stages' durations): then two
  // plans of one shape may get different programs.
  virtual bool reads_stage_times() const { return false; }
};

}  // namespace trainsim::schedule
