#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report/json_string.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_json_string_test {

using trainsim::report::json_string;

TEST_CASE("quotes and backslashes are escaped") {
  // A switch named le"af{n/2}\x (the config's "le\"af{n/2}\\x").
  CHECK(json_string("le\"af{n/2}\\x") == R"("le\"af{n/2}\\x")");
  CHECK(json_string("") == R"("")");
  CHECK(json_string("F mb3 s1") == R"("F mb3 s1")");
}

TEST_CASE("control characters are escaped") {
  CHECK(json_string("a\nb\tc") == R"("a\nb\tc")");
  CHECK(json_string(std::string("x\x01y")) == R"("x\u0001y")");
  CHECK(json_string(std::string("nul\0!", 5)) == R"("nul\u0000!")");
}

TEST_CASE("UTF-8 passes through, and bytes that are not UTF-8 become U+FFFD") {
  CHECK(json_string("µs") == "\"µs\"");
  // 0xff starts no UTF-8 sequence; the result still parses.
  const std::string out = json_string("ab\xff" "c");
  CHECK(nlohmann::json::parse(out).get<std::string>() == "ab\xEF\xBF\xBD" "c");
}

TEST_CASE("what is escaped parses back to itself") {
  for (const std::string s : {"le\"af{n/2}\\x", "conv\"1\\\n", "\x1f\x7f", "link leaf0->leaf1"}) {
    CAPTURE(s);
    CHECK(nlohmann::json::parse(json_string(s)).get<std::string>() == s);
  }
}

}  // namespace report_json_string_test
