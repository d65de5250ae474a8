// A MoE model end to end: dispatch and combine on the compute stream, and
// options.moe_a2a_overlap's pairs of a forward and a backward.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>
#include <utility>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "lower/a2a_pairs.hpp"
#include "report/ep_slices.hpp"
#include "workload/tp_overlap.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_moe_test {

using namespace trainsim;
using nlohmann::json;

namespace {
// A small Mixtral-like model on one DGX H100: its 8 experts over ep 8, data
// parallelism over the 8 GPUs, no pipeline; 4 micro-batches a GPU, one
// gradient bucket (so the last backward is one task).
config::Scenario scenario(bool overlap) {
  json doc = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
    "parallel": {"dp": 8, "ep": 8, "microbatch_size": 1, "global_batch": 32, "grad_bucket_mib": 1000000},
    "options": {}
  })");
  doc["options"]["moe_a2a_overlap"] = overlap;
  return config::load_document(doc, "test.json", ".", {});
}

// Each compute task's time on GPU 0.
std::vector<double> compute_times(const driver::WhatIf& w) {
  std::vector<double> out;
  for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
    const lower::TaskInfo& ti = w.sim->info[id];
    if (ti.kind != lower::TaskKind::kCompute || ti.rank != 0) continue;
    out.push_back((w.sim->timeline.end[id] - w.sim->timeline.start[id]).to_seconds());
  }
  return out;
}
}  // namespace

TEST_CASE("1F1B A2A overlap: each forward beside the backward before it hides both exchanges") {
  const driver::WhatIf plain = driver::simulate(scenario(false));
  const driver::WhatIf paired = driver::simulate(scenario(true));
  const workload::StageCost& c = plain.costs->stages[0];
  // One stage: F0 B0 F1 B1 F2 B2 F3 B3 without overlap, each action carrying
  // its own exchanges: F = f + e_f, B = b + e_b.
  const double e_f = c.ep_comm_forward.to_seconds(), e_b = c.ep_comm_backward.to_seconds();
  const double f = c.forward.to_seconds() - e_f, b = c.backward().to_seconds() - e_b;
  REQUIRE(e_f > 0.0);
  REQUIRE(e_b > 0.0);
  const std::vector<double> before = compute_times(plain), after = compute_times(paired);
  REQUIRE(before.size() == 8);
  REQUIRE(after.size() == 8);
  CHECK(before[0] == doctest::Approx(f + e_f).epsilon(1e-9));
  CHECK(before[1] == doctest::Approx(b + e_b).epsilon(1e-9));
  // The stage's chunks add up to its passes, its exchanges to its ep time.
  const auto& fc = c.ep_forward_chunks;
  const auto& bc = c.ep_backward_chunks;
  CHECK(fc.rest + fc.dispatch + fc.mlp + fc.combine == doctest::Approx(f + e_f).epsilon(1e-9));
  CHECK(bc.rest + bc.dispatch + bc.mlp + bc.combine == doctest::Approx(b + e_b).epsilon(1e-9));
  CHECK(fc.dispatch + fc.combine == doctest::Approx(e_f).epsilon(1e-9));
  CHECK(bc.dispatch + bc.combine == doctest::Approx(e_b).epsilon(1e-9));
  // With it, as Megatron-Core runs one stage (combined_1f1b.py,
  // combined_1f1b_schedule_for_no_pipelining): F0 alone, then (F1, B0),
  // (F2, B1), (F3, B2) as pairs, then B3 alone. A pair: four slots, each the longer of a compute chunk and the other
  // pass's exchange, plus s x the shorter; B takes (b + e_b) / (f + e_f + b +
  // e_b) of it, F the rest.
  const double s = workload::kOverlapComputeSlowdown;
  auto slot = [&](double compute, double exchange) {
    return std::max(compute, exchange) + s * std::min(compute, exchange);
  };
  const double pair = slot(fc.rest, bc.combine) + slot(bc.mlp, fc.dispatch) + slot(fc.mlp, bc.dispatch) +
                      slot(bc.rest, fc.combine);
  const double b_share = (b + e_b) / (f + e_f + b + e_b);
  CHECK(pair < f + e_f + b + e_b);  // the exchanges hide
  CHECK(after[0] == doctest::Approx(f + e_f).epsilon(1e-9));
  for (int k : {1, 3, 5}) CHECK(after[k] == doctest::Approx((1 - b_share) * pair).epsilon(1e-9));
  for (int k : {2, 4, 6}) CHECK(after[k] == doctest::Approx(b_share * pair).epsilon(1e-9));
  CHECK(after[7] == doctest::Approx(b + e_b).epsilon(1e-9));
  // options.comm_slowdown is the slots' s (Overlap::compute_slowdown): at 0.5
  // each slot adds half its shorter part.
  config::Scenario slower = scenario(true);
  slower.plan.overlap.compute_slowdown = 0.5;
  const std::vector<double> at_half = compute_times(driver::simulate(slower));
  auto slot_half = [](double compute, double exchange) {
    return std::max(compute, exchange) + 0.5 * std::min(compute, exchange);
  };
  const double pair_half = slot_half(fc.rest, bc.combine) + slot_half(bc.mlp, fc.dispatch) +
                           slot_half(fc.mlp, bc.dispatch) + slot_half(bc.rest, fc.combine);
  REQUIRE(at_half.size() == 8);
  CHECK(at_half[1] == doctest::Approx((1 - b_share) * pair_half).epsilon(1e-9));
  CHECK(at_half[2] == doctest::Approx(b_share * pair_half).epsilon(1e-9));
  CHECK(pair_half > pair);
  // The summary's exposed ep time: four exchanges of each kind without, the
  // two unpaired actions' with.
  const report::Summary sb = driver::summarize(scenario(false), plain, "test.json");
  const report::Summary sa = driver::summarize(scenario(true), paired, "test.json");
  CHECK(sb.exposed.ep == doctest::Approx(4 * (e_f + e_b)).epsilon(1e-9));
  // Here each exchange is shorter than the compute beside it: only the
  // unpaired F0's and B3's stay exposed.
  CHECK(sa.exposed.ep == doctest::Approx(e_f + e_b).epsilon(1e-9));
  CHECK(sa.iteration_time_s < sb.iteration_time_s);
}

