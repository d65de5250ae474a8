// Output files are written whole or not at all.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/output_file.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_output_file_test {

using namespace trainsim;
namespace fs = std::filesystem;

namespace {

std::string content(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// While alive, this process may write files of at most `bytes` bytes (a
// write past that fails with EFBIG, as a full disk fails with ENOSPC).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);  // an error, not the signal's default end
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, previous_);
  }

 private:
  rlimit old_{};
  void (*previous_)(int) = nullptr;
};

}  // namespace

TEST_CASE("a file is written, its folder made, and replaced whole") {
  const fs::path dir = fresh_dir("trainsim_test_output_file");
  const fs::path path = dir / "sub" / "trace.json";
  CHECK(report::write_output_file(path.string(), "first") == "");
  CHECK(content(path) == "first");
  CHECK(report::write_output_file(path.string(), "second, longer") == "");
  CHECK(content(path) == "second, longer");
  CHECK(entries(dir / "sub") == 1);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST_CASE("a write that fails midway leaves the old file as it was, and nothing else") {
  // The disk "fills" after 10 bytes: the new text is 1,000.
  const fs::path dir = fresh_dir("trainsim_test_output_full");
  const fs::path path = dir / "trace.json";
  CHECK(report::write_output_file(path.string(), "old trace") == "");
  std::string why;
  {
    const FileSizeLimit full(10);
    why = report::write_output_file(path.string(), std::string(1000, 'x'));
  }
  CHECK(why == "File too large");
  CHECK(content(path) == "old trace");
  CHECK(entries(dir) == 1);
  // A new file that cannot be written is not left empty or cut short.
  {
    const FileSizeLimit full(10);
    why = report::write_output_file((dir / "new.csv").string(), std::string(1000, 'x'));
  }
  CHECK(why == "File too large");
  CHECK(!fs::exists(dir / "new.csv"));
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("a path that cannot be written is named before the work starts") {
  const fs::path dir = fresh_dir("trainsim_test_output_problem");
  std::ofstream(dir / "file") << "x";
  CHECK(report::output_problem((dir / "ok.json").string()) == "");
  CHECK(entries(dir) == 1);  // the probe leaves nothing
  CHECK(report::output_problem(dir.string()) == "it is a directory");
  CHECK(report::output_problem((dir / "file" / "x.json").string()).rfind("cannot make its folder", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("two spellings of one file are one file") {
  const fs::path dir = fresh_dir("trainsim_test_same_file");
  std::ofstream(dir / "a.json") << "{}";
  fs::create_symlink(dir / "a.json", dir / "link.json");
  CHECK(report::same_file((dir / "a.json").string(), (dir / "." / "a.json").string()));
  CHECK(report::same_file((dir / "a.json").string(), (dir / "link.json").string()));
  CHECK(report::same_file((dir / "new.json").string(), (dir / "sub" / ".." / "new.json").string()));  // neither exists
  CHECK(!report::same_file((dir / "a.json").string(), (dir / "b.json").string()));
  fs::remove_all(dir);
}

TEST_CASE("a symbolic link written to keeps pointing at its file") {
  const fs::path dir = fresh_dir("trainsim_test_output_link");
  std::ofstream(dir / "real.json") << "old";
  fs::create_symlink(dir / "real.json", dir / "link.json");
  CHECK(report::write_output_file((dir / "link.json").string(), "new") == "");
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(content(dir / "real.json") == "new");
  fs::remove_all(dir);
}

TEST_CASE("a link to a missing file creates that file; a loop of links is named") {
  const fs::path dir = fresh_dir("trainsim_test_output_links");
  fs::create_symlink("made.json", dir / "dangling.json");  // relative to the link's folder
  CHECK(report::write_output_file((dir / "dangling.json").string(), "made") == "");
  CHECK(fs::is_symlink(dir / "dangling.json"));
  CHECK(content(dir / "made.json") == "made");
  fs::create_symlink(dir / "b.json", dir / "a.json");
  fs::create_symlink(dir / "a.json", dir / "b.json");
  CHECK(report::output_problem((dir / "a.json").string()) == "a loop of symbolic links");
  CHECK(report::write_output_file((dir / "a.json").string(), "x") == "a loop of symbolic links");
  CHECK(fs::is_symlink(dir / "a.json"));  // left as it was
  fs::remove_all(dir);
}

TEST_CASE("a folder's path is no output file, refused before anything is made") {
  const fs::path dir = fresh_dir("trainsim_test_output_folder");
  CHECK(report::output_problem((dir / "new").string() + "/") == "expected a file name, got the path of a folder");
  CHECK(!fs::exists(dir / "new"));
  fs::remove_all(dir);
}

TEST_CASE("standard output and devices are written where they are, never replaced") {
  // /dev/stdout is this process's descriptor 1, whatever file it was
  // redirected to; /dev/null is a device: both are checked, not opened.
  CHECK(report::output_problem("/dev/stdout") == "");
  CHECK(report::output_problem("/dev/null") == "");
  CHECK(report::write_output_file("/dev/null", "into nothing") == "");
  CHECK(fs::is_character_file("/dev/null"));
}

}  // namespace report_output_file_test
