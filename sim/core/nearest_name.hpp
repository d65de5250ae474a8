// "Did you mean": the known name nearest a mistyped one, for every message
// that names something unknown (config keys, presets, schedules, links).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::core {

// The known name closest to `key`, if any is close enough: the nearest by
// edit distance within about a third of the name's length, else the shortest
// that `key` (3 characters or more) begins, for a name cut short
// ("microbatch" -> "microbatch_size").
std::optional<std::string> nearest_name(std::string_view key, const std::vector<std::string>& candidates);

}  // namespace trainsim::core