TEST_CASE("a sweep's shared programs keep the A2A overlap's apart from the plain schedule's") {
  // The same plan with and without the overlap through one cache: one
  // stage, so 1F1B runs F0 B0 F1 ... plain and F0 F1 B0 ... paired.
  driver::PlanCache cache;
  driver::Controls controls;
  controls.cache = &cache;
  const driver::Prepared plain = driver::prepare(scenario(false), controls);
  const driver::Prepared paired = driver::prepare(scenario(true), controls);
  REQUIRE(plain.checked->program.ranks.size() == 1);
  CHECK(plain.checked != paired.checked);
  CHECK(plain.checked->digest != paired.checked->digest);
  auto second_compute = [](const schedule::Program& p) {
    int seen = 0;
    for (const schedule::Action& a : p.ranks[0]) {
      if (schedule::is_compute(a.op) && ++seen == 2) return a;
    }
    return schedule::Action{};
  };
  CHECK(second_compute(plain.checked->program) == schedule::Action{schedule::Op::kBackward, 0, 0});
  CHECK(second_compute(paired.checked->program) == schedule::Action{schedule::Op::kForward, 0, 1});
  // Asked again, each takes its own entry.
  CHECK(driver::prepare(scenario(true), controls).checked == paired.checked);
}

TEST_CASE("A2A overlap over a pipeline: one more warm-up forward, and each pair starts once both inputs are in") {
  // The small MoE over pp 2 with 2 virtual stages (each rank 4 GPUs, dp 4,
  // ep 4), interleaved 1F1B, 4 micro-batches: 8 forward steps a rank.
  json doc = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
    "parallel": {"pp": 2, "vp": 2, "dp": 4, "ep": 4, "microbatch_size": 1, "global_batch": 16,
                 "schedule": "interleaved-1f1b"},
    "options": {"moe_a2a_overlap": true}
  })");
  const driver::WhatIf w = driver::simulate(config::load_document(doc, "test.json", ".", {}));
  using schedule::Op;
  // Megatron-Core's warm-up, 2 (p - r - 1) + (v - 1) p forwards, one more
  // under the overlap (5 on rank 0, 3 on rank 1), then the first steady
  // step's forward before the first backward: 6 and 4 (5 and 3 without).
  for (int r : {0, 1}) {
    int warmup = 0;
    for (const schedule::Action& a : w.program->ranks[static_cast<std::size_t>(r)]) {
      if (a.op == Op::kBackward) break;
      warmup += a.op == Op::kForward ? 1 : 0;
    }
    CHECK(warmup == (r == 0 ? 6 : 4));
  }
  // When an action's first compute task starts and its last one ends, and
  // when its input (the transfer a stage on the other rank sent it) has come.
  auto span = [&](const schedule::Action& a) {
    std::pair<core::Time, core::Time> t{core::Time::max(), core::Time::zero()};
    for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
      const lower::TaskInfo& ti = w.sim->info[id];
      if (ti.kind != lower::TaskKind::kCompute || !(ti.action == a)) continue;
      t.first = std::min(t.first, w.sim->timeline.start[id]);
      t.second = std::max(t.second, w.sim->timeline.end[id]);
    }
    return t;
  };
  auto first_start = [&](const schedule::Action& a) { return span(a).first; };
  auto input_arrival = [&](const schedule::Action& a) {
    const schedule::Action send = a.op == Op::kForward ? schedule::Action{Op::kSendF, a.stage - 1, a.microbatch}
                                                       : schedule::Action{Op::kSendB, a.stage + 1, a.microbatch};
    core::Time t = core::Time::zero();
    for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
      const lower::TaskInfo& ti = w.sim->info[id];
      if (ti.kind == lower::TaskKind::kTransfer && ti.action == send) t = std::max(t, w.sim->timeline.end[id]);
    }
    return t;
  };
  // Every pair's first pass starts no earlier than the other's input has
  // come; in some pair that is what it waited for (it starts right then).
  int pairs = 0, held = 0;
  for (int r : {0, 1}) {
    const auto& actions = w.program->ranks[static_cast<std::size_t>(r)];
    const std::vector<int> partner = lower::a2a_partners(actions);
    for (std::size_t k = 0; k < actions.size(); ++k) {
      if (partner[k] <= static_cast<int>(k)) continue;
      const schedule::Action& later = actions[static_cast<std::size_t>(partner[k])];
      const bool sent = later.op == Op::kForward ? later.stage > 0 : later.stage < 3;  // 4 stages
      if (!sent) continue;
      CAPTURE(r);
      CAPTURE(k);
      ++pairs;
      CHECK(first_start(actions[k]) >= input_arrival(later));
      held += first_start(actions[k]) == input_arrival(later) ? 1 : 0;
    }
  }
  CHECK(pairs > 0);
  CHECK(held > 0);
  // And the first pass's output leaves once the second has run: each
  // transfer of a pair's first action starts no earlier than the second
  // action's last compute task ends.
  auto last_end = [&](const schedule::Action& a) { return span(a).second; };
  int sends = 0;
  for (int r : {0, 1}) {
    const auto& actions = w.program->ranks[static_cast<std::size_t>(r)];
    const std::vector<int> partner = lower::a2a_partners(actions);
    for (std::size_t k = 0; k < actions.size(); ++k) {
      if (partner[k] <= static_cast<int>(k)) continue;
      const schedule::Action& a = actions[k];
      const schedule::Action send{a.op == Op::kForward ? Op::kSendF : Op::kSendB, a.stage, a.microbatch};
      for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
        const lower::TaskInfo& ti = w.sim->info[id];
        if (ti.kind != lower::TaskKind::kTransfer || !(ti.action == send)) continue;
        ++sends;
        CHECK(w.sim->timeline.start[id] >= last_end(actions[static_cast<std::size_t>(partner[k])]));
      }
    }
  }
  CHECK(sends > 0);
}

