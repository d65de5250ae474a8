// The simulated schedule as an SVG picture, drawn the way the pipeline papers
// draw theirs: one row per pipeline rank (of the first simulated pipeline), a
// box per compute action coloured by kind (F, B, I, W; the optimizer step in
// grey) holding its micro-batch number, idle time left blank, and under each
// rank a thin lane with its sends and its data-parallel collectives. With
// virtual stages a box also names its stage, and later chunks are lighter.
// A time axis in ms, a legend and a title (model, plan, schedule, iteration
// time) frame it. Plain text, byte-identical for the same simulation.
#pragma once

#include <string>

#include "lower/simulation.hpp"
#include "report/summary.hpp"

namespace trainsim::report {

// `summary` is the simulation's own (for the title and the plan).
std::string schedule_svg(const lower::Simulation& sim, const Summary& summary);

}  // namespace trainsim::report
