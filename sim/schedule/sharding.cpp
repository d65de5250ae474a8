#include "schedule/sharding.hpp"

namespace trainsim::schedule {

namespace {

bool needs_parameters(Op op) { return op == Op::kForward || op == Op::kBackward || op == Op::kInputGrad; }

}  // namespace

Program with_sharding(const Program& program) {
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
    auto close = [&] {
      if (!open) return;
      actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(reshard_at), {Op::kReshard, stage, 0});
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
          actions.insert(actions.begin() + static_cast<std::ptrdiff_t>(at), {Op::kUnshard, a.stage, 0});
          open = true;
          stage = a.stage;
          forward = fwd;
        }
        actions.push_back(a);
        reshard_at = actions.size();
        continue;
      }
      if (a.op == Op::kOptimizer) close();  // nothing runs on gathered weights past the step
      actions.push_back(a);
    }
    close();
  }
  return out;
}

}  // namespace trainsim::schedule
