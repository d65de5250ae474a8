#include "sweep/fingerprint.hpp"

#include <cstdint>
#include <filesystem>
#include <fmt/format.h>

#include "config/load.hpp"

namespace trainsim::sweep {

using nlohmann::json;

json canonical_sweep(const json& doc, const std::string& file, const std::string& base_dir) {
  json out = doc;
  if (!out.is_object()) return out;
  out.erase("description");
  if (!out.contains("cluster") || !out.contains("model")) return out;
  // Each cluster expands as the config loader expands it, beside the model.
  auto expand = [&](const json& cluster) {
    json config = config::expand_references(json{{"cluster", cluster}, {"model", doc["model"]}}, file, base_dir);
    json& c = config["cluster"];
    if (c.is_object() && c.contains("calibration") && c["calibration"].is_string()) {
      // The profile's figures change the results; its path (relative to the
      // sweep file) does not.
      std::filesystem::path profile(c["calibration"].get<std::string>());
      if (profile.is_relative()) profile = std::filesystem::path(base_dir) / profile;
      c["calibration"] = config::parse_json(config::read_text(profile.string(), "calibration profile"), profile.string());
    }
    out["model"] = config["model"];
    return c;
  };
  if (doc["cluster"].is_array()) {
    json list = json::array();
    for (const json& c : doc["cluster"]) list.push_back(expand(c));
    out["cluster"] = std::move(list);
  } else {
    out["cluster"] = expand(doc["cluster"]);
  }
  return out;
}

std::string fingerprint(const json& canonical) {
  // nlohmann::json keeps object keys sorted, so equal documents dump alike.
  const std::string text = canonical.dump(-1, ' ', false, json::error_handler_t::replace);
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace trainsim::sweep
