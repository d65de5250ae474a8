#include "config/json_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace trainsim::config {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxPathEcho = 200;  // bytes of a file's path in a message

// Line and column, both from 1, of byte `at` of `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t at) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// Follows JSON text byte by byte: whether a byte belongs to a string (its
// quotes included), so that brackets and digits inside strings are skipped.
class StringTracker {
 public:
  bool inside(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return true;
    }
    in_string_ = c == '"';
    return in_string_;
  }

 private:
  bool in_string_ = false, escaped_ = false;
};

bool number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

// The byte offset of the first number in `text` (outside strings) whose value
// is beyond a double's range, or npos. The parser reads left to right, so when
// it stops at such a number, everything before it parsed: it is this one.
std::size_t first_overflowing_number(const std::string& text) {
  StringTracker strings;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (strings.inside(c) || (c != '-' && !(c >= '0' && c <= '9'))) continue;
    std::size_t end = i;
    while (end < text.size() && number_char(text[end])) ++end;
    const std::string token = text.substr(i, end - i);
    if (std::isinf(std::strtod(token.c_str(), nullptr))) return i;
    i = end - 1;
  }
  return std::string::npos;
}

}  // namespace

int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  StringTracker strings;
  for (char ch : text) {
    if (strings.inside(ch)) continue;
    if (ch == '[' || ch == '{') deepest = std::max(deepest, ++depth);
    if (ch == ']' || ch == '}') --depth;
  }
  return deepest;
}

std::string read_text(const std::string& path, const std::string& what_for) {
  namespace fs = std::filesystem;
  const std::string shown = excerpt(path, kMaxPathEcho);
  auto fail = [&](std::string_view why) {
    throw ConfigError(fmt::format("{}: cannot open {}: {}", shown, what_for, why));
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) {
    std::error_code link_ec;
    if (ec == std::errc::no_such_file_or_directory && fs::is_symlink(fs::symlink_status(path, link_ec))) {
      fail("a symbolic link to a file that does not exist");
    }
    if (ec == std::errc::no_such_file_or_directory) fail("no such file");
    if (ec == std::errc::too_many_symbolic_link_levels) fail("a loop of symbolic links");
    if (ec == std::errc::permission_denied) fail("permission denied");
    if (ec == std::errc::not_a_directory) fail("no such file (a part of the path is not a directory)");
    if (ec == std::errc::filename_too_long) fail("the path is too long");
    fail(ec.message());
  }
  if (fs::is_directory(status)) fail("it is a directory");
  if (!fs::is_regular_file(status)) fail("not a regular file");
  constexpr std::uintmax_t kMaxBytes = 64u << 20;
  if (fs::file_size(path, ec) > kMaxBytes && !ec) fail("larger than 64 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("permission denied");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("read error");
  return ss.str();
}

nlohmann::json parse_json(const std::string& text, const std::string& file) {
  // JSON allows an object to repeat a key (the last wins); an input that does
  // so is almost always a mistake, so it is refused, naming the key's path.
  // Each open object keeps a hash set of its keys: linear in the text.
  struct Frame {
    bool object = false;
    bool in_member = false;  // in an object: a member's key has been read, its value not yet
    std::string key;         // in an object: the member being read
    std::size_t index = 0;   // in an array: the element being read
    std::unordered_set<std::string> seen;
  };
  std::vector<Frame> frames;
  auto path = [&frames] {
    std::string p;
    for (const Frame& f : frames) {
      if (!f.object) {
        p += fmt::format("[{}]", f.index);
      } else if (f.in_member) {
        if (!p.empty()) p += '.';
        p += f.key.empty() ? std::string("\"\"") : excerpt(f.key, 40);  // the empty key is a key too
      }
    }
    return p;
  };
  // A value ends: an array moves to its next element, an object's member is done.
  auto element_done = [&frames] {
    if (frames.empty()) return;
    if (frames.back().object) {
      frames.back().in_member = false;
    } else {
      ++frames.back().index;
    }
  };
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames.push_back({true, false, {}, 0, {}}); break;
      case json::parse_event_t::array_start: frames.push_back({false, false, {}, 0, {}}); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        element_done();
        break;
      case json::parse_event_t::key: {
        Frame& f = frames.back();
        f.key = parsed.get<std::string>();
        f.in_member = true;
        if (!f.seen.insert(f.key).second) {
          throw ConfigError(fmt::format("{}: {}: duplicate key (each key may appear once in an object)", file, path()));
        }
        break;
      }
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  };
  if (nesting_depth(text) > kMaxJsonNesting) {
    throw ConfigError(fmt::format("{}: malformed JSON: nested deeper than {} levels", file, kMaxJsonNesting));
  }
  auto at_path = [&path] {
    const std::string p = path();
    return p.empty() ? std::string() : " (at " + p + ")";
  };
  try {
    return json::parse(text, on_event);
  } catch (const json::parse_error& e) {
    const std::size_t at = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    const auto [line, column] = line_column(text, at);
    std::string reason = e.what();
    if (const auto colon = reason.find(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
    throw ConfigError(fmt::format("{}:{}:{}: malformed JSON{}: {}", file, line, column, at_path(), excerpt(reason, 300)));
  } catch (const json::out_of_range&) {
    // A number beyond a double's range (1e400, or 400 digits).
    const std::size_t at = first_overflowing_number(text);
    const auto [line, column] = line_column(text, at == std::string::npos ? 0 : at);
    std::string token;
    if (at != std::string::npos) {
      std::size_t end = at;
      while (end < text.size() && number_char(text[end])) ++end;
      token = text.substr(at, end - at);
    }
    throw ConfigError(fmt::format("{}:{}:{}: {}: the number {} is beyond the range of a double (about 1.8e308)", file,
                                  line, column, path().empty() ? "(top level)" : path(), excerpt(token, 40)));
  } catch (const json::exception& e) {
    std::string reason = e.what();
    if (const auto bracket = reason.find("] "); bracket != std::string::npos) reason = reason.substr(bracket + 2);
    throw ConfigError(fmt::format("{}: malformed JSON{}: {}", file, at_path(), excerpt(reason, 300)));
  }
}

}  // namespace trainsim::config
