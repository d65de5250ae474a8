// What ties the ranks' actions together, as the lowering wires their tasks,
// worked out from the program alone (no costs, no hardware): each
// dependency's two ends, a receive standing for the send it waits for.
// Plans that run one program share it: a sweep's plans keep it beside their
// checked program (driver::CheckedProgram), so that it is worked out once a
// program, not once a plan.
#pragma once

#include <cstddef>
#include <vector>

#include "schedule/action.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

struct Wiring {
  struct Edge {
    schedule::ActionRef from, to;
  };
  // The dependencies the lowering makes edges of, in the order schedule::check
  // gave them (a task's successors come in the order of its edges, and the
  // order of simultaneous events with them): `from`'s last task before
  // `to`'s first. Left out: a stage's gradient reduction after its
  // backward, which the lowering wires bucket by bucket.
  std::vector<Edge> edges;
  // The dependencies into a send (`to`), from what it sends (`from`): where
  // the send makes no transfer of its own (both stages on one GPU), what
  // waits for the send waits for that instead.
  std::vector<Edge> into_sends;
  // Where each rank's actions start when every rank's are numbered in one run.
  std::vector<std::size_t> rank_offset;

  std::size_t bytes() const { return (edges.size() + into_sends.size()) * sizeof(Edge); }
};

// Throws std::out_of_range for a receive without its send (a program that
// passed schedule::check has none).
Wiring wire(const schedule::Program& program, const schedule::Shape& shape,
            const std::vector<schedule::Dependency>& deps);

}  // namespace trainsim::lower
