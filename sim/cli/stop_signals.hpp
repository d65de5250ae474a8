// SIGINT (Ctrl-C) and SIGTERM (what Slurm and CI runners send) ask a long
// command to stop starting work, write what finished, and exit 128 + the
// signal's number. A second signal ends the process at once.
//
// The handlers go in before any work, and whatever the process inherited: a
// job started in the background by a script starts with SIGINT ignored, and
// a signal sent to it on purpose must not be dropped.
#pragma once

#include <atomic>

namespace trainsim::cli {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // puts back what was there before
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Set once a signal has arrived; workers read it before starting a plan.
  static const std::atomic<bool>& requested();
  // The first signal that arrived (SIGINT or SIGTERM), or 0.
  static int received();
  // 128 + received(): 130 for SIGINT, 143 for SIGTERM.
  static int exit_status();
};

}  // namespace trainsim::cli
