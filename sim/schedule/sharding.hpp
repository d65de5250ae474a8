// Sharded parameters (ZeRO-3 / FSDP): a pass that brackets each run of a
// stage's compute with UNSHARD (all-gather its parameters) and RESHARD (drop
// them), as torch.distributed.pipelining's lowering does for FSDP stages.
//
// A run is a stretch of consecutive F's, or of consecutive backwards (B or I),
// of one stage on a rank; W's do not need the parameters, so they neither
// break a run nor start one. The schedule thereby decides how often weights
// are gathered: 1F1B alternates F and B, so every action gathers;
// breadth-first runs every micro-batch through a stage in turn, so a stage
// gathers once per forward pass and once per backward pass.
#pragma once

#include <vector>

#include "schedule/action.hpp"

namespace trainsim::schedule {

// `program` with communication already added (with_communication). With
// `reshard_after_forward` false (FSDP's reshard_after_forward=False), a
// forward run leaves its stage gathered: no RESHARD after it, and no UNSHARD
// before the next run while the stage is still held. With
// `reshard_after_backward` false (what torch.distributed.pipelining sets on
// FSDP stages), a backward run does the same. A stage still held is given
// back before the optimizer step.
//
// `units`, by stage (empty: none given): how many sharded units the stage's
// parameters are in. A stage with units gathers and gives them back one
// action each, in the order its run uses them (a forward from the first unit
// to the last, a backward the other way), so that the program names each
// unit's gather; without, one UNSHARD and one RESHARD (unit -1) stand for the
// stage.
Program with_sharding(const Program& program, bool reshard_after_forward = true, bool reshard_after_backward = true,
                      const std::vector<int>& units = {});

}  // namespace trainsim::schedule
