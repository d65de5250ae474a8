// A string as a JSON string literal, for output written by hand (the Chrome
// trace): names come from configs and layer tables, so they may hold quotes,
// backslashes or control characters.
#pragma once

#include <string>
#include <string_view>

namespace trainsim::report {

// `s` quoted, with quotes, backslashes and control characters escaped and any
// byte that is not part of valid UTF-8 replaced by U+FFFD, so the result
// always parses as one JSON string.
std::string json_string(std::string_view s);

}  // namespace trainsim::report
