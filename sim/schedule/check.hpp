// The checks every Program passes before it runs, and the data dependencies
// between its actions (which lowering turns into edges and transfers).
//
// A program is valid when each (stage, micro-batch) has exactly one F and one
// backward (a B, or an I and a W), each action runs on the rank its stage is
// placed on, and the dependencies together with each rank's issue order form a
// DAG. A cycle would deadlock the pipeline; it is reported as the actions that
// wait for each other.
#pragma once

#include <stdexcept>
#include <vector>

#include "schedule/action.hpp"

namespace trainsim::schedule {

class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class EdgeKind {
  kActivation,  // F on stage s feeds F on stage s + 1
  kGradient,    // backward on stage s + 1 feeds backward on stage s
  kLocal,       // same stage: F before its backward, I before its W
};

struct ActionRef {
  int rank = 0;
  int index = 0;  // position in the rank's list
};

struct Dependency {
  ActionRef before;
  ActionRef after;
  EdgeKind kind = EdgeKind::kLocal;
};

// Data dependencies of a structurally valid program (throws ProgramError when
// an action is missing, repeated or misplaced). Ordered deterministically.
std::vector<Dependency> dependencies(const Program& program, const Shape& shape);

// All checks, including the cycle check. Throws ProgramError.
void check(const Program& program, const Shape& shape);

}  // namespace trainsim::schedule
