#include "config/presets.hpp"

namespace trainsim::config {

std::optional<std::string_view> find_preset(std::string_view kind, std::string_view name) {
  for (std::size_t i = 0; i < detail::kPresetCount; ++i) {
    const auto& e = detail::kPresetEntries[i];
    if (kind == e.kind && name == e.name) return std::string_view(e.json);
  }
  return std::nullopt;
}

std::vector<std::string> preset_names(std::string_view kind) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < detail::kPresetCount; ++i) {
    if (kind == detail::kPresetEntries[i].kind) names.emplace_back(detail::kPresetEntries[i].name);
  }
  return names;
}

}  // namespace trainsim::config
