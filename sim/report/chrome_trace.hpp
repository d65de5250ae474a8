// The timeline as Chrome Trace Event JSON, for Perfetto (ui.perfetto.dev) and
// chrome://tracing: one process per node, one thread per GPU stream (compute,
// comm, and as many send lanes as a GPU has transfers in flight at once),
// complete ("X") events such as `F mb3 s1`, a memory counter per GPU, and flow
// arrows from each send to the action that waits for it.
#pragma once

#include <string>

#include "hw/cluster_spec.hpp"
#include "lower/simulation.hpp"

namespace trainsim::report {

std::string chrome_trace(const lower::Simulation& sim, const hw::ClusterSpec& cluster);

}  // namespace trainsim::report
