// The checks every Program passes before it runs, and the data dependencies
// between its actions (which lowering turns into task-graph edges).
//
// A program is valid when
//   - each (stage, micro-batch) has exactly one F and one backward (a B, or an
//     I and a W), each on the rank its stage is placed on;
//   - sends match receives: where stages s and s + 1 sit on different ranks,
//     each micro-batch has one SEND_F and one RECV_F across that boundary, and
//     one SEND_B and one RECV_B back; where they share a rank, none;
//   - each stage has one REDUCE_GRAD and each rank one OPTIMIZER;
//   - the dependencies together with each rank's issue order form a DAG. A
//     cycle would deadlock the pipeline; it is reported as the actions that
//     wait for each other.
#pragma once

#include <stdexcept>
#include <vector>

#include "schedule/action.hpp"

namespace trainsim::schedule {

class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ActionRef {
  int rank = 0;
  int index = 0;  // position in the rank's list
  friend bool operator==(const ActionRef&, const ActionRef&) = default;
};

struct Dependency {
  ActionRef before;
  ActionRef after;
};

// Data dependencies of a structurally valid program (throws ProgramError when
// an action is missing, repeated or misplaced), in a deterministic order.
// Issue order within a rank is not listed.
std::vector<Dependency> dependencies(const Program& program, const Shape& shape);

// Whether the actions, each after the one before it on its rank and after
// what `deps` says, can all run (no cycle).
bool acyclic(const Program& program, const std::vector<Dependency>& deps);

// All checks, including the cycle check. Throws ProgramError. Returns the
// data dependencies (as dependencies() does), for lowering to reuse.
std::vector<Dependency> check(const Program& program, const Shape& shape);

}  // namespace trainsim::schedule
