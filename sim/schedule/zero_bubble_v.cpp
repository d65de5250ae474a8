#include "schedule/zero_bubble_v.hpp"

#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::schedule {

namespace {

constexpr double kUnknown = std::numeric_limits<double>::infinity();

struct Stage {
  int f = 0, i = 0;                  // next F, next I (micro-batch order)
  std::vector<double> f_end, i_end;  // per micro-batch, kUnknown until placed
};

struct Rank {
  double free = 0.0;                      // when it can start its next action
  int in_flight = 0;                      // chunk activations held: F done, W not
  int reserved = 0;                       // down F's whose up F is still to come
  std::deque<std::pair<int, int>> owed;   // (stage, micro-batch) of I's done, W not
};

}  // namespace

Program ZeroBubbleV::program(const Shape& shape) const {
  const int p = shape.ranks, m = shape.microbatches;
  if (shape.stages != 2 * p) {
    throw std::invalid_argument("zb-v runs two stages per rank in a V (parallel.vp = 2), got vp = " +
                                std::to_string(shape.virtual_stages()));
  }
  for (int s = 0; s < shape.stages; ++s) {
    if (shape.stage_rank[s] != rank_of_stage(Placement::kVShape, s, p)) {
      throw std::invalid_argument("zb-v places stage " + std::to_string(s) + " on rank " +
                                  std::to_string(rank_of_stage(Placement::kVShape, s, p)) +
                                  " (a V), the shape on rank " + std::to_string(shape.stage_rank[s]));
    }
  }
  const int S = 2 * p;
  const int limit = 2 * p;  // chunk activations per rank: 1F1B's p micro-batches of two chunks
  auto times = [&](int s) { return shape.times.empty() ? Shape::StageTimes{} : shape.times[s]; };
  // The transfer from stage a to its neighbour b: free when they share a rank.
  auto transfer = [&](int a, int b) { return shape.stage_rank[a] == shape.stage_rank[b] ? 0.0 : times(a).transfer; };
  std::vector<Stage> stages(S);
  for (Stage& st : stages) {
    st.f_end.assign(m, kUnknown);
    st.i_end.assign(m, kUnknown);
  }
  std::vector<Rank> ranks(p);
  auto up = [&](int s) { return s >= p; };  // the chunk that runs back up the ranks

  // When the next F / I of stage s could start (kUnknown: not yet known).
  auto f_ready = [&](int s) {
    const Stage& st = stages[s];
    if (st.f >= m) return kUnknown;
    if (s == 0) return 0.0;
    const double before = stages[s - 1].f_end[st.f];
    return before == kUnknown ? kUnknown : before + transfer(s - 1, s);
  };
  auto i_ready = [&](int s) {
    const Stage& st = stages[s];
    if (st.i >= m || st.i >= st.f) return kUnknown;
    double t = st.f_end[st.i];
    if (s + 1 < S) {
      const double after = stages[s + 1].i_end[st.i];
      if (after == kUnknown) return kUnknown;
      t = std::max(t, after + transfer(s + 1, s));
    }
    return t;
  };
  // Every F needs a free slot; a down F may not take one promised to the up
  // F of a micro-batch already started down (see the header: no deadlock).
  auto f_fits = [&](int s) {
    const Rank& k = ranks[shape.stage_rank[s]];
    return k.in_flight + 1 + (up(s) ? 0 : k.reserved) <= limit;
  };

  struct Choice {
    Op op = Op::kWeightGrad;
    int stage = -1;
    double start = kUnknown;
  };
  // Rank r's next action if it decides now: a ready I, else a ready F (up
  // chunk first), else a W it owes, else whichever I or F can start first.
  auto choose = [&](int r) {
    const Rank& k = ranks[r];
    const int mine[2] = {S - 1 - r, r};  // up chunk first
    Choice ready_i, ready_f, first;
    for (int s : mine) {
      const double ir = i_ready(s);
      if (ir != kUnknown) {
        const double at = std::max(k.free, ir);
        if (at <= k.free && ready_i.stage < 0) ready_i = {Op::kInputGrad, s, at};
        if (at < first.start) first = {Op::kInputGrad, s, at};
      }
    }
    for (int s : mine) {
      const double fr = f_ready(s);
      if (fr != kUnknown && f_fits(s)) {
        const double at = std::max(k.free, fr);
        if (at <= k.free && ready_f.stage < 0) ready_f = {Op::kForward, s, at};
        if (at < first.start) first = {Op::kForward, s, at};
      }
    }
    if (ready_i.stage >= 0) return ready_i;
    if (ready_f.stage >= 0) return ready_f;
    if (!k.owed.empty()) return Choice{Op::kWeightGrad, k.owed.front().first, k.free};
    return first;
  };

  Program out;
  out.ranks.resize(p);
  const long long total = 3LL * S * m;
  for (long long placed = 0; placed < total; ++placed) {
    // The rank whose next action starts earliest decides first.
    int r = -1;
    Choice c;
    for (int q = 0; q < p; ++q) {
      const Choice x = choose(q);
      if (x.stage >= 0 && x.start < c.start) {
        c = x;
        r = q;
      }
    }
    if (r < 0) throw std::logic_error("zb-v: no rank can move");
    Rank& k = ranks[r];
    Stage& st = stages[c.stage];
    const Shape::StageTimes t = times(c.stage);
    switch (c.op) {
      case Op::kForward:
        out.ranks[r].push_back({Op::kForward, c.stage, st.f});
        st.f_end[st.f++] = c.start + t.forward;
        ++k.in_flight;
        k.reserved += up(c.stage) ? -1 : 1;
        k.free = c.start + t.forward;
        break;
      case Op::kInputGrad:
        out.ranks[r].push_back({Op::kInputGrad, c.stage, st.i});
        k.owed.emplace_back(c.stage, st.i);
        st.i_end[st.i++] = c.start + t.input_grad;
        k.free = c.start + t.input_grad;
        break;
      default: {
        const auto [s, mb] = k.owed.front();
        k.owed.pop_front();
        out.ranks[r].push_back({Op::kWeightGrad, s, mb});
        --k.in_flight;
        k.free = c.start + times(s).weight_grad;
        break;
      }
    }
  }
  return out;
}

}  // namespace trainsim::schedule
