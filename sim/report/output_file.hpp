// Output files are written whole or not at all. The text goes to a temporary
// file in the same folder, which replaces the path (rename) only once every
// byte is written and synced: on a full disk the old file stays as it was and
// no truncated one is left. A path that is not a regular file (/dev/stdout, a
// pipe) is written in place; "-" is standard output.
#pragma once

#include <string>
#include <string_view>

namespace trainsim::report {

// Writes `text` to `path`, making its folder if needed. Returns an empty
// string on success, else why it failed ("No space left on device").
std::string write_output_file(const std::string& path, std::string_view text);

// Why `path` could not be written, checked before long work starts (it is a
// folder; its folder cannot be made; no file can be made in it), or empty.
// Leaves no file behind (a folder it had to make stays, as writing would
// make it too).
std::string output_problem(const std::string& path);

// Whether two paths name one file (spelled alike or not, through links or
// not, existing or not).
bool same_file(const std::string& a, const std::string& b);

// Whether `path` is the file standard output writes to ("-", /dev/stdout, the
// pipe or file it was redirected to), where a second document would interleave
// with the summary. /dev/null and a terminal never are: nothing parses them.
bool is_standard_output(const std::string& path);

// Whether `path` is the file standard input reads from (a config piped in
// with `run -` from a file an output would then replace).
bool is_standard_input(const std::string& path);

}  // namespace trainsim::report
