// A progress line on stderr for a person watching a long command: rewritten
// in place with the count done, the rate and the time left, and erased at the
// end. Nothing when stderr is not a terminal (a file, a pipe, CI), and
// nothing until the work has lasted `delay_s`, so short runs stay quiet.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace trainsim::cli {

class ProgressLine {
 public:
  // "validate", "cases"; "simulating", "tasks".
  ProgressLine(std::string what, std::string unit, double delay_s = 0.0);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `done` of `total` so far; from one thread at a time. The line is
  // rewritten at most ten times a second.
  void update(std::size_t done, std::size_t total);
  // The next updates count something else ("simulating", "tasks" after
  // "building", "pipelines"); the delay still runs from the start.
  void set_phase(std::string what, std::string unit);
  // Erases the line, if one was shown.
  void clear();
  // Whether lines are shown at all (stderr is a terminal).
  bool enabled() const { return enabled_; }

 private:
  std::string what_, unit_;
  double delay_s_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point phase_start_ = start_;
  double last_shown_s_ = -1.0;
};

}  // namespace trainsim::cli