namespace {
// The small MoE on one DGX H100 with one gradient bucket and the overrides:
// The small MoE on one DGX H100 (dp 8, ep 4: two groups of 4 GPUs), 4
// micro-batches a GPU, one gradient bucket; with the overrides.
config::Scenario one_bucket(const std::vector<std::string>& overrides) {
  const json doc = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
    "parallel": {"dp": 8, "ep": 4, "microbatch_size": 1, "global_batch": 32, "grad_bucket_mib": 1000000}
  })");
  return config::load_document(doc, "test.json", ".", overrides);
}
// 8 layers, the first 3 dense, on 2 nodes under ZeRO-3: pp 2 (layers 0-3,
// dense 0-2 and MoE 3, then MoE 4-7), dp 8, ep 4; 4 micro-batches a pipeline.
json zero3_with_dense_layers() {
  return json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "model": {"arch": "llama", "layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "ffn": 8192, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096, "dense_layers": 3}},
    "parallel": {"pp": 2, "dp": 8, "ep": 4, "microbatch_size": 1, "global_batch": 32, "zero_stage": 3}
  })");
}
// A config's what-if, with the summary `trainsim run` prints of it.
std::pair<driver::WhatIf, report::Summary> whatif_of(const json& doc, const std::vector<std::string>& overrides) {
  const config::Scenario sc = config::load_document(doc, "test.json", ".", overrides);
  driver::WhatIf w = driver::simulate(sc);
  const report::Summary summary = driver::summarize(sc, w, "test.json");
  return {std::move(w), summary};
}
// GPU 0's first `count` collectives that `pick` picks, in the order built:
// each one's unit, whether it is the experts' part, its bytes and members.
struct UnitCollective {
  int unit;
  bool experts;
  double bytes;
  int members;
};
template <class Pick>
std::vector<UnitCollective> gpu0_collectives(const lower::Simulation& sim, std::size_t count, Pick pick) {
  std::vector<UnitCollective> out;
  for (core::TaskId id = 0; id < sim.graph.size() && out.size() < count; ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.rank != 0 || !pick(ti)) continue;
    const auto d = sim.collectives->describe(sim.graph.task(id));
    out.push_back({ti.unit, ti.experts, d.bytes, d.members});
  }
  return out;
}
// GPU 0's bucket reductions in order (each one collective task).
struct Reduction {
  bool experts;
  double bytes;
  int members;
  double seconds;
};
std::pair<workload::StageCost, std::vector<Reduction>> reductions(const std::vector<std::string>& overrides) {
  const driver::WhatIf w = driver::simulate(one_bucket(overrides));
  std::vector<Reduction> out;
  for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
    const lower::TaskInfo& ti = w.sim->info[id];
    if (ti.kind != lower::TaskKind::kGradReduce || ti.rank != 0) continue;
    const auto d = w.sim->collectives->describe(w.sim->graph.task(id));
    out.push_back({ti.experts, d.bytes, d.members, (w.sim->timeline.end[id] - w.sim->timeline.start[id]).to_seconds()});
  }
  return {w.costs->stages[0], out};
}
}  // namespace

TEST_CASE("a MoE stage reduces its dense gradients over dp and its experts' over the expert-data-parallel group") {
  // dp 8, ep 4: each GPU holds 2 of the 8 experts, and the 8 / 4 = 2 GPUs
  // holding the same ones (edp 2) reduce their gradients. A GPU's experts:
  // 4 layers x 2 experts x 3 x 2048 x 4096 (SwiGLU) = 201,326,592 parameters.
  for (const char* collectives : {"analytic", "flow"}) {
    CAPTURE(collectives);
    const auto [c, r] = reductions({std::string("options.collectives=") + collectives});
    CHECK(c.expert_params == 201326592.0);
    const double share = c.expert_params / c.params;
    // The bucket runs as two collectives, one after the other: the dense
    // share over the 8 GPUs, then the experts' over their 2.
    REQUIRE(r.size() == 2);
    CHECK_FALSE(r[0].experts);
    CHECK(r[0].members == 8);
    CHECK(r[0].bytes == doctest::Approx(c.grad_bytes * (1.0 - share)));
    CHECK(r[1].experts);
    CHECK(r[1].members == 2);
    CHECK(r[1].bytes == doctest::Approx(c.grad_bytes * share));
    CHECK(r[1].seconds > 0.0);
    if (std::string(collectives) == "analytic") {
      // Their times split the stage's: the experts' part and the rest.
      REQUIRE(c.grad_bucket_reduce_experts.size() == 1);
      CHECK(r[1].seconds == doctest::Approx(c.grad_bucket_reduce_experts[0].to_seconds()));
      CHECK(r[0].seconds + r[1].seconds == doctest::Approx(c.grad_reduce().to_seconds()));
    }
  }
  // tp 8 and dp 1: no dense replica, but each expert is on 8 / 4 = 2 GPUs,
  // whose gradients are reduced all the same (as flows too), and every GPU
  // simulated gives what the one standing for them does.
  const std::vector<std::string> tp8 = {"parallel.tp=8", "parallel.dp=1", "parallel.sequence_parallel=true",
                                        "options.collectives=flow"};
  const auto [c, r] = reductions(tp8);
  REQUIRE(r.size() == 1);
  CHECK(r[0].experts);
  CHECK(r[0].members == 2);
  CHECK(r[0].bytes == doctest::Approx(c.grad_bytes * c.expert_share()));
  CHECK(r[0].seconds > 0.0);
  std::vector<std::string> full = tp8;
  full.push_back("options.fidelity=full");
  const auto [c_full, r_full] = reductions(full);
  REQUIRE(r_full.size() == 1);
  CHECK(r_full[0].seconds == doctest::Approx(r[0].seconds).epsilon(0.01));
}

