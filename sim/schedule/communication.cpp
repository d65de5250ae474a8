#include "schedule/communication.hpp"

#include <map>
#include <string>

#include "schedule/check.hpp"

namespace trainsim::schedule {

Program with_communication(const Program& compute, const Shape& shape) {
  if (static_cast<int>(compute.ranks.size()) != shape.ranks) {
    throw ProgramError("program has " + std::to_string(compute.ranks.size()) + " ranks, shape has " +
                       std::to_string(shape.ranks));
  }
  // Whether stage s's neighbour in its pipeline (s - 1 or s + 1) runs on another rank.
  auto remote_previous = [&](int rank, int s) { return shape.has_previous(s) && shape.stage_rank[s - 1] != rank; };
  auto remote_next = [&](int rank, int s) { return shape.has_next(s) && shape.stage_rank[s + 1] != rank; };
  Program out;
  out.ranks.resize(shape.ranks);
  for (int r = 0; r < shape.ranks; ++r) {
    const auto& in = compute.ranks[r];
    // Where each stage's last backward-ending action sits, for its REDUCE_GRAD.
    std::map<int, int> last_backward;  // stage -> index
    for (int k = 0; k < static_cast<int>(in.size()); ++k) {
      const Action& a = in[k];
      if (!is_compute(a.op)) {
        throw ProgramError("rank " + std::to_string(r) + ": " + to_string(a) +
                           " is not a compute action; schedules emit F, B, I and W only");
      }
      if (a.stage < 0 || a.stage >= shape.stages) {
        throw ProgramError("rank " + std::to_string(r) + ": " + to_string(a) + " names a stage outside 0.." +
                           std::to_string(shape.stages - 1));
      }
      if (is_backward_end(a.op)) last_backward[a.stage] = k;
    }
    std::multimap<int, int> reduce_after;  // index -> stages whose REDUCE_GRAD follows it
    for (const auto& [stage, index] : last_backward) reduce_after.emplace(index, stage);
    auto& actions = out.ranks[r];
    for (int k = 0; k < static_cast<int>(in.size()); ++k) {
      const Action& a = in[k];
      const int s = a.stage, mb = a.microbatch;
      const bool input_grad = a.op == Op::kBackward || a.op == Op::kInputGrad;
      if (a.op == Op::kForward && remote_previous(r, s)) actions.push_back({Op::kRecvF, s, mb});
      if (input_grad && remote_next(r, s)) actions.push_back({Op::kRecvB, s, mb});
      actions.push_back(a);
      if (a.op == Op::kForward && remote_next(r, s)) actions.push_back({Op::kSendF, s, mb});
      if (input_grad && remote_previous(r, s)) actions.push_back({Op::kSendB, s, mb});
      const auto [first, last] = reduce_after.equal_range(k);
      for (auto it = first; it != last; ++it) actions.push_back({Op::kReduceGrad, it->second, 0});
    }
    actions.push_back({Op::kOptimizer, 0, 0});
  }
  return out;
}

}  // namespace trainsim::schedule
