#include "report/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace trainsim::report {

namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::strerror(error); }

// Writes all of `text` to `fd`, retrying short writes; 0 or an errno.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

// Where an output goes, decided without opening or creating anything.
struct Destination {
  enum class Kind {
    kFile,        // a regular file, new or old: replaced whole (`path`, links followed)
    kInPlace,     // a device or a pipe (`path`): written as it is
    kDescriptor,  // a descriptor this process has open (`fd`): /dev/stdout, /dev/fd/N
  };
  Kind kind = Kind::kFile;
  fs::path path;
  int fd = -1;
  std::string problem;  // why it cannot be written, when that is known already
};

// "-", /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a
// descriptor of this process: the one it writes to, never a file to replace.
// (Following /dev/stdout to the file the shell opened and renaming over it
// would wipe what else went to standard output.)
int descriptor_named(const fs::path& p) {
  if (p.native() == "-") return STDOUT_FILENO;  // as `run -` reads standard input
  const std::string s = p.lexically_normal().string();
  if (s == "/dev/stdout") return STDOUT_FILENO;
  if (s == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (s.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* first = s.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, s.data() + s.size(), fd);
    if (ec == std::errc() && end == s.data() + s.size() && fd >= 0) return fd;
  }
  return -1;
}

Destination destination(const std::string& given) {
  Destination d;
  fs::path p(given);
  if (!p.has_filename()) {
    d.problem = "expected a file name, got the path of a folder";
    return d;
  }
  // Follow symbolic links one at a time (a link to a link to a file), so
  // that replacing the file keeps every link, a link to a missing file
  // creates that file, and a loop is named.
  for (int hops = 0;; ++hops) {
    if (const int fd = descriptor_named(p); fd >= 0) {
      d.kind = Destination::Kind::kDescriptor;
      d.fd = fd;
      return d;
    }
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(p, ec);
    if (!fs::is_symlink(link)) break;
    if (hops == 40) {
      d.problem = "a loop of symbolic links";
      return d;
    }
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) {
      d.problem = ec.message();
      return d;
    }
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  d.path = p;
  std::error_code ec;
  const fs::file_status status = fs::status(p, ec);
  if (fs::is_directory(status)) {
    d.problem = "it is a directory";
  } else if (fs::exists(status) && !fs::is_regular_file(status)) {
    d.kind = Destination::Kind::kInPlace;
  } else if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    d.problem = ec.message();
  }
  return d;
}

// Creates the folder of `target`; empty or why not.
std::string make_folder(const fs::path& target) {
  if (!target.has_parent_path()) return {};
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return "cannot make its folder " + target.parent_path().string() + ": " + ec.message();
  return {};
}

// A new temporary file beside `target`; its descriptor (or -1 with errno) and name.
int make_temporary(const fs::path& target, std::string& name) {
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string hidden = ".";
  hidden += target.filename().string();
  hidden += ".XXXXXX";
  name = (folder / hidden).string();
  return ::mkstemp(name.data());
}

// The process's umask, read without changing it (umask() would change it
// for a moment under every other thread); 022 when it cannot be read.
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      std::string octal;
      status >> octal;
      unsigned value = 0;
      const auto [end, ec] = std::from_chars(octal.data(), octal.data() + octal.size(), value, 8);
      if (ec == std::errc()) return static_cast<mode_t>(value);
      break;
    }
  }
  return 022;
}

}  // namespace

std::string write_output_file(const std::string& path, std::string_view text) {
  const Destination d = destination(path);
  if (!d.problem.empty()) return d.problem;
  if (d.kind == Destination::Kind::kDescriptor) {
    if (d.fd == STDOUT_FILENO) std::fflush(stdout);  // after what the command printed before
    if (d.fd == STDERR_FILENO) std::fflush(stderr);
    const int error = write_all(d.fd, text);
    return error == 0 ? std::string() : errno_text(error);
  }
  if (d.kind == Destination::Kind::kInPlace) {
    const int fd = ::open(d.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno_text(errno);
    const int error = write_all(fd, text);
    if (::close(fd) != 0 && error == 0) return errno_text(errno);
    return error == 0 ? std::string() : errno_text(error);
  }
  if (std::string why = make_folder(d.path); !why.empty()) return why;
  std::string temporary;
  const int fd = make_temporary(d.path, temporary);
  if (fd < 0) return errno_text(errno);
  // The permissions a new file would get (or the old file's), not mkstemp's 0600.
  struct stat old {};
  const mode_t mode = ::stat(d.path.c_str(), &old) == 0 ? (old.st_mode & 07777) : (0666 & ~current_umask());
  int error = write_all(fd, text);
  if (error == 0 && ::fchmod(fd, mode) != 0) error = errno;
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), d.path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return errno_text(error);
  }
  return {};
}

std::string output_problem(const std::string& path) {
  const Destination d = destination(path);
  if (!d.problem.empty()) return d.problem;
  if (d.kind == Destination::Kind::kDescriptor) {
    const int flags = ::fcntl(d.fd, F_GETFL);
    if (flags < 0) return errno_text(errno);
    if ((flags & O_ACCMODE) == O_RDONLY) return "its descriptor is open for reading only";
    return {};
  }
  if (d.kind == Destination::Kind::kInPlace) {
    // Never opened here: opening a pipe's write end and closing it again
    // would end the reader waiting on it before the output comes.
    return ::access(d.path.c_str(), W_OK) == 0 ? std::string() : errno_text(errno);
  }
  if (std::string why = make_folder(d.path); !why.empty()) return why;
  std::string temporary;
  const int fd = make_temporary(d.path, temporary);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  ::unlink(temporary.c_str());
  return {};
}

bool same_file(const std::string& given_a, const std::string& given_b) {
  const std::string a = given_a == "-" ? "/dev/stdout" : given_a, b = given_b == "-" ? "/dev/stdout" : given_b;
  std::error_code ec_a, ec_b;
  if (fs::equivalent(a, b, ec_a)) return true;  // hard links too, when both exist
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec_a), ec_a);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec_b), ec_b);
  if (ec_a || ec_b) return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
  return pa == pb;
}

namespace {

// Whether descriptor `fd` and `path` name one file.
bool same_as_descriptor(int fd, const std::string& path) {
  struct stat open_file {};
  struct stat target {};
  if (::fstat(fd, &open_file) != 0 || ::stat(path.c_str(), &target) != 0) return false;
  return open_file.st_dev == target.st_dev && open_file.st_ino == target.st_ino;
}

}  // namespace

bool is_standard_output(const std::string& path) {
  return !::isatty(STDOUT_FILENO) && (path == "-" || same_as_descriptor(STDOUT_FILENO, path)) &&
         !same_as_descriptor(STDOUT_FILENO, "/dev/null");
}

bool is_standard_input(const std::string& path) { return same_as_descriptor(STDIN_FILENO, path); }

}  // namespace trainsim::report