TEST_CASE("with flow collectives each MoE layer's dispatch and combine run as collectives of their own") {
  auto run = [](const char* collectives) {
    const config::Scenario sc = one_bucket({std::string("options.collectives=") + collectives});
    driver::WhatIf w = driver::simulate(sc);
    const report::Summary summary = driver::summarize(sc, w, "test.json");
    return std::make_pair(std::move(w), summary);
  };
  const auto [flows, flow_summary] = run("flow");
  const auto [analytic, analytic_summary] = run("analytic");
  const lower::Simulation& sim = *flows.sim;
  // GPU 0's exchanges: each of 4 layers dispatches and combines once in each
  // forward and each backward, 16 a micro-batch, 64 in all; each an
  // all-to-all over its 4 GPUs of the copies it sends: 4096 tokens x top_k 2
  // x hidden 2048 x 2 bytes = 33,554,432 bytes.
  int exchanges = 0;
  double exchange_s = 0.0;
  std::vector<std::pair<core::Time, core::Time>> busy;  // GPU 0's compute and exchanges
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.rank != 0) continue;
    if (ti.kind == lower::TaskKind::kEpExchange) {
      ++exchanges;
      const auto d = sim.collectives->describe(sim.graph.task(id));
      CHECK(d.kind == hw::CollectiveKind::kAllToAll);
      CHECK(d.members == 4);
      CHECK(d.bytes == 33554432.0);
      exchange_s += (sim.timeline.end[id] - sim.timeline.start[id]).to_seconds();
    }
    if (ti.kind == lower::TaskKind::kEpExchange || ti.kind == lower::TaskKind::kCompute) {
      busy.emplace_back(sim.timeline.start[id], sim.timeline.end[id]);
    }
  }
  CHECK(exchanges == 64);
  // They block the compute stream: nothing of GPU 0's overlaps.
  std::sort(busy.begin(), busy.end());
  for (std::size_t i = 1; i < busy.size(); ++i) CHECK(busy[i].first >= busy[i - 1].second);
  // No compute task carries them inside; the summary's ep time is theirs.
  CHECK(flow_summary.exposed.ep == doctest::Approx(exchange_s).epsilon(1e-9));
  // Inside one node, with nothing else on NVLink at the time but the
  // gradient reduction, flows take about the analytic model's time.
  CHECK(flow_summary.exposed.ep == doctest::Approx(analytic_summary.exposed.ep).epsilon(0.1));
  CHECK(flow_summary.iteration_time_s == doctest::Approx(analytic_summary.iteration_time_s).epsilon(0.03));
  // Analytic collectives keep them inside the compute: no such task, and
  // the trace lays them out inside the compute slices instead; as flows it
  // shows the tasks alone, not both.
  for (core::TaskId id = 0; id < analytic.sim->graph.size(); ++id) {
    CHECK(analytic.sim->info[id].kind != lower::TaskKind::kEpExchange);
  }
  CHECK(report::ep_slices(*analytic.sim).size() == 64u);  // GPU 0, standing for the 8
  CHECK(report::ep_slices(sim).empty());
  // Two nodes, tp 2 (sequence parallel), pp 2, dp 4, ep 8 (and ep 4 x etp
  // 2): every GPU simulated, each group's members meeting in one
  // collective, gives what one pipeline standing for the rest does.
  for (const char* layout : {"parallel.ep=8", "parallel.etp=2"}) {
    CAPTURE(layout);
    auto iteration = [&](const char* fidelity) {
      const json doc = json::parse(R"({
        "cluster": {"node": "dgx-h100", "nodes": 2},
        "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096,
                  "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
        "parallel": {"tp": 2, "pp": 2, "dp": 4, "ep": 4, "sequence_parallel": true, "microbatch_size": 1,
                     "global_batch": 32},
        "options": {"collectives": "flow"}
      })");
      const driver::WhatIf w = driver::simulate(config::load_document(
          doc, "test.json", ".", {layout, std::string("options.fidelity=") + fidelity}));
      int exchanges = 0;
      std::vector<std::pair<core::Time, core::Time>> first_gpu;  // GPU 0's compute and exchanges
      for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
        const lower::TaskInfo& ti = w.sim->info[id];
        exchanges += ti.kind == lower::TaskKind::kEpExchange ? 1 : 0;
        if (ti.rank == 0 && (ti.kind == lower::TaskKind::kEpExchange || ti.kind == lower::TaskKind::kCompute)) {
          first_gpu.emplace_back(w.sim->timeline.start[id], w.sim->timeline.end[id]);
        }
      }
      CHECK(exchanges > 0);
      // 1F1B's warm-up runs two forwards back to back on stage 0: the second
      // waits for the first's last combine, as nothing overlaps.
      std::sort(first_gpu.begin(), first_gpu.end());
      for (std::size_t i = 1; i < first_gpu.size(); ++i) CHECK(first_gpu[i].first >= first_gpu[i - 1].second);
      return w.sim->timeline.makespan.to_seconds();
    };
    CHECK(iteration("full") == doctest::Approx(iteration("symmetric")).epsilon(0.01));
  }
  // DeepEP over two nodes (ep 16): each token crosses to a node once and is
  // forwarded there over NVLink; as flows it takes about the analytic
  // model's time, a little more, as the flows also carry the forwarding
  // over NVLink that the analytic model leaves out.
  auto deepep = [](const char* collectives) {
    const json doc = json::parse(R"({
      "cluster": {"node": "dgx-h100", "nodes": 2},
      "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096,
                "vocab": 32000, "moe": {"experts": 16, "top_k": 4, "expert_ffn": 2048}},
      "parallel": {"dp": 16, "ep": 16, "microbatch_size": 1, "global_batch": 64, "moe_dispatcher": "deepep"}
    })");
    const config::Scenario sc =
        config::load_document(doc, "test.json", ".", {std::string("options.collectives=") + collectives});
    const driver::WhatIf w = driver::simulate(sc);
    int exchanges = 0;
    for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
      exchanges += w.sim->info[id].kind == lower::TaskKind::kEpExchange ? 1 : 0;
    }
    return std::make_pair(exchanges, driver::summarize(sc, w, "test.json").exposed.ep);
  };
  const auto [deepep_exchanges, deepep_flows] = deepep("flow");
  const auto [no_exchanges, deepep_analytic] = deepep("analytic");
  CHECK(deepep_exchanges == 4 * 4 * 4);  // 4 micro-batches x 4 layers x 4 a layer
  CHECK(no_exchanges == 0);
  CHECK(deepep_flows >= deepep_analytic * 0.99);
  CHECK(deepep_flows == doctest::Approx(deepep_analytic).epsilon(0.15));
}

