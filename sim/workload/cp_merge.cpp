#include "workload/cp_merge.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::workload {

CpMergeTraffic pytorch_cp_merge_traffic(double out_values, double kv_values, int cp) {
  if (cp < 2) throw std::invalid_argument("pytorch_cp_merge_traffic: cp must be at least 2");
  const double o = out_values, kv = kv_values, later = cp - 1.0;
  CpMergeTraffic m;
  // Forward, bytes a value (BF16 2, FP32 4):
  // - every block's output cast to FP32 (read 2, write 4): 6 o, and the
  //   result back to BF16 at the end: 6 o;
  // - each later block merged: out - block (read 4 + 4, write 4), times the
  //   sigmoid of the log-sum-exp gap (read 4, write 4; the lse is 1/head_dim
  //   of the output and left out), subtracted from out (read 4 + 4, write 4):
  //   32 o;
  // - K and V concatenated for the rotater before every block but the last
  //   (read 2, write 2): 4 kv.
  m.forward_bytes = 12.0 * o + later * (38.0 * o + 4.0 * kv);
  // Casts and merge: about 10 kernels a later block (out and lse to FP32,
  // the lse gap, sigmoid, sub, mul, sub, the new lse's three) and the
  // concatenation; 5 around them.
  m.kernels = 11 * (cp - 1) + 5;
  // Backward, on the last rank:
  // - FP32 dQ, dK, dV zeroed (write 4): 4 o + 4 kv;
  // - K and V concatenated before every block but the last: 4 kv each;
  // - first block: dK, dV += its BF16 gradients (read 4 + 2, write 4): 10 kv;
  // - each later block: half of the arriving dK, dV += (5 kv), then the two
  //   halves joined again (read 4, write 4): 13 kv;
  // - every block: dK and dV concatenated to send (read 4, write 4): 8 kv,
  //   and dQ += its gradient: 10 o;
  // - at the end dQ and the last dK, dV arrived cast to BF16: 6 o + 6 kv.
  const double last_rank = (10.0 + 10.0 * cp) * o + (3.0 + 25.0 * cp) * kv;
  // On the first: each later block takes half its queries, so dK, dV += whole
  // (10 kv) and half of dQ += then its halves joined (5 o + 8 o = 13 o):
  // 4 o + 10 o + 13 o (cp - 1) + 6 o and 4 kv + 4 kv (cp - 1) + 10 kv +
  // 10 kv (cp - 1) + 8 kv cp + 6 kv.
  const double first_rank = (7.0 + 13.0 * cp) * o + (6.0 + 22.0 * cp) * kv;
  m.backward_bytes = std::max(last_rank, first_rank);
  return m;
}

double pytorch_cp_transient_bytes(double out_values, double kv_values, int cp, CpAlgorithm algorithm) {
  if (cp < 2) return 0.0;
  const double o = out_values, kv = kv_values;
  const double keys = (algorithm == CpAlgorithm::kAllGather ? cp : 2.0) * 2.0 * kv;
  const double forward = keys + 2.0 * kv + 18.0 * o;
  const double backward = keys + 2.0 * kv + (4.0 * o + 4.0 * kv) + (2.0 * o + 2.0 * kv) + 8.0 * kv;
  return std::max(forward, backward);
}

double pytorch_cp_exposed_seconds(CpAlgorithm algorithm, bool forward, int cp, const CpExchangeTimes& t) {
  if (cp < 2) return 0.0;
  const double block = t.attention_s / cp;
  auto over = [block](double comm) { return std::max(0.0, comm - block); };
  switch (algorithm) {
    case CpAlgorithm::kAllGather:
      // The gather runs beside the first block and is awaited by the second.
      // Backward the keys are gathered again, and the dK/dV sent after block
      // i are awaited after block i + 1: hidden but for the last.
      if (forward) return over(t.gather_s);
      return over(t.gather_s) + (cp - 1) * over(t.grad_step_s) + t.grad_step_s;
    case CpAlgorithm::kRing:
      // Each block's K/V step runs beside the block before it (cp - 1 steps).
      // Backward, on the one stream, the step of K/V and the previous block's
      // dK/dV share each block after the first; the last dK/dV waits alone.
      if (forward) return (cp - 1) * over(t.kv_step_s);
      return over(t.kv_step_s) + (cp - 2) * over(t.kv_step_s + t.grad_step_s) + over(t.grad_step_s) +
             t.grad_step_s;
    case CpAlgorithm::kAllToAll:
      break;
  }
  throw std::invalid_argument("pytorch_cp_exposed_seconds: PyTorch's context parallelism has no all-to-all method");
}

}  // namespace trainsim::workload
