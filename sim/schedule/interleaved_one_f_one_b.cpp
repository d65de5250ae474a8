#include "schedule/interleaved_one_f_one_b.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::schedule {

Program InterleavedOneFOneB::program(const Shape& shape) const {
  const int p = shape.ranks, v = shape.virtual_stages(), m = shape.microbatches;
  if (shape.stages != p * v) throw std::invalid_argument("interleaved-1f1b needs pp x vp stages");
  if (m % p != 0) {
    throw std::invalid_argument("interleaved-1f1b needs the micro-batches per pipeline (" + std::to_string(m) +
                                ") to be a multiple of pp (" + std::to_string(p) +
                                "): change parallel.global_batch, microbatch_size or dp");
  }
  const int total = m * v;  // virtual micro-batch steps per rank
  // Step k of a rank: micro-batch group k / (p v), chunk (k mod p v) / p
  // (counted from the last chunk for backward steps), micro-batch
  // group * p + k mod p.
  auto microbatch = [&](int k) { return k / (p * v) * p + k % p; };
  auto chunk = [&](int k, bool forward) {
    const int c = k % (p * v) / p;
    return forward ? c : v - 1 - c;
  };
  Program out;
  out.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& actions = out.ranks[r];
    const int warmup = m == p ? total : std::min(total, 2 * (p - r - 1) + (v - 1) * p + shape.extra_warmup);
    auto forward = [&](int k) { actions.push_back({Op::kForward, chunk(k, true) * p + r, microbatch(k)}); };
    auto backward = [&](int k) { actions.push_back({Op::kBackward, chunk(k, false) * p + r, microbatch(k)}); };
    for (int k = 0; k < warmup; ++k) forward(k);
    for (int k = 0; k < total - warmup; ++k) {
      forward(warmup + k);
      backward(k);
    }
    for (int k = total - warmup; k < total; ++k) backward(k);
  }
  return out;
}

}  // namespace trainsim::schedule
