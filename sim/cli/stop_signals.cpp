#include "cli/stop_signals.hpp"

#include <csignal>

namespace trainsim::cli {

namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_received{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

struct sigaction g_previous_int {}, g_previous_term {};

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_received.compare_exchange_strong(none, sig);
  g_requested = true;
  // The next SIGINT or SIGTERM takes its default action: the process ends.
  struct sigaction plain {};
  plain.sa_handler = SIG_DFL;
  sigemptyset(&plain.sa_mask);
  sigaction(SIGINT, &plain, nullptr);
  sigaction(SIGTERM, &plain, nullptr);
}

}  // namespace

StopSignals::StopSignals() {
  g_requested = false;
  g_received = 0;
  struct sigaction handler {};
  handler.sa_handler = on_stop_signal;
  sigemptyset(&handler.sa_mask);
  handler.sa_flags = SA_RESTART;  // reads and writes carry on; workers poll the flag
  sigaction(SIGINT, &handler, &g_previous_int);
  sigaction(SIGTERM, &handler, &g_previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

const std::atomic<bool>& StopSignals::requested() { return g_requested; }

int StopSignals::received() { return g_received.load(); }

int StopSignals::exit_status() { return 128 + received(); }

}  // namespace trainsim::cli
