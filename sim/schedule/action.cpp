#include "schedule/action.hpp"

#include <stdexcept>

namespace trainsim::schedule {

std::string op_name(Op op) {
  switch (op) {
    case Op::kForward: return "F";
    case Op::kBackward: return "B";
    case Op::kInputGrad: return "I";
    case Op::kWeightGrad: return "W";
    case Op::kSendF: return "SEND_F";
    case Op::kRecvF: return "RECV_F";
    case Op::kSendB: return "SEND_B";
    case Op::kRecvB: return "RECV_B";
    case Op::kReduceGrad: return "REDUCE_GRAD";
    case Op::kOptimizer: return "OPTIMIZER";
    case Op::kUnshard: return "UNSHARD";
    case Op::kReshard: return "RESHARD";
  }
  return "?";
}

std::string to_string(const Action& a) {
  if (a.op == Op::kOptimizer) return "OPTIMIZER";
  std::string s = std::to_string(a.stage);
  s += op_name(a.op);
  if (a.op != Op::kReduceGrad && a.op != Op::kUnshard && a.op != Op::kReshard) s += std::to_string(a.microbatch);
  if ((a.op == Op::kUnshard || a.op == Op::kReshard) && a.unit() >= 0) s += "(u" + std::to_string(a.unit()) + ")";
  return s;
}

std::string to_string(const std::vector<Action>& actions) {
  std::string s;
  for (const Action& a : actions) {
    if (!s.empty()) s += ' ';
    s += to_string(a);
  }
  return s;
}

Shape Shape::linear(int ranks, int microbatches) {
  Shape s;
  s.ranks = ranks;
  s.stages = ranks;
  s.microbatches = microbatches;
  for (int r = 0; r < ranks; ++r) s.stage_rank.push_back(r);
  return s;
}

Shape Shape::looped(int ranks, int virtual_stages, int microbatches) {
  return placed(Placement::kLooped, ranks, virtual_stages, microbatches);
}

Shape Shape::placed(Placement placement, int ranks, int virtual_stages, int microbatches) {
  Shape s;
  s.ranks = ranks;
  s.pipelines = pipelines_of(placement);
  s.stages = ranks * virtual_stages * s.pipelines;
  if (microbatches % s.pipelines != 0) {
    throw std::invalid_argument("its " + std::to_string(s.pipelines) + " pipelines (directions) split the " +
                                std::to_string(microbatches) + " micro-batches evenly; expected a multiple of " +
                                std::to_string(s.pipelines));
  }
  s.microbatches = microbatches / s.pipelines;
  for (int st = 0; st < s.stages; ++st) s.stage_rank.push_back(rank_of_stage(placement, st, ranks));
  return s;
}

}  // namespace trainsim::schedule
