#include "schedule/action.hpp"

namespace trainsim::schedule {

char op_letter(Op op) {
  switch (op) {
    case Op::kForward: return 'F';
    case Op::kBackward: return 'B';
    case Op::kInputGrad: return 'I';
    case Op::kWeightGrad: return 'W';
  }
  return '?';
}

std::string to_string(const Action& a) {
  return std::to_string(a.stage) + op_letter(a.op) + std::to_string(a.microbatch);
}

Shape Shape::linear(int ranks, int microbatches) {
  Shape s;
  s.ranks = ranks;
  s.stages = ranks;
  s.microbatches = microbatches;
  for (int r = 0; r < ranks; ++r) s.stage_rank.push_back(r);
  return s;
}

}  // namespace trainsim::schedule
