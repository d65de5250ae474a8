// What the fuzz targets share: the size cap on an input, the work cap on a
// simulation, and the outcomes that count as the project behaving as
// documented. Any other exception, a crash, a sanitizer report, a leak or a
// hang is a finding.
#pragma once

#include <cstddef>
#include <string>

#include <spdlog/spdlog.h>

#include "config/error.hpp"
#include "driver/whatif.hpp"
#include "hw/topology.hpp"
#include "lower/work_limits.hpp"
#include "schedule/check.hpp"

namespace trainsim::fuzz {

// Inputs past 64 KiB are skipped: every input shape that matters fits, and
// larger ones only slow the search. (The loaders' own cap is 64 MiB.)
inline constexpr std::size_t kMaxInputBytes = 64 * 1024;

// A simulation past 20,000 tasks is refused (lower::WorkTooLarge), as the
// machine's memory would refuse a larger one: each run stays in milliseconds.
inline driver::Controls controls() {
  driver::Controls c;
  c.limits = {20'000, 0.0};
  return c;
}

// The files a config may name ("model": "x.json") resolve against the
// examples, so that a fuzzed reference can reach real files too.
inline std::string base_dir() { return TRAINSIM_SOURCE_DIR "/configs/examples"; }

// Keeps the library's log quiet (its info lines would drown the fuzzer's).
inline void quiet_logs() {
  static const bool once = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)once;
}

// Runs `body`; the errors the command line documents (and turns into exit
// statuses 2, 3 and 6) are expected outcomes.
template <typename Body>
void with_documented_errors(Body&& body) {
  quiet_logs();
  try {
    body();
  } catch (const config::ConfigError&) {     // bad input: exit 2
  } catch (const schedule::ProgramError&) {  // the schedule cannot run the plan: exit 3
  } catch (const std::invalid_argument&) {   // a fault naming no link, or one asked of symmetric fidelity: exit 2
  } catch (const lower::WorkTooLarge&) {     // refused before it is built: exit 6
  } catch (const std::overflow_error&) {     // a time or size beyond what the simulator represents: exit 6
  } catch (const hw::NoRoute&) {             // failed links leave GPUs apart: exit 6
  }
}

}  // namespace trainsim::fuzz
