// The keys a config may contain, section by section. The loader rejects any
// other key, suggesting the closest known one; `--set` checks its paths here.
// README.md documents each key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::config {

// Sections by JSON path ("" is the top level). Keys whose value is itself a
// section ("cluster", "cluster.node", "model", ...) may instead hold a preset
// name, or a path to a .json file.
const std::vector<std::string>* section_keys(std::string_view section);
bool is_section(std::string_view path);

// The known key closest to `key` (by edit distance), if any is close enough.
std::optional<std::string> closest(std::string_view key, const std::vector<std::string>& candidates);

}  // namespace trainsim::config
