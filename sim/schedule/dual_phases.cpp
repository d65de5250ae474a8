#include "schedule/dual_phases.hpp"

#include <deque>
#include <utility>

namespace trainsim::schedule {

std::vector<Action> dual_phases(int half_ranks, int half_rank, int microbatches, std::array<int, 2> chunk_stage) {
  const int n = half_ranks, h = half_rank, m = microbatches;
  std::vector<Action> out;
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::deque<std::pair<int, int>> owed;  // (stage, micro-batch) of I's whose W waits
  auto forward = [&](int c) { out.push_back({Op::kForward, chunk_stage[c], next_f[c]++}); };
  auto backward = [&](int c, bool split) {
    const int mb = next_b[c]++;
    if (split) {
      out.push_back({Op::kInputGrad, chunk_stage[c], mb});
      owed.emplace_back(chunk_stage[c], mb);
    } else {
      out.push_back({Op::kBackward, chunk_stage[c], mb});
    }
  };
  auto weight = [&] {
    out.push_back({Op::kWeightGrad, owed.front().first, owed.front().second});
    owed.pop_front();
  };
  for (int i = 0; i < 2 * (n - h - 1); ++i) forward(0);  // 1
  for (int i = 0; i < h + 1; ++i) {                     // 2
    forward(0);
    forward(1);
  }
  for (int i = 0; i < n - h - 1; ++i) {  // 3
    backward(1, true);
    weight();
    forward(1);
  }
  for (int i = 0; i < m - 2 * n + h + 1; ++i) {  // 4
    forward(0);
    backward(1, false);
    forward(1);
    backward(0, false);
  }
  for (int i = 0; i < n - h - 1; ++i) {  // 5
    backward(1, false);
    forward(1);
    backward(0, false);
  }
  // 6: from the middle on, backwards defer their W (the reference turns
  // this on before the middle B1 on odd ranks, after it on even ones).
  bool split = false;
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    backward(1, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    backward(0, split);
  }
  for (int i = 0; i < n - h - 1; ++i) {  // 7
    weight();
    backward(0, true);
  }
  while (!owed.empty()) weight();  // 8: the h + 1 left
  return out;
}

}  // namespace trainsim::schedule
