// Reading the files trainsim is given (configs, sweep files, case files,
// calibration profiles, sweep results) as JSON. Every problem is a
// ConfigError naming the file, and where the text allows it the line, the
// column and the JSON path. Both steps take time linear in the text's size.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace trainsim::config {

// The text of a file of at most 64 MiB; a missing, unreadable or special
// file, or a loop of symbolic links, fails naming the path and `what_for`
// (e.g. "config file").
std::string read_text(const std::string& path, const std::string& what_for);

// Parses JSON text: malformed text fails with file:line:column, a repeated
// key with its JSON path, a number beyond a double's range with
// file:line:column and its JSON path.
nlohmann::json parse_json(const std::string& text, const std::string& file);

// JSON nested deeper than this is refused before parsing: no input needs
// more than a handful of levels, and deep nesting would exhaust the stack.
inline constexpr int kMaxJsonNesting = 64;

// The deepest nesting of [ and { in JSON text, strings skipped.
int nesting_depth(std::string_view text);

}  // namespace trainsim::config
