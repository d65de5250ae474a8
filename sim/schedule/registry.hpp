// The one list of schedule plugins. To add a schedule, write its file and add
// one line to registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

// Every registered schedule, in a fixed order.
const std::vector<std::unique_ptr<Schedule>>& all_schedules();
// nullptr when no schedule has that name.
const Schedule* find_schedule(std::string_view name);
// Their names, in the same order (for messages and "did you mean").
const std::vector<std::string>& schedule_names();

}  // namespace trainsim::schedule
