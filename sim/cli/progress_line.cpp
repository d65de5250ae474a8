#include "cli/progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace trainsim::cli {

ProgressLine::ProgressLine(std::string what, std::string unit, double delay_s)
    : what_(std::move(what)), unit_(std::move(unit)), delay_s_(delay_s), enabled_(isatty(STDERR_FILENO) == 1) {}

void ProgressLine::set_phase(std::string what, std::string unit) {
  what_ = std::move(what);
  unit_ = std::move(unit);
  phase_start_ = std::chrono::steady_clock::now();
  last_shown_s_ = -1.0;
}

void ProgressLine::update(std::size_t done, std::size_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - start_).count();
  if (s < delay_s_ || (last_shown_s_ >= 0.0 && s - last_shown_s_ < 0.1 && done < total)) return;
  last_shown_s_ = s;
  const double in_phase = std::chrono::duration<double>(now - phase_start_).count();
  const double rate = in_phase > 0 ? static_cast<double>(done) / in_phase : 0.0;
  const std::string left =
      rate > 0 && total >= done ? fmt::format("{:.0f} s left", static_cast<double>(total - done) / rate) : "time left unknown";
  fmt::print(stderr, "\r\033[K{}: {}/{} {}, {:.0f} {}/s, {:.0f} s so far, {}", what_, done, total, unit_, rate, unit_, s,
             left);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  fmt::print(stderr, "\r\033[K");  // back to the start of the line, and erase it
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace trainsim::cli
