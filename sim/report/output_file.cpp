#include "report/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

// The file the path stands for: a symbolic link's target, so that replacing
// it keeps the link.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
    if (!ec) return target;
  }
  return fs::path(path);
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
  name = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  return ::mkstemp(name.data());
}

}  // namespace

std::string write_output_file(const std::string& path, std::string_view text) {
  const fs::path target = resolved(path);
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) return "it is a directory";
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or a pipe: nothing to replace, write straight to it.
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno_text(errno);
    const int error = write_all(fd, text);
    if (::close(fd) != 0 && error == 0) return errno_text(errno);
    return error == 0 ? std::string() : errno_text(error);
  }
  if (std::string why = make_folder(target); !why.empty()) return why;
  std::string temporary;
  const int fd = make_temporary(target, temporary);
  if (fd < 0) return errno_text(errno);
  // The permissions a new file would get (or the old file's), not mkstemp's 0600.
  mode_t mode = 0666;
  struct stat old {};
  if (::stat(target.c_str(), &old) == 0) {
    mode = old.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  int error = write_all(fd, text);
  if (error == 0 && ::fchmod(fd, mode) != 0) error = errno;
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return errno_text(error);
  }
  return {};
}

std::string output_problem(const std::string& path) {
  const fs::path target = resolved(path);
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) return "it is a directory";
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno != ENXIO) return errno_text(errno);  // ENXIO: a pipe with no reader yet
    if (fd >= 0) ::close(fd);
    return {};
  }
  if (std::string why = make_folder(target); !why.empty()) return why;
  std::string temporary;
  const int fd = make_temporary(target, temporary);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  ::unlink(temporary.c_str());
  return {};
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b;
  if (fs::equivalent(a, b, ec_a)) return true;  // hard links too, when both exist
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec_a), ec_a);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec_b), ec_b);
  if (ec_a || ec_b) return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
  return pa == pb;
}

}  // namespace trainsim::report