TEST_CASE("one pipeline stands for all under flow collectives only where every expert group sits alike") {
  auto run = [](const json& doc, const std::vector<std::string>& sets) {
    const config::Scenario sc = config::load_document(doc, "test.json", ".", sets);
    driver::WhatIf w = driver::simulate(sc);
    return std::make_pair(driver::summarize(sc, w, "test.json"), std::move(w));
  };
  // ep 6 on three 8-GPU nodes: group 0 is GPUs 0-5, inside node 0; group 1
  // is GPUs 6-11, two on node 0 and four on node 1. The first cannot stand
  // for the second: symmetric falls back to every GPU and says why.
  const json ep6 = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 3, "network": "superpod-h100-rail"},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 12, "top_k": 2, "expert_ffn": 4096}},
    "parallel": {"tp": 1, "pp": 1, "dp": 24, "ep": 6, "microbatch_size": 1, "global_batch": 96},
    "options": {"collectives": "flow"}
  })");
  const auto [asked_symmetric, symmetric_run] = run(ep6, {});
  const auto [full, full_run] = run(ep6, {"options.fidelity=full"});
  CHECK(symmetric_run.sim->fell_back_to_full);
  CHECK(symmetric_run.sim->fell_back_because == "expert groups laid out unlike");
  CHECK(asked_symmetric.iteration_time_s == full.iteration_time_s);
  // Analytic collectives cost every group as the slowest of its kind: no need to fall back.
  const auto [analytic, analytic_run] = run(ep6, {"options.collectives=analytic"});
  CHECK_FALSE(analytic_run.sim->fell_back_to_full);
  // ep 4 with dp 16 on two nodes a stage (pp 2 over 4 nodes): the
  // expert-data-parallel groups are GPUs {0, 4} {1, 5} {2, 6}
  // {3, 7} of each node, alike; each group's ring leaves a node through
  // both its members' NICs (0 and 4 for the first, 1 and 5 for the second),
  // so the first stands for the rest and both fidelities agree.
  const json edp = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 4, "network": "superpod-h100-rail"},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 16, "top_k": 2, "expert_ffn": 4096}},
    "parallel": {"tp": 1, "pp": 2, "dp": 16, "ep": 4, "microbatch_size": 1, "global_batch": 64,
                 "distributed_optimizer": true},
    "options": {"collectives": "flow", "overlap_grad_reduce": true, "overlap_param_gather": true}
  })");
  const auto [edp_symmetric, edp_symmetric_run] = run(edp, {});
  const auto [edp_full, edp_full_run] = run(edp, {"options.fidelity=full"});
  CHECK_FALSE(edp_symmetric_run.sim->fell_back_to_full);
  CHECK(edp_symmetric.iteration_time_s == doctest::Approx(edp_full.iteration_time_s).epsilon(0.01));
  // Every edp gather takes the same time on every GPU in full fidelity.
  double shortest = 1e9, longest = 0.0;
  for (core::TaskId id = 0; id < edp_full_run.sim->graph.size(); ++id) {
    const lower::TaskInfo& ti = edp_full_run.sim->info[id];
    if (!ti.experts || ti.kind != lower::TaskKind::kParamAllGather) continue;
    const double t = (edp_full_run.sim->timeline.end[id] - edp_full_run.sim->timeline.start[id]).to_seconds();
    shortest = std::min(shortest, t);
    longest = std::max(longest, t);
  }
  CHECK(longest > 0.0);
  CHECK(longest == doctest::Approx(shortest).epsilon(0.05));
}

