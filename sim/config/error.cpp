#include "config/error.hpp"

namespace trainsim::config {

std::string excerpt(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t keep = max > 3 ? max - 3 : 0;
  // Back up over UTF-8 continuation bytes (10xxxxxx) to a character's start.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  std::string out(text.data(), keep);
  out.append("...");
  return out;
}

ConfigError::ConfigError(const std::string& message) : std::runtime_error(excerpt(message, 4096)) {}

}  // namespace trainsim::config
