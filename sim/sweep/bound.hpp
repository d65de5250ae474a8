// A cheap lower bound on a plan's iteration time, for pruning: the compute a
// pipeline rank must run, with no waiting and no communication beside it.
// Each rank's compute stream runs, one after another, F and the backward
// (I + W) of each of its stages for every micro-batch, so the iteration lasts
// at least  max over ranks r of  m x sum over stages s on r of (F_s + I_s + W_s).
#pragma once

#include <map>
#include <mutex>
#include <tuple>

#include "config/scenario.hpp"

namespace trainsim::sweep {

// The per-micro-batch part of the bound, max_r sum_s (F + I + W), in seconds.
double compute_per_microbatch_s(const config::Scenario& setting, const workload::Plan& plan);

// The bound itself: compute_per_microbatch_s x micro-batches. Per-micro-batch
// costs depend only on the stage split and the cluster, so they are shared by
// plans that differ in dp, schedule or ZeRO stage. Safe to call from several threads.
class BoundCache {
 public:
  double bound_s(int cluster, const config::Scenario& setting, const workload::Plan& plan);

 private:
  using Key = std::tuple<int, int, int, int, int, int, bool, int>;
  std::mutex mutex_;
  std::map<Key, double> per_microbatch_;
};

}  // namespace trainsim::sweep
