#include "lower/a2a_pairs.hpp"

#include <cstddef>

namespace trainsim::lower {

using schedule::Action;
using schedule::Op;

std::vector<int> a2a_partners(const std::vector<Action>& actions) {
  std::vector<int> partner(actions.size(), -1);
  // The F and B actions in order, with -1 where an I or W breaks the run.
  std::vector<int> run;
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const Op op = actions[k].op;
    if (!schedule::is_compute(op)) continue;
    run.push_back(op == Op::kForward || op == Op::kBackward ? static_cast<int>(k) : -1);
  }
  auto pairs = [&](std::size_t x, std::size_t y) {  // run[x] then run[y]: one F, one B, not the same chunk
    if (y >= run.size() || run[x] < 0 || run[y] < 0) return false;
    const Action& a = actions[static_cast<std::size_t>(run[x])];
    const Action& b = actions[static_cast<std::size_t>(run[y])];
    return (a.op == Op::kForward) != (b.op == Op::kForward) && !(a.stage == b.stage && a.microbatch == b.microbatch);
  };
  for (std::size_t x = 0; x + 1 < run.size(); ++x) {
    if (run[x] < 0 || partner[static_cast<std::size_t>(run[x])] >= 0 || !pairs(x, x + 1)) continue;
    const bool forward_first = actions[static_cast<std::size_t>(run[x])].op == Op::kForward;
    // A B before an F that could pair with the B after it leaves that F to it.
    if (!forward_first && pairs(x + 1, x + 2)) continue;
    partner[static_cast<std::size_t>(run[x])] = run[x + 1];
    partner[static_cast<std::size_t>(run[x + 1])] = run[x];
    ++x;
  }
  return partner;
}

bool a2a_can_pair(const schedule::Program& program) {
  for (const auto& actions : program.ranks) {
    for (const Action& a : actions) {
      if (a.op == Op::kBackward) return true;
    }
  }
  return false;
}

}  // namespace trainsim::lower
