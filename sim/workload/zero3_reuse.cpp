#include "workload/zero3_reuse.hpp"

namespace trainsim::workload {

double regathered_share(const std::vector<double>& tensors, double persistence_threshold, double max_reuse_distance) {
  double sharded = 0.0, again = 0.0, after = 0.0;  // `after`: the tensors after the one at hand
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    const double n = *it;
    if (n > persistence_threshold) {
      sharded += n;
      if (2.0 * after >= max_reuse_distance) again += n;
    }
    after += n;
  }
  return sharded > 0.0 ? again / sharded : 0.0;
}

}  // namespace trainsim::workload
