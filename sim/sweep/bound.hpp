// A cheap lower bound on a plan's iteration time, for pruning: the compute a
// pipeline rank must run, with no communication beside it. Each rank's
// compute stream runs, one after another, F and the backward (I + W) of each
// of its stages for every micro-batch. Its first action is the F of its
// lowest stage r (looped or in a V; every later stage of the rank needs that F first), which
// waits for the F of stages 0 .. r-1 of the same micro-batch. So the
// iteration lasts at least
//   max over ranks r of  sum_{s < r} F_s + m x sum over stages s on r of (F_s + I_s + W_s).
#pragma once

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"

namespace trainsim::sweep {

// Per pipeline rank r, in seconds: the F of the stages before r's first stage in its pipeline (`wait_s`)
// and the compute of one micro-batch on r (`per_microbatch_s`).
struct RankWork {
  double wait_s = 0.0;
  double per_microbatch_s = 0.0;
};
std::vector<RankWork> rank_work(const config::Scenario& setting, const workload::Plan& plan);

// The bound itself. Per-micro-batch costs depend only on the stage split, its placement, the cluster, the
// context-parallel degree and the precision, so they are shared by plans that differ in dp, schedule (of one
// placement) or ZeRO stage. Safe to call from several threads.
class BoundCache {
 public:
  double bound_s(int cluster, const config::Scenario& setting, const workload::Plan& plan);

 private:
  using Key = std::tuple<int, int, int, int, int, int, bool, int, int, int, int, int, bool, int, int, int, int, int, int, int, int,
                         double, unsigned, unsigned, bool, int, int>;
  std::mutex mutex_;
  std::map<Key, std::vector<RankWork>> work_;
};

}  // namespace trainsim::sweep
