// options.moe_a2a_overlap's pairs of a forward and a backward on one rank
// (see paired_time in lower_pipeline.cpp): which of a rank's actions run as
// one overlapped step.
#pragma once

#include <vector>

#include "schedule/action.hpp"

namespace trainsim::lower {

// The pairs options.moe_a2a_overlap makes on a rank, from the order its
// schedule gives: a forward with the backward (B) right after it, or a
// backward with the forward right after it when that forward has no
// backward of its own to pair with (DualPipe's B1 F1 B0 pairs F1 with B0;
// 1F1B's steady F B F B pairs each F with the next B, and with one stage
// each B with the next F). Never a chunk with its own micro-batch's other
// pass, which it depends on; a split backward's I or W between them breaks
// the pair. partner[k] = the other's index, -1 when unpaired (warm-up
// forwards, cool-down backwards).
std::vector<int> a2a_partners(const std::vector<schedule::Action>& actions);

// Whether a program has a whole backward (B) on some rank for the overlap
// to pair: a schedule that splits every backward into I and W has none.
bool a2a_can_pair(const schedule::Program& program);

}  // namespace trainsim::lower
