#include "report/ep_slices.hpp"

#include <algorithm>
#include <utility>

#include "lower/a2a_pairs.hpp"

namespace trainsim::report {

namespace {

using schedule::Action;
using schedule::Op;
using Chunks = workload::StageCost::EpChunks;

// An exchange at [from, to) of the model's time of an action or a pair.
struct Window {
  double from = 0.0, to = 0.0;
  bool dispatch = true;
  bool of_second = false;  // the pair's second action's
  int layer = 0;
};

// The pieces an action ran as (a last backward is cut by gradient bucket), in order.
using Spans = std::vector<std::pair<core::Time, core::Time>>;

// Model time x of `total` laid onto the spans' actual time.
core::Time place(double x, double total, const Spans& spans) {
  std::int64_t actual = 0;
  for (const auto& [s, e] : spans) actual += (e - s).ps();
  auto target = static_cast<std::int64_t>(static_cast<double>(actual) * std::clamp(x / total, 0.0, 1.0));
  for (const auto& [s, e] : spans) {
    const std::int64_t length = (e - s).ps();
    if (target <= length) return s + core::Time::ps(target);
    target -= length;
  }
  return spans.back().second;
}

// One action alone: its MoE layers in pass order.
std::vector<Window> alone(const Action& a, const lower::Simulation::EpStage& st, double& total) {
  std::vector<Window> out;
  const int L = std::max(st.moe_layers, 1);
  const bool forward = a.op == Op::kForward;
  Chunks c = forward ? st.forward : st.backward;
  if (a.op == Op::kInputGrad) {
    // I carries the exchanges; its compute is its own share of the backward's.
    const double compute = c.mlp + c.rest;
    const double left = std::max(0.0, st.input_grad_s - c.dispatch - c.combine);
    if (compute > 0.0) {
      c.mlp *= left / compute;
      c.rest *= left / compute;
    }
  }
  double t = 0.0;
  auto compute = [&](double s) { t += s / L; };
  auto exchange = [&](double s, bool dispatch, int l) {
    out.push_back({t, t + s / L, dispatch, false, l});
    t += s / L;
  };
  for (int l = 0; l < L; ++l) {
    if (forward) {
      compute(c.rest);
      exchange(c.dispatch, true, l);
      compute(c.mlp);
      exchange(c.combine, false, l);
    } else {
      exchange(c.combine, false, l);
      compute(c.mlp);
      exchange(c.dispatch, true, l);
      compute(c.rest);
    }
  }
  total = t;
  return out;
}

// A forward and a backward run as one step (first = the one issued first).
std::vector<Window> paired(bool forward_first, const lower::Simulation::EpStage& f_stage,
                           const lower::Simulation::EpStage& b_stage, double slowdown, double& total) {
  std::vector<Window> out;
  const int L = std::max({f_stage.moe_layers, b_stage.moe_layers, 1});
  const Chunks& f = f_stage.forward;
  const Chunks& b = b_stage.backward;
  double t = 0.0;
  // The slot of a compute and an exchange beside it: the longer of the two,
  // plus the compute slowed while both run.
  // Round l runs layer l of each side, or with fewer MoE layers on one side
  // its layer l x layers / L (one of its layers' exchanges then split over rounds).
  auto slot = [&](double compute, double exchange, bool dispatch, bool of_forward, int l) {
    compute /= L;
    exchange /= L;
    const int layers = std::max(of_forward ? f_stage.moe_layers : b_stage.moe_layers, 1);
    out.push_back({t, t + exchange, dispatch, of_forward != forward_first, l * layers / L});
    t += std::max(compute, exchange) + slowdown * std::min(compute, exchange);
  };
  for (int l = 0; l < L; ++l) {
    slot(f.rest, b.combine, false, false, l);
    slot(b.mlp, f.dispatch, true, true, l);
    slot(f.mlp, b.dispatch, true, false, l);
    slot(b.rest, f.combine, false, true, l);
  }
  total = t;
  return out;
}

}  // namespace

std::vector<EpSlice> ep_slices(const lower::Simulation& sim) {
  std::vector<EpSlice> out;
  if (sim.ep_stages.empty()) return out;
  // Each simulated GPU's compute actions in issue order, with their pieces.
  const int gpus = static_cast<int>(sim.gpu_of_rank.size());
  std::vector<std::vector<Action>> actions(gpus);
  std::vector<std::vector<Spans>> spans(gpus);
  // Per action: whether its exchanges are tasks of their own (flow
  // collectives lower an unpaired pass's so), which the trace shows as they are.
  std::vector<std::vector<char>> as_tasks(gpus);
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    auto& acts = actions[ti.rank];
    if (ti.kind == lower::TaskKind::kEpExchange && !acts.empty() && acts.back() == ti.action) {
      as_tasks[ti.rank].back() = 1;  // made between its action's pieces, after the first
    }
    if (ti.kind != lower::TaskKind::kCompute) continue;
    if (acts.empty() || !(acts.back() == ti.action)) {
      acts.push_back(ti.action);
      spans[ti.rank].emplace_back();
      as_tasks[ti.rank].push_back(0);
    }
    spans[ti.rank].back().emplace_back(sim.timeline.start[id], sim.timeline.end[id]);
  }
  for (int q = 0; q < gpus; ++q) {
    const std::vector<Action>& acts = actions[q];
    const std::vector<int> partner =
        sim.a2a_overlap ? lower::a2a_partners(acts) : std::vector<int>(acts.size(), -1);
    for (std::size_t i = 0; i < acts.size(); ++i) {
      const Action& a = acts[i];
      if (a.op == Op::kWeightGrad || (partner[i] >= 0 && static_cast<std::size_t>(partner[i]) < i)) continue;
      if (as_tasks[q][i]) continue;
      double total = 0.0;
      std::vector<Window> windows;
      Spans where = spans[q][i];
      const Action* second = nullptr;
      if (partner[i] >= 0) {
        const auto j = static_cast<std::size_t>(partner[i]);
        second = &acts[j];
        const bool forward_first = a.op == Op::kForward;
        const Action& f = forward_first ? a : acts[j];
        const Action& b = forward_first ? acts[j] : a;
        windows = paired(forward_first, sim.ep_stages[f.stage], sim.ep_stages[b.stage], sim.a2a_slowdown, total);
        where.insert(where.end(), spans[q][j].begin(), spans[q][j].end());
      } else {
        windows = alone(a, sim.ep_stages[a.stage], total);
      }
      if (total <= 0.0) continue;
      for (const Window& w : windows) {
        if (w.to <= w.from) continue;  // a stage without MoE layers moves nothing
        out.push_back({q, place(w.from, total, where), place(w.to, total, where), w.of_second ? *second : a,
                       w.dispatch, w.layer, second != nullptr});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const EpSlice& x, const EpSlice& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.start < y.start;
  });
  return out;
}

}  // namespace trainsim::report
