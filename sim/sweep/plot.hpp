// A heat map of a sweep as SVG: one cell per (tp, pp), coloured by the best
// iteration time of the plans in it (green fastest, red slowest), marked OOM
// where plans ran but none fit in memory.
#pragma once

#include <string>

#include "sweep/report.hpp"

namespace trainsim::sweep {

std::string heat_map_svg(const Report& report);

}  // namespace trainsim::sweep