TEST_CASE("ZeRO-3 of a MoE model with dense layers: each unit gathered as it runs; one pipeline stands for all") {
  const json doc = zero3_with_dense_layers();
  const driver::WhatIf symmetric = driver::simulate(config::load_document(doc, "test.json", ".", {}));
  const driver::WhatIf full = driver::simulate(config::load_document(doc, "test.json", ".", {"options.fidelity=full"}));
  // Stage 0's units: the embedding, 3 dense layers, 1 MoE layer. Each
  // gather of GPU 0 moves one of them; in its first forward every unit once,
  // in forward order, so those 5 gathers move the stage's parameters once.
  const workload::StageCost& stage = symmetric.costs->stages[0];
  REQUIRE(stage.shard_units.size() == 5);
  CHECK(stage.shard_units[1].gather_bytes == stage.shard_units[3].gather_bytes);  // two dense layers
  CHECK(stage.shard_units[4].gather_bytes > stage.shard_units[3].gather_bytes);   // the MoE layer, its experts too
  const lower::Simulation& sim = *symmetric.sim;
  double first_forward = 0.0;
  int seen = 0;
  for (core::TaskId id = 0; id < sim.graph.size() && seen < 5; ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.rank != 0 || ti.kind != lower::TaskKind::kParamAllGather) continue;
    CHECK(ti.unit == seen);
    first_forward += sim.collectives->describe(sim.graph.task(id)).bytes;
    ++seen;
  }
  CHECK(seen == 5);
  CHECK(first_forward == doctest::Approx(stage.param_bytes).epsilon(1e-9));
  // Every GPU simulated gives what one pipeline standing for the rest does.
  const report::Summary a = driver::summarize(config::load_document(doc, "test.json", ".", {}), symmetric, "test.json");
  const report::Summary b = driver::summarize(
      config::load_document(doc, "test.json", ".", {"options.fidelity=full"}), full, "test.json");
  CHECK(b.iteration_time_s == doctest::Approx(a.iteration_time_s).epsilon(1e-9));
  CHECK(b.peak_memory_bytes == a.peak_memory_bytes);
}

TEST_CASE("ZeRO-3 of a MoE model with flow collectives: a MoE unit's experts move over edp after the rest over dp") {
  // zero3_with_dense_layers (stage 0: the embedding, dense layers 0-2, MoE
  // layer 3; dp 8, ep 4, so each GPU's experts have one replica, edp 2). With flow collectives the MoE unit's gather is two
  // collectives: the rest of its weights over the 8 GPUs of dp, then its
  // experts over the 2 of edp; the dense units' one over dp.
  const json doc = zero3_with_dense_layers();
  auto whatif = [&](const std::vector<std::string>& overrides) { return whatif_of(doc, overrides); };
  const auto [flows, flow_summary] = whatif({"options.collectives=flow"});
  const auto [analytic, analytic_summary] = whatif({});
  const workload::ShardUnit& moe_unit = flows.costs->stages[0].shard_units[4];
  const workload::ShardUnit& dense_unit = flows.costs->stages[0].shard_units[1];
  REQUIRE(moe_unit.gather_expert_bytes > 0.0);
  CHECK(dense_unit.gather_expert_bytes == 0.0);
  // GPU 0's first gathers, in order: units 0-3 one collective each, unit 4 two.
  const std::vector<UnitCollective> first = gpu0_collectives(
      *flows.sim, 6, [](const lower::TaskInfo& ti) { return ti.kind == lower::TaskKind::kParamAllGather; });
  REQUIRE(first.size() == 6);
  for (int u = 0; u < 4; ++u) {
    CHECK(first[u].unit == u);
    CHECK_FALSE(first[u].experts);
    CHECK(first[u].members == 8);
  }
  CHECK(first[1].bytes == dense_unit.gather_bytes);
  CHECK(first[4].unit == 4);
  CHECK_FALSE(first[4].experts);
  CHECK(first[4].members == 8);
  CHECK(first[4].bytes == moe_unit.gather_bytes - moe_unit.gather_expert_bytes);
  CHECK(first[5].unit == 4);
  CHECK(first[5].experts);
  CHECK(first[5].members == 2);
  CHECK(first[5].bytes == moe_unit.gather_expert_bytes);
  // Inside a node's NVLink or over its NICs with little else on them, the
  // flows take about the analytic times; every GPU simulated gives what one
  // pipeline standing for the rest does.
  CHECK(flow_summary.iteration_time_s == doctest::Approx(analytic_summary.iteration_time_s).epsilon(0.02));
  const auto [full, full_summary] = whatif({"options.collectives=flow", "options.fidelity=full"});
  CHECK(full_summary.iteration_time_s == doctest::Approx(flow_summary.iteration_time_s).epsilon(0.01));
  CHECK(full_summary.peak_memory_bytes == flow_summary.peak_memory_bytes);
}

TEST_CASE("ZeRO-3 of a MoE model with flow collectives: the experts' parts queue in the order the host issues them") {
  // zero3_with_dense_layers on one pipeline stage (dp 16 over 2 nodes, ep 4:
  // edp 4), its optimizer offloaded, as DeepSpeed's stage 3 runs it: each
  // unit's backward waits for the scatter and host copies of the unit after
  // it. The experts' gathers and scatters of GPU 0, one at a time on their
  // group, run in the order of their units' other parts on the sharding
  // group: a gather, then the scatter of the unit before it in the backward.
  json doc = zero3_with_dense_layers();
  doc["parallel"]["pp"] = 1;
  doc["parallel"]["dp"] = 16;
  doc["parallel"]["offload"] = "optimizer";
  auto whatif = [&](const std::vector<std::string>& overrides) { return whatif_of(doc, overrides); };
  const auto [flows, flow_summary] = whatif({"options.collectives=flow"});
  const auto [analytic, analytic_summary] = whatif({});
  CHECK(flow_summary.iteration_time_s == doctest::Approx(analytic_summary.iteration_time_s).epsilon(0.02));
  // GPU 0's unit collectives of MoE units (layers 3-7, units 4-8), the two
  // parts apart, each named by kind, unit and how many of that kind and unit
  // came before, in the order they start.
  const lower::Simulation& sim = *flows.sim;
  using Name = std::tuple<int, int, int>;
  std::vector<std::pair<core::Time, Name>> rest, experts;
  std::map<std::tuple<bool, int, int>, int> seen;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.rank != 0 || ti.unit < 4 || ti.unit > 8) continue;
    if (ti.kind != lower::TaskKind::kParamAllGather && ti.kind != lower::TaskKind::kGradReduce) continue;
    const int kind = static_cast<int>(ti.kind);
    const Name name{kind, ti.unit, seen[{ti.experts, kind, ti.unit}]++};
    (ti.experts ? experts : rest).emplace_back(sim.timeline.start[id], name);
  }
  std::sort(rest.begin(), rest.end());
  std::sort(experts.begin(), experts.end());
  REQUIRE(experts.size() == rest.size());
  // 5 units, 2 micro-batches a GPU (32 / 16): each a gather forward, one
  // backward and a scatter.
  CHECK(experts.size() == 30);
  for (std::size_t i = 0; i < experts.size(); ++i) {
    CAPTURE(i);
    CHECK(experts[i].second == rest[i].second);
  }
}

