// The timeline as Chrome Trace Event JSON, for Perfetto (ui.perfetto.dev) and
// chrome://tracing: one process per node, one thread per GPU stream (compute,
// comm, ZeRO-3's parameter gathers, and a send lane per peer), complete ("X")
// events such as `F mb3 s1` whose args say where and what (GPU, pipeline,
// data and tensor rank; a collective's kind, bytes and group), a memory
// counter per GPU, and flow arrows from each send to the action that waits
// for it. Times are whole nanoseconds (report/trace_time.hpp); every name is
// escaped (report/json_string.hpp).
#pragma once

#include <string>

#include "hw/cluster_spec.hpp"
#include "lower/simulation.hpp"

namespace trainsim::report {

std::string chrome_trace(const lower::Simulation& sim, const hw::ClusterSpec& cluster);

}  // namespace trainsim::report
