// The message a config document fails to load with, or "" when it loads:
// what most config tests compare.
#pragma once

#include <string>
#include <vector>

#include "config/load.hpp"

namespace trainsim::config::testing {

inline std::string load_error(const nlohmann::json& doc, const std::vector<std::string>& overrides = {},
                              const std::string& file = "test.json", const std::string& base_dir = ".") {
  try {
    load_document(doc, file, base_dir, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace trainsim::config::testing