TEST_CASE("ZeRO-3 of a MoE model with the scatters on a group of their own: the experts' scatters queue apart too") {
  // zero3_with_dense_layers on one stage, dp 16 over 2 nodes, with
  // fsdp_reduce_scatter_group "separate": the experts' gathers and their
  // scatters are two process groups, as the rest's are, so an experts'
  // scatter need not wait for an experts' gather issued before it. With the
  // shared group, GPU 0's experts' parts never overlap.
  json doc = zero3_with_dense_layers();
  doc["parallel"]["pp"] = 1;
  doc["parallel"]["dp"] = 16;
  auto overlapping_expert_parts = [&](const std::vector<std::string>& overrides) {
    const auto [w, summary] = whatif_of(doc, overrides);
    std::vector<std::pair<core::Time, core::Time>> gathers, scatters;
    for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
      const lower::TaskInfo& ti = w.sim->info[id];
      if (ti.rank != 0 || !ti.experts || ti.unit < 0) continue;
      (ti.kind == lower::TaskKind::kParamAllGather ? gathers : scatters)
          .emplace_back(w.sim->timeline.start[id], w.sim->timeline.end[id]);
    }
    REQUIRE(!gathers.empty());
    REQUIRE(!scatters.empty());
    int overlaps = 0;
    for (const auto& g : gathers) {
      for (const auto& sc : scatters) overlaps += g.first < sc.second && sc.first < g.second;
    }
    return overlaps;
  };
  CHECK(overlapping_expert_parts({"options.collectives=flow"}) == 0);
  CHECK(overlapping_expert_parts({"options.collectives=flow", "parallel.fsdp_reduce_scatter_group=separate"}) > 0);
}

TEST_CASE("a MoE plan's offloaded gradients reach the host in both collective modes, also with one data-parallel rank") {
  // A small MoE model on one DGX H100: tp 4 (sequence parallel), pp 2, dp 1,
  // ep 2, so the routed experts have edp = 4 / 2 = 2 replicas and the rest
  // none; the distributed optimizer offloaded. Each bucket's reduction is
  // the experts' part alone, then its copy to the host: flows give the
  // analytic iteration.
  const json doc = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": {"arch": "llama", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "seq": 2048, "vocab": 32000,
              "moe": {"experts": 8, "top_k": 2, "expert_ffn": 1024}},
    "parallel": {"tp": 4, "sequence_parallel": true, "pp": 2, "dp": 1, "ep": 2, "microbatch_size": 1, "global_batch": 4,
                 "distributed_optimizer": true, "offload": "optimizer"}
  })");
  const auto [analytic, a] = whatif_of(doc, {});
  const auto [flows, f] = whatif_of(doc, {"options.collectives=flow"});
  const workload::StageCost& stage = analytic.costs->stages[0];
  REQUIRE(!stage.grad_bucket_host_copy.empty());
  CHECK(stage.grad_bucket_host_copy[0] > core::Time::zero());
  CHECK(f.iteration_time_s == doctest::Approx(a.iteration_time_s).epsilon(1e-6));
  CHECK(a.grad_all_reduce_s >= stage.grad_bucket_host_copy[0].to_seconds());
}

TEST_CASE("HSDP of a MoE model: each unit's experts' shard all-reduced across the shard groups after the rest's") {
  // zero3_with_dense_layers on one stage, dp 16 over 2 nodes in shard
  // groups of 8 (a node each), ep 4: the experts shard over 2 GPUs of a
  // node (edp 4 split in two) and each shard has a copy on the other node.
  json doc = zero3_with_dense_layers();
  doc["parallel"]["pp"] = 1;
  doc["parallel"]["dp"] = 16;
  doc["parallel"]["fsdp_shard_size"] = 8;
  auto whatif = [&](const std::vector<std::string>& overrides) { return whatif_of(doc, overrides); };
  const auto [flows, flow_summary] = whatif({"options.collectives=flow"});
  // GPU 0's all-reduces across the shard groups of its last unit's (the
  // head's, dense) and of the last MoE layer's (unit 8) scatter: one over the
  // 2 copies of the dense shard; then two, the rest's shard and the experts'.
  const workload::ShardUnit& moe_unit = flows.costs->stages[0].shard_units[8];
  REQUIRE(moe_unit.grad_expert_bytes > 0.0);
  const std::vector<UnitCollective> across =
      gpu0_collectives(*flows.sim, 3, [](const lower::TaskInfo& ti) { return ti.across_shard_groups; });
  REQUIRE(across.size() == 3);
  CHECK(across[0].unit == 9);
  CHECK_FALSE(across[0].experts);
  CHECK(across[1].unit == 8);
  CHECK_FALSE(across[1].experts);
  CHECK(across[1].members == 2);
  CHECK(across[1].bytes == doctest::Approx((moe_unit.grad_bytes - moe_unit.grad_expert_bytes) / 8).epsilon(1e-12));
  CHECK(across[2].unit == 8);
  CHECK(across[2].experts);
  CHECK(across[2].members == 2);
  CHECK(across[2].bytes == doctest::Approx(moe_unit.grad_expert_bytes / 2).epsilon(1e-12));
  // The flows take about the analytic times; every GPU simulated gives what
  // one pipeline standing for the rest does, in both modes.
  const auto [analytic, analytic_summary] = whatif({});
  CHECK(flow_summary.iteration_time_s == doctest::Approx(analytic_summary.iteration_time_s).epsilon(0.03));
  const auto [full, full_summary] = whatif({"options.fidelity=full"});
  CHECK(full_summary.iteration_time_s == doctest::Approx(analytic_summary.iteration_time_s).epsilon(1e-9));
  const auto [full_flows, full_flow_summary] = whatif({"options.collectives=flow", "options.fidelity=full"});
  CHECK(full_flow_summary.iteration_time_s == doctest::Approx(flow_summary.iteration_time_s).epsilon(0.01));
  CHECK(full_flow_summary.peak_memory_bytes == flow_summary.peak_memory_bytes);
}

