// A problem with the user's input. The message is complete and one line:
// the file, the JSON path and what was expected.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trainsim::config {

// At most `max` bytes of `text` for a message: a longer text keeps its start
// and ends in "..." (cut at a whole UTF-8 character), so that a 20 MB key or
// value is never echoed whole.
std::string excerpt(std::string_view text, std::size_t max = 60);

class ConfigError : public std::runtime_error {
 public:
  // Messages past 4 KiB are cut (excerpt): whatever of the input a message
  // echoes, it stays a line a terminal can show.
  explicit ConfigError(const std::string& message);
};

}  // namespace trainsim::config
