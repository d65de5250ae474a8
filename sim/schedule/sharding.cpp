#include "schedule/sharding.hpp"

#include <set>

namespace trainsim::schedule {

namespace {

bool needs_parameters(Op op) { return op == Op::kForward || op == Op::kBackward || op == Op::kInputGrad; }

}  // namespace

Program with_sharding(const Program& program, bool reshard_after_forward, bool reshard_after_backward) {
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
        actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(reshard_at), {Op::kReshard, stage, 0});
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
            actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(at), {Op::kUnshard, a.stage, 0});
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
        for (int s : held) actions.push_back({Op::kReshard, s, 0});
        held.clear();
      }
      actions.push_back(a);
    }
    close();
    for (int s : held) actions.push_back({Op::kReshard, s, 0});
  }
  return out;
}

}  // namespace trainsim::schedule
