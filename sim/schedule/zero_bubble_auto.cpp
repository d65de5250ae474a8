#include "schedule/zero_bubble_auto.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

namespace trainsim::schedule {

namespace {

constexpr double kNotPlaced = std::numeric_limits<double>::infinity();

struct RankState {
  double free = 0.0;   // when the rank can start its next action
  double idle = 0.0;   // time it has waited so far
  int f = 0, i = 0, w = 0;
  bool last_forward = false;  // the last F or I placed was an F
  std::vector<double> f_end, i_end;  // per micro-batch, kNotPlaced until placed
};

}  // namespace

Program ZeroBubbleAuto::program(const Shape& shape) const {
  if (shape.stages != shape.ranks) {
    throw std::invalid_argument(name_ + " runs one stage per rank (parallel.vp = 1)");
  }
  const int p = shape.ranks, m = shape.microbatches;
  const int limit = std::max(1, factor_ * p);
  auto times = [&](int r) { return shape.times.empty() ? Shape::StageTimes{} : shape.times[r]; };
  std::vector<RankState> ranks(p);
  for (RankState& k : ranks) {
    k.f_end.assign(m, kNotPlaced);
    k.i_end.assign(m, kNotPlaced);
  }
  Program out;
  out.ranks.resize(p);
  // When the next F / I of rank r could start (kNotPlaced: its input is not placed yet).
  auto f_ready = [&](int r) {
    const RankState& k = ranks[r];
    if (k.f >= m) return kNotPlaced;
    if (r == 0) return 0.0;
    const double up = ranks[r - 1].f_end[k.f];
    return up == kNotPlaced ? kNotPlaced : up + times(r - 1).transfer;
  };
  auto i_ready = [&](int r) {
    const RankState& k = ranks[r];
    if (k.i >= m || k.i >= k.f) return kNotPlaced;
    double t = k.f_end[k.i];
    if (r + 1 < p) {
      const double down = ranks[r + 1].i_end[k.i];
      if (down == kNotPlaced) return kNotPlaced;
      t = std::max(t, down + times(r + 1).transfer);
    }
    return t;
  };
  // When rank r could start its next action. It reads ranks r - 1, r and
  // r + 1 only, so placing an action on a rank changes it for those three.
  auto earliest = [&](int r) {
    const RankState& k = ranks[r];
    const double fr = f_ready(r), ir = i_ready(r);
    const bool memory = k.f - k.w < limit;
    double at = kNotPlaced;
    if (ir != kNotPlaced) at = std::min(at, std::max(k.free, ir));
    if (fr != kNotPlaced && memory) at = std::min(at, std::max(k.free, fr));
    if (k.w < k.i) at = std::min(at, k.free);  // a W can always run
    return at;
  };
  std::vector<double> at(p);
  for (int r = 0; r < p; ++r) at[r] = earliest(r);
  int placed = 0;
  const int total = 3 * m * p;
  while (placed < total) {
    // The rank that can decide earliest: its next action's start is known
    // (the first such rank on a tie).
    int best = -1;
    double best_at = kNotPlaced;
    for (int r = 0; r < p; ++r) {
      if (at[r] < best_at) {
        best_at = at[r];
        best = r;
      }
    }
    if (best < 0) throw std::logic_error(name_ + ": no rank can move");
    const int r = best;
    RankState& k = ranks[r];
    const Shape::StageTimes t = times(r);
    const double fr = f_ready(r), ir = i_ready(r);
    const bool memory = k.f - k.w < limit;
    const double now = k.free;
    enum { kF, kI, kW, kNone } pick = kNone;
    const bool can_f = fr != kNotPlaced && fr <= now && memory;
    const bool can_i = ir != kNotPlaced && ir <= now;
    if (k.i == 0 && fr != kNotPlaced && memory && (ir == kNotPlaced || std::max(now, fr) + t.forward <= ir)) {
      pick = kF;  // warm-up: a forward that ends before the first I could start
    } else if (k.last_forward) {
      // After the warm-up, F and I take turns.
      pick = can_i ? kI : can_f ? kF : kNone;
    } else {
      pick = can_f ? kF : (!memory && k.w < k.i) ? kW : can_i ? kI : kNone;
    }
    if (pick == kNone && k.w < k.i) {
      // Waiting: fill the wait with a W if it is long enough, if this rank
      // would otherwise become the one that idled most, or if memory is full.
      double next = kNotPlaced;
      if (ir != kNotPlaced) next = std::min(next, ir);
      if (fr != kNotPlaced && memory) next = std::min(next, fr);
      const double gap = next == kNotPlaced ? kNotPlaced : next - now;
      double most_idle = 0.0;
      for (const RankState& o : ranks) most_idle = std::max(most_idle, o.idle);
      if (gap >= t.weight_grad || k.idle + gap > most_idle || !memory || k.f == m) pick = kW;
    }
    if (pick == kNone) {
      // Wait for whichever of I and F is ready first.
      pick = ir != kNotPlaced && (fr == kNotPlaced || !memory || ir <= fr) ? kI : kF;
    }
    double start = now, duration = 0.0;
    switch (pick) {
      case kF:
        start = std::max(now, fr);
        duration = t.forward;
        out.ranks[r].push_back({Op::kForward, r, k.f});
        k.f_end[k.f++] = start + duration;
        k.last_forward = true;
        break;
      case kI:
        start = std::max(now, ir);
        duration = t.input_grad;
        out.ranks[r].push_back({Op::kInputGrad, r, k.i});
        k.i_end[k.i++] = start + duration;
        k.last_forward = false;
        break;
      case kW:
      case kNone:
        duration = t.weight_grad;
        out.ranks[r].push_back({Op::kWeightGrad, r, k.w++});
        break;
    }
    k.idle += start - now;
    k.free = start + duration;
    ++placed;
    for (int n = std::max(0, r - 1); n <= std::min(p - 1, r + 1); ++n) at[n] = earliest(n);
  }
  return out;
}

}  // namespace trainsim::schedule
