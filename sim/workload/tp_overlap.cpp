#include "workload/tp_overlap.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::workload {

double overlapped_seconds(double comm_s, double gemm_s, int chunks, double slowdown) {
  if (chunks < 2) throw std::invalid_argument("tensor-parallel overlap needs at least 2 chunks");
  const double steps = chunks - 1;
  const double step = std::max(comm_s / steps, gemm_s * (1.0 + slowdown) / chunks);
  return steps * step + gemm_s / chunks;
}

}  // namespace trainsim::workload