TEST_CASE("offloaded activations leave GPU memory after each forward and come back for its backward") {
  // The small MoE over two pipeline stages (dp 4, ep 4): 1F1B keeps two
  // micro-batches in flight on stage 0. Each holds its activations A from
  // its F until its backward ends; with offloading, O of them leave when F
  // ends and come back when the backward starts. Stage 0's peak, at the
  // second F's start, falls from 2A to (A - O) + A: by O exactly.
  auto run = [](bool offload, bool zero3 = false) {
    json doc = json::parse(R"({
      "cluster": {"node": "dgx-h100", "nodes": 1},
      "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
                "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
      "parallel": {"pp": 2, "dp": 4, "ep": 4, "microbatch_size": 1, "global_batch": 32}
    })");
    if (offload) doc["parallel"]["offload_modules"] = json::array({"expert_fc1", "moe_act"});
    if (zero3) doc["parallel"]["zero_stage"] = 3;
    const config::Scenario sc = config::load_document(doc, "test.json", ".", {});
    const driver::WhatIf w = driver::simulate(sc);
    return std::make_pair(w.costs->stages[0], driver::summarize(sc, w, "test.json"));
  };
  const auto [kept, kept_summary] = run(false);
  const auto [off, off_summary] = run(true);
  const std::int64_t kept_peak = kept_summary.stages.at(0).peak_memory_bytes;
  const std::int64_t off_peak = off_summary.stages.at(0).peak_memory_bytes;
  // 2 layers a stage, each offloading 4096 tokens x 2 copies x (2048 x 2 +
  // 2 x 4096 x 2) bytes = 8192 x 20480 = 160 MiB: 320 MiB a micro-batch.
  CHECK(off.offloaded_activation_bytes == 2LL * 8192 * 20480);
  CHECK(off.activation_bytes == kept.activation_bytes);
  CHECK(kept_peak - off_peak == off.offloaded_activation_bytes);
  // On the host: stage 0 holds both warm-up micro-batches' O before the
  // first backward; stage 1 runs each backward as its forward ends, O at
  // most. The node's 8 GPUs are 4 of each stage (dp 4): 4 x 2 O + 4 x O.
  CHECK(kept_summary.info.host_memory_per_node_bytes == 0.0);
  CHECK(off_summary.info.host_memory_per_node_bytes ==
        doctest::Approx(12.0 * static_cast<double>(off.offloaded_activation_bytes)));
  // ZeRO-3 cuts each pass into a piece a unit: still one departure a forward
  // and one return a backward.
  const auto [sharded, sharded_summary] = run(true, true);
  CHECK(sharded_summary.info.host_memory_per_node_bytes ==
        doctest::Approx(12.0 * static_cast<double>(sharded.offloaded_activation_bytes)));
}

TEST_CASE("host memory is counted per node as given, also where nodes share an NVLink domain") {
  // The small MoE over two DGX H100s (pp 2, dp 8, ep 4): stage 0 on node 0,
  // stage 1 on node 1. Node 0's 8 GPUs hold two micro-batches' O each at
  // the warm-up's end, node 1's one: the busiest node holds 16 O, against
  // one node's DRAM, whether or not the two nodes form one NVLink domain
  // (which the loader folds into one node of 16 GPUs).
  auto run = [](int domain) {
    json doc = json::parse(R"({
      "cluster": {"node": "dgx-h100", "nodes": 2},
      "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
                "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
      "parallel": {"pp": 2, "dp": 8, "ep": 4, "microbatch_size": 1, "global_batch": 32,
                   "offload_modules": ["expert_fc1", "moe_act"]}
    })");
    const config::Scenario sc = config::load_document(
        doc, "test.json", ".", {"cluster.node.nvlink_domain_nodes=" + std::to_string(domain)});
    const driver::WhatIf w = driver::simulate(sc);
    return std::make_pair(w.costs->stages[0].offloaded_activation_bytes, driver::summarize(sc, w, "test.json").info);
  };
  const auto [o, apart] = run(1);
  const auto [o2, folded] = run(2);
  CHECK(o2 == o);
  CHECK(apart.host_memory_per_node_bytes == doctest::Approx(16.0 * static_cast<double>(o)));
  CHECK(folded.host_memory_per_node_bytes == doctest::Approx(16.0 * static_cast<double>(o)));
  CHECK(folded.host_memory_capacity_bytes == apart.host_memory_capacity_bytes);
}

}  // namespace driver_moe_test
