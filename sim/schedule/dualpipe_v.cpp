#include "schedule/dualpipe_v.hpp"

#include <deque>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::schedule {

Program DualPipeV::program(const Shape& shape) const {
  const int p = shape.ranks, m = shape.microbatches;
  if (shape.stages != 2 * p) {
    throw std::invalid_argument("dualpipev runs two stages per rank in a V (parallel.vp = 2), got vp = " +
                                std::to_string(shape.virtual_stages()));
  }
  for (int s = 0; s < shape.stages; ++s) {
    if (shape.stage_rank[s] != rank_of_stage(Placement::kVShape, s, p)) {
      throw std::invalid_argument("dualpipev places stage " + std::to_string(s) + " on rank " +
                                  std::to_string(rank_of_stage(Placement::kVShape, s, p)) +
                                  " (a V), the shape on rank " + std::to_string(shape.stage_rank[s]));
    }
  }
  if (m < 2 * p) {
    throw std::invalid_argument("dualpipev needs at least 2 x pp = " + std::to_string(2 * p) +
                                " micro-batches per pipeline, got " + std::to_string(m));
  }
  Program program;
  program.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    std::vector<Action>& out = program.ranks[r];
    const int stage[2] = {r, 2 * p - 1 - r};  // the down chunk, the up chunk
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> owed;  // (stage, micro-batch) of I's whose W waits
    auto forward = [&](int c) { out.push_back({Op::kForward, stage[c], next_f[c]++}); };
    auto backward = [&](int c, bool split) {
      const int mb = next_b[c]++;
      if (split) {
        out.push_back({Op::kInputGrad, stage[c], mb});
        owed.emplace_back(stage[c], mb);
      } else {
        out.push_back({Op::kBackward, stage[c], mb});
      }
    };
    auto weight = [&] {
      out.push_back({Op::kWeightGrad, owed.front().first, owed.front().second});
      owed.pop_front();
    };
    for (int i = 0; i < 2 * (p - r - 1); ++i) forward(0);  // 1
    for (int i = 0; i < r + 1; ++i) {                     // 2
      forward(0);
      forward(1);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // 3
      backward(1, true);
      weight();
      forward(1);
    }
    for (int i = 0; i < m - 2 * p + r + 1; ++i) {  // 4
      forward(0);
      backward(1, false);
      forward(1);
      backward(0, false);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // 5
      backward(1, false);
      forward(1);
      backward(0, false);
    }
    // 6: from the middle on, backwards defer their W (the reference turns
    // this on before the middle B1 on odd ranks, after it on even ones).
    bool split = false;
    for (int i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1) split = true;
      backward(1, split);
      if (i == (r + 1) / 2 && r % 2 == 0) split = true;
      backward(0, split);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // 7
      weight();
      backward(0, true);
    }
    while (!owed.empty()) weight();  // 8: the r + 1 left
  }
  return program;
}

}  // namespace trainsim::schedule
