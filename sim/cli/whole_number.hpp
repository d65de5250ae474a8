// A command-line check for a count: a whole number within [lo, hi], with a
// message that says which. CLI::Range reads "2.5" or "x" as out of range
// ("Value 2.5 not in range 1 to 4096"), which hides what is wrong.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <string>

namespace trainsim::cli {

inline CLI::Validator whole_number(std::int64_t lo, std::int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
          return "expected a whole number from " + range + ", got \"" + text + "\"";
        }
        return {};
      },
      "INT in " + range);
}

}  // namespace trainsim::cli
