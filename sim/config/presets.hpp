// Built-in presets: the GPU and node files of configs/hardware and the model
// zoo of models/, compiled into the binary so that `trainsim` works from any
// directory. A config names one ("model": "gpt3-175b") or gives values inline.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::config {

// Kinds: "gpu", "node", "model".
std::optional<std::string_view> find_preset(std::string_view kind, std::string_view name);
std::vector<std::string> preset_names(std::string_view kind);

namespace detail {
struct PresetEntry {
  const char* kind;
  const char* name;
  const char* json;
};
// Generated at configure time from the JSON files (see sim/CMakeLists.txt).
extern const PresetEntry kPresetEntries[];
extern const std::size_t kPresetCount;
}  // namespace detail

}  // namespace trainsim::config
