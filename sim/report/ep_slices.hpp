// Where a MoE model's token exchanges run inside its compute actions, as
// slices of their own for the trace: the dispatch and combine of every MoE
// layer. The lowering times an action whole (its exchanges exposed inside
// it, or a forward and a backward paired by options.moe_a2a_overlap run as
// one step, each one's exchanges under the other's compute); this lays the
// exchanges out within that time as the chunk model does
// (workload::StageCost::EpChunks; paired_time in lower/lower_compute.cpp):
//   alone, the stage's MoE layers one after another, a forward's layer
//     attention (and the rest of the stage's work, spread evenly), dispatch,
//     experts, combine; a backward's the reverse (an I alone: its share);
//   paired, four slots a layer, each the longer of its two sides:
//     forward's rest | backward's combine, backward's experts | forward's
//     dispatch, forward's experts | backward's dispatch, backward's rest |
//     forward's combine.
// Positions are shares of the model's time, laid onto the action's (or the
// pair's) actual span, so a span stretched by interference stretches them.
#pragma once

#include <vector>

#include "core/time.hpp"
#include "lower/simulation.hpp"
#include "schedule/action.hpp"

namespace trainsim::report {

struct EpSlice {
  int rank = 0;  // the simulated GPU
  core::Time start, end;
  schedule::Action action;  // the action whose tokens move
  bool dispatch = true;     // its dispatch, or its combine
  int layer = 0;            // of the stage's MoE layers, from 0
  bool paired = false;      // under the paired pass's compute (options.moe_a2a_overlap)
};

// Every exchange of every simulated GPU, by GPU, then in time order; empty
// for a dense model.
std::vector<EpSlice> ep_slices(const lower::Simulation& sim);

}  // namespace trainsim::report
