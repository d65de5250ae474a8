// A problem with the user's input. The message is complete and one line:
// the file, the JSON path and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace trainsim::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim::config
