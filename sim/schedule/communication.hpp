// Adds communication to a compute-only program, as torch.distributed.pipelining's
// lowering passes do: a RECV before each compute action whose input comes from
// another rank, a SEND after each one whose output goes to another rank, a
// REDUCE_GRAD after each stage's last backward, and the OPTIMIZER step last.
#pragma once

#include "schedule/action.hpp"

namespace trainsim::schedule {

// `compute` must hold compute actions only (throws ProgramError otherwise).
Program with_communication(const Program& compute, const Shape& shape);

}  // namespace trainsim::schedule
