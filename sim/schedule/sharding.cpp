#include "schedule/sharding.hpp"

#include <set>
#include <vector>

namespace trainsim::schedule {

namespace {

bool needs_parameters(Op op) { return op == Op::kForward || op == Op::kBackward || op == Op::kInputGrad; }

}  // namespace

Program with_sharding(const Program& program, bool reshard_after_forward, bool reshard_after_backward,
                      const std::vector<int>& units) {
  // A stage's UNSHARDs (or RESHARDs) for a run in direction `forward`: one a
  // unit in the order the run uses them, or one for the whole stage.
  auto bracket = [&](Op op, int stage, bool forward) {
    std::vector<Action> out;
    const int n = static_cast<std::size_t>(stage) < units.size() ? units[static_cast<std::size_t>(stage)] : 0;
    if (n <= 0) {
      out.push_back(Action::of_unit(op, stage, -1));
      return out;
    }
    for (int i = 0; i < n; ++i) out.push_back(Action::of_unit(op, stage, forward ? i : n - 1 - i));
    return out;
  };
  Program out;
  out.ranks.resize(program.ranks.size());
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const auto& in = program.ranks[r];
    auto& actions = out.ranks[r];
    // The open run: its stage and direction, and where its RESHARD goes (just
    // after its last action that needs the parameters).
    bool open = false;
    int stage = 0;
    bool forward = false;
    std::size_t reshard_at = 0;  // index in `actions`
    std::set<int> held;          // stages left gathered by a run (reshard_after_forward / _backward false)
    auto close = [&] {
      if (!open) return;
      if (forward ? !reshard_after_forward : !reshard_after_backward) {
        held.insert(stage);
      } else {
        const std::vector<Action> given_back = bracket(Op::kReshard, stage, forward);
        actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(reshard_at), given_back.begin(), given_back.end());
        held.erase(stage);
      }
      open = false;
    };
    for (const Action& a : in) {
      if (needs_parameters(a.op)) {
        const bool fwd = a.op == Op::kForward;
        if (open && (a.stage != stage || fwd != forward)) close();
        if (!open) {
          // Receives that feed this action stay before the gather: the gather
          // goes right before the action's own receive, if any.
          std::size_t at = actions.size();
          while (at > 0 && (actions[at - 1].op == Op::kRecvF || actions[at - 1].op == Op::kRecvB) &&
                 actions[at - 1].stage == a.stage && actions[at - 1].microbatch == a.microbatch) {
            --at;
          }
          if (held.count(a.stage) == 0) {
            const std::vector<Action> gathered = bracket(Op::kUnshard, a.stage, fwd);
            actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(at), gathered.begin(), gathered.end());
          }
          open = true;
          stage = a.stage;
          forward = fwd;
        }
        actions.push_back(a);
        reshard_at = actions.size();
        continue;
      }
      if (a.op == Op::kOptimizer) {
        // Nothing runs on gathered weights past the step: a stage still held
        // is given back before it.
        close();
        for (int s : held) {
          for (const Action& r : bracket(Op::kReshard, s, true)) actions.push_back(r);
        }
        held.clear();
      }
      actions.push_back(a);
    }
    close();
    for (int s : held) {
      for (const Action& r : bracket(Op::kReshard, s, true)) actions.push_back(r);
    }
  }
  return out;
}

}  // namespace trainsim::schedule
