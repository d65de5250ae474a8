// ZeRO-3 / FSDP unit by unit, end to end: what the keys change.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_fsdp_test {

using namespace trainsim;

namespace {

// GPT 1.7B (24 layers) fully sharded over the 8 GPUs of one DGX A100:
// tp 1, pp 1, dp 8, one micro-batch of 2 per replica.
driver::WhatIf run(std::vector<std::string> overrides) {
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                         "parallel.microbatch_size=2", "parallel.global_batch=16",
                                         "parallel.zero_stage=3"};
  overrides.insert(overrides.begin(), plan.begin(), plan.end());
  return driver::simulate(config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", overrides));
}

double peak(const driver::WhatIf& w) { return static_cast<double>(w.sim->memory.pools()[0].peak()); }

int gathers(const driver::WhatIf& w) {
  int n = 0;
  for (const auto& info : w.sim->info) n += info.kind == lower::TaskKind::kParamAllGather;
  return n;
}

}  // namespace

TEST_CASE("a unit is gathered, used and freed on its own: peak memory follows the unit, not the model") {
  // 24 layer units plus the embedding and the head: 26 gathers for the
  // forward and 26 for the backward.
  const driver::WhatIf layer = run({});
  CHECK(gathers(layer) == 52);
  // Units of 6 layers: 4 + 2 units, 12 gathers; more held at once.
  const driver::WhatIf six = run({"parallel.fsdp_unit_layers=6"});
  CHECK(gathers(six) == 12);
  CHECK(peak(six) > peak(layer));
  // Deeper prefetch holds more units at once, too.
  CHECK(peak(run({"parallel.fsdp_prefetch=3"})) > peak(layer));
}

TEST_CASE("the program gathers each unit by an action of its own, and each gather task comes from its unit's") {
  // One forward and one backward: 26 UNSHARDs each, units 0 .. 25 forward
  // and 25 .. 0 backward, and as many RESHARDs.
  const driver::WhatIf w = run({});
  std::vector<int> unshards, reshards;
  for (const schedule::Action& a : w.program->ranks[0]) {
    if (a.op == schedule::Op::kUnshard) unshards.push_back(a.unit());
    if (a.op == schedule::Op::kReshard) reshards.push_back(a.unit());
  }
  REQUIRE(unshards.size() == 52);
  CHECK(reshards.size() == 52);
  for (int u = 0; u < 26; ++u) {
    CHECK(unshards[static_cast<std::size_t>(u)] == u);
    CHECK(unshards[static_cast<std::size_t>(26 + u)] == 25 - u);
  }
  for (const lower::TaskInfo& info : w.sim->info) {
    if (info.kind == lower::TaskKind::kParamAllGather) CHECK(info.action.unit() == info.unit);
  }
}

TEST_CASE("reshard after forward off keeps the forward's units for the backward: more memory, fewer gathers") {
  const driver::WhatIf on = run({});
  const driver::WhatIf off = run({"parallel.reshard_after_forward=false"});
  CHECK(gathers(off) == gathers(on) / 2);  // the backward gathers nothing
  CHECK(peak(off) > peak(on));
  CHECK(off.sim->timeline.makespan <= on.sim->timeline.makespan);
}

TEST_CASE("DeepSpeed's prefetch window in parameters: smaller than a unit prefetches one, larger than all everything") {
  // DeepSpeed queues gathers while fewer parameters than the window are
  // queued ahead: the next unit always goes, the one after only if the next
  // holds fewer parameters than the window.
  const driver::WhatIf one = run({});  // fsdp_prefetch 1
  const driver::WhatIf tiny = run({"parallel.fsdp_prefetch_params=1000"});  // every unit holds more
  CHECK(tiny.sim->timeline.makespan == one.sim->timeline.makespan);
  CHECK(peak(tiny) == peak(one));
  // A window of one layer unit and a bit (GPT 1.7B: 12h^2 + 13h = 63.7 M a
  // layer): two units ahead while layer units compute, as fsdp_prefetch 2.
  const driver::WhatIf two = run({"parallel.fsdp_prefetch=2"});
  const driver::WhatIf window = run({"parallel.fsdp_prefetch_params=64e6"});
  CHECK(peak(window) == peak(two));
  const driver::WhatIf all = run({"parallel.fsdp_prefetch=64"});
  const driver::WhatIf huge = run({"parallel.fsdp_prefetch_params=1e12"});
  CHECK(huge.sim->timeline.makespan == all.sim->timeline.makespan);
  CHECK(peak(huge) == peak(all));
  CHECK(peak(huge) > peak(tiny));
}

TEST_CASE("DeepSpeed's live limit: a unit is gathered ahead only while those held hold fewer parameters") {
  // DeepSpeed checks stage3_max_live_parameters before it adds a whole tensor
  // (it prefetches while the parameters available fall short of the limit),
  // so the unit it adds may take the count past it. GPT 1.7B's layer units
  // hold 63.7 M parameters each, its embedding 122 M.
  const driver::WhatIf none = run({"parallel.fsdp_prefetch=0"});
  const driver::WhatIf one = run({});
  const driver::WhatIf two = run({"parallel.fsdp_prefetch=2"});
  // 1 M: every layer unit held is above it, so none is gathered ahead, as
  // with fsdp_prefetch 0. (The output head's unit, the final LayerNorm of a
  // tied GPT, 2h = 4,608 parameters, is below it: the unit after it is
  // gathered while it computes, a fraction of a millisecond sooner.)
  const driver::WhatIf tiny = run({"parallel.fsdp_prefetch_params=1e12", "parallel.fsdp_max_live_params=1e6"});
  CHECK(peak(tiny) == peak(none));
  CHECK(tiny.sim->timeline.makespan <= none.sim->timeline.makespan);
  CHECK(tiny.sim->timeline.makespan.to_seconds() > none.sim->timeline.makespan.to_seconds() - 0.5e-3);
  CHECK(tiny.sim->timeline.makespan > one.sim->timeline.makespan);
  // 100 M: one layer unit held is below it, two (127.4 M) are not: one ahead.
  CHECK(peak(run({"parallel.fsdp_prefetch_params=1e12", "parallel.fsdp_max_live_params=100e6"})) == peak(one));
  // 130 M: two held are below it: two ahead.
  CHECK(peak(run({"parallel.fsdp_prefetch_params=1e12", "parallel.fsdp_max_live_params=130e6"})) == peak(two));
}

TEST_CASE("DeepSpeed's persistence threshold: small tensors stay whole, never gathered") {
  // GPT 1.7B (h 2304): a layer's LayerNorm weights and biases (4h), QKV bias
  // (3h), output bias (h), MLP biases (4h + h) are all below 1e5: 13h = 29,952
  // parameters a layer persist; its matrices are 12h^2 = 63.7 M.
  const driver::WhatIf plain = run({});
  const driver::WhatIf persist = run({"parallel.fsdp_persistence_threshold=1e5"});
  const auto& layer_plain = plain.costs->stages[0].shard_units[1];
  const auto& layer_persist = persist.costs->stages[0].shard_units[1];
  CHECK(layer_plain.params - layer_persist.params == doctest::Approx(13.0 * 2304));
  CHECK(layer_plain.gather_bytes - layer_persist.gather_bytes == doctest::Approx(2.0 * 13.0 * 2304));
  // Their 16-bit weights stay whole on all 8 GPUs: 2 x 7/8 bytes each more
  // state, over 24 layers and the final LayerNorm (2h).
  const double persistent = 24 * 13.0 * 2304 + 2.0 * 2304;
  CHECK(persist.costs->stages[0].model_state_bytes - plain.costs->stages[0].model_state_bytes ==
        doctest::Approx(2.0 * persistent * 7.0 / 8.0).epsilon(1e-6));
}

TEST_CASE("a split backward under ZeRO-3 never gets a piece of negative time") {
  // GPT-3 175B, tp 4, pp 2, 2BP (I and W apart), full recompute: each I runs
  // as one piece per unit in reverse, its time split by the units' shares of
  // the input gradient, each piece rounded to a picosecond; the last piece,
  // the embedding's unit (no input gradient: a share of nothing), takes what
  // is left, which the others' rounding had left a few picoseconds below zero
  // ("an event in the past"; 1,011 plans of the README's sweep failed so).
  const driver::WhatIf w = driver::simulate(config::load_file(
      TRAINSIM_SOURCE_DIR "/configs/examples/gpt3-175b-1024xa100.json",
      {"parallel.tp=4", "parallel.pp=2", "parallel.dp=128", "parallel.schedule=2bp", "parallel.zero_stage=3",
       "parallel.recompute=full", "parallel.microbatch_size=1"}));
  for (core::TaskId t = 0; t < w.sim->graph.size(); ++t) CHECK(w.sim->graph.task(t).duration >= core::Time::zero());
  CHECK(w.sim->timeline.makespan > core::Time::zero());
}

TEST_CASE("FSDP2's copy-out: each gathered unit copied out of the gather's buffer on the compute stream") {
  const driver::WhatIf in_place = run({});
  const driver::WhatIf copied = run({"parallel.fsdp_copy_out=true"});
  // GPT 1.7B's layer unit: 12h^2 + 13h = 63,730,944 parameters (h 2,304),
  // gathered in 16 bits: 127,461,888 bytes, read and written once at the
  // A100's 1.62 TB/s, one 3 us kernel: 157.36 us + 3 us = 160.36 us.
  const workload::ShardUnit& layer = copied.costs->stages[0].shard_units[1];
  CHECK(layer.gather_bytes == doctest::Approx(127461888.0));
  CHECK(layer.copy_out.to_seconds() == doctest::Approx(2.0 * 127461888.0 / 1.62e12 + 3e-6));
  CHECK(in_place.costs->stages[0].shard_units[1].copy_out.to_seconds() == 0.0);
  // One copy a gather (26 units, forward and backward), each on the compute
  // stream after its gather and before the unit's part.
  const lower::Simulation& sim = *copied.sim;
  int copies = 0;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (!ti.copy_out) continue;
    ++copies;
    CHECK(ti.kind == lower::TaskKind::kCompute);
    CHECK(ti.unit >= 0);
    // Its unit's gather has ended before it starts, and its unit's part of
    // the action starts only once it has ended.
    bool gathered = false, then_used = false;
    for (core::TaskId other = 0; other < sim.graph.size(); ++other) {
      const lower::TaskInfo& o = sim.info[other];
      if (o.unit != ti.unit || o.rank != ti.rank || o.action.stage != ti.action.stage) continue;
      if (o.kind == lower::TaskKind::kParamAllGather && sim.timeline.end[other] <= sim.timeline.start[id]) gathered = true;
      if (o.kind == lower::TaskKind::kCompute && !o.copy_out && o.action.op == ti.action.op &&
          o.action.microbatch == ti.action.microbatch && sim.timeline.start[other] >= sim.timeline.end[id]) {
        then_used = true;
      }
    }
    CHECK(gathered);
    CHECK(then_used);
  }
  CHECK(copies == gathers(copied));
  CHECK(copies == 52);
  // The copies take compute time, and both copies of a unit are held while one runs.
  CHECK(copied.sim->timeline.makespan > in_place.sim->timeline.makespan);
  CHECK(peak(copied) >= peak(in_place));
  // Under FSDP2's copy-out the gathered units are held twice only while they
  // copy: the peak grows by at most the largest unit's gathered bytes (the
  // embedding's, 50,257 x 2,304 x 2 bytes + its positions').
  double largest = 0.0;
  for (const workload::ShardUnit& u : copied.costs->stages[0].shard_units) largest = std::max(largest, u.gather_bytes);
  CHECK(largest > layer.gather_bytes);
  CHECK(peak(copied) <= peak(in_place) + largest);
}

TEST_CASE("DeepSpeed's reuse distance: a recomputed layer gathers its early weights again for the backward") {
  // GPT 1.7B (h 2304, ffn 4h): QKV 3h^2, output h^2, MLP up and down 4h^2
  // each, biases and norms below the 1e5 threshold. After the recomputed
  // forward, the down projection is used again at once (kept), the up
  // projection after the down's forward and backward, 2 x 4h^2 = 42.5 M
  // parameters: beyond a distance of 1e6, so it and the two before it are
  // gathered again, 8h^2 of 12h^2: each layer unit's backward gathers 2/3 of
  // it a second time. A distance of 1e9 keeps everything (as FSDP does).
  const std::vector<std::string> common = {"parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                           "parallel.microbatch_size=2", "parallel.global_batch=16",
                                           "parallel.zero_stage=3", "parallel.recompute=full",
                                           "parallel.fsdp_persistence_threshold=1e5"};
  struct Run {
    driver::WhatIf w;
    report::Summary s;
  };
  auto with = [&](const std::string& extra, const std::vector<std::string>& more = {}) {
    std::vector<std::string> o = common;
    if (!extra.empty()) o.push_back(extra);
    o.insert(o.end(), more.begin(), more.end());
    const config::Scenario sc = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", o);
    driver::WhatIf w = driver::simulate(sc);
    report::Summary s = driver::summarize(sc, w, "x");
    return Run{std::move(w), std::move(s)};
  };
  const Run fsdp = with("");
  const Run kept = with("parallel.fsdp_max_reuse_distance=1e9");
  const Run again = with("parallel.fsdp_max_reuse_distance=1e6");
  CHECK(kept.w.sim->timeline.makespan == fsdp.w.sim->timeline.makespan);
  CHECK(gathers(again.w) == gathers(fsdp.w) + 24);  // a second one in each layer unit's backward
  CHECK(peak(again.w) == peak(fsdp.w));             // one unit's parameters held at a time, as before
  // The gather stream runs what it ran (the second gathers are on no
  // stream's queue); what they add shows as exposed data-parallel time:
  // nothing hides them.
  CHECK(again.s.param_all_gather_s == doctest::Approx(fsdp.s.param_all_gather_s));
  CHECK(again.s.exposed.dp > fsdp.s.exposed.dp);
  CHECK(again.w.sim->timeline.makespan > fsdp.w.sim->timeline.makespan);
  // Every backward pays it, however the units are held: under GPipe with 4
  // micro-batches (global batch 64) 4 x 24 second gathers; with the
  // forward's units kept for the backward (no gather before it) still 24.
  const Run gpipe = with("parallel.fsdp_max_reuse_distance=1e6", {"parallel.schedule=gpipe", "parallel.global_batch=64"});
  const Run gpipe_fsdp = with("", {"parallel.schedule=gpipe", "parallel.global_batch=64"});
  CHECK(gathers(gpipe.w) == gathers(gpipe_fsdp.w) + 4 * 24);
  const Run kept_units = with("parallel.fsdp_max_reuse_distance=1e6", {"parallel.reshard_after_forward=false"});
  const Run kept_units_fsdp = with("", {"parallel.reshard_after_forward=false"});
  CHECK(gathers(kept_units.w) == gathers(kept_units_fsdp.w) + 24);
  CHECK(kept_units.w.sim->timeline.makespan > kept_units_fsdp.w.sim->timeline.makespan);
  // Interleaved over two pipeline ranks, whose tied embedding's reduction
  // spans both: each of a rank's 2 x 6 layer units gathers again in each of
  // its 2 backwards (global batch 16 over dp 4 in micro-batches of 2), and
  // the run completes.
  const std::vector<std::string> interleaved = {"parallel.pp=2", "parallel.vp=2", "parallel.dp=4",
                                                "parallel.schedule=interleaved-1f1b"};
  const Run looped = with("parallel.fsdp_max_reuse_distance=1e6", interleaved);
  const Run looped_fsdp = with("", interleaved);
  CHECK(gathers(looped.w) == gathers(looped_fsdp.w) + 2 * 2 * 6 * 2);
  CHECK(looped.w.sim->timeline.makespan > looped_fsdp.w.sim->timeline.makespan);
  // A backward's first second gather waits for the gradient it will work
  // on, as the recomputation it follows does: under 1F1B over two ranks,
  // on the first rank each one starts after its micro-batch's gradient
  // arrives from the second.
  const Run piped = with("parallel.fsdp_max_reuse_distance=1e6", {"parallel.pp=2", "parallel.dp=4"});
  const lower::Simulation& sim = *piped.w.sim;
  int checked = 0;
  for (std::size_t g = 0; g < sim.info.size(); ++g) {
    const lower::TaskInfo& re = sim.info[g];
    if (!re.regather || re.rank != 0 || re.unit != re.units - 1) continue;  // the backward's first unit
    for (std::size_t t = 0; t < sim.info.size(); ++t) {
      const lower::TaskInfo& in = sim.info[t];
      if (in.kind != lower::TaskKind::kTransfer || in.peer != 0 || in.action.op != schedule::Op::kSendB ||
          in.action.microbatch != re.action.microbatch) {
        continue;
      }
      CHECK(sim.timeline.start[g] >= sim.timeline.end[t]);
      ++checked;
    }
  }
  CHECK(checked == 2);  // one a micro-batch
}

TEST_CASE("offloading's copies to and from the host take their time with flow collectives too") {
  // On one NVLink node the flows of each collective take its analytic time
  // (without offloading the two modes give the same iteration), so the
  // copies over PCIe, which follow each collective's data as flows, must
  // leave the iteration as the analytic model times it: DeepSpeed's blocking
  // copies, FSDP's CPU offload with parameters, ZeRO-1's buckets. Without
  // the copies the blocking case's flows end 12% sooner.
  auto iteration = [](std::vector<std::string> overrides, const char* collectives) {
    overrides.push_back(std::string("options.collectives=") + collectives);
    return run(overrides).sim->timeline.makespan.to_seconds();
  };
  CHECK(iteration({}, "flow") == doctest::Approx(iteration({}, "analytic")).epsilon(1e-9));
  for (const std::vector<std::string>& offload :
       {std::vector<std::string>{"parallel.offload=optimizer"},
        std::vector<std::string>{"parallel.offload=optimizer", "parallel.offload_grad_copy=async"},
        std::vector<std::string>{"parallel.offload=optimizer+params"},
        std::vector<std::string>{"parallel.zero_stage=1", "parallel.offload=optimizer"}}) {
    CAPTURE(offload.back());
    const double analytic = iteration(offload, "analytic");
    CHECK(analytic > iteration({}, "analytic") * 1.3);  // the copies and the host's step take their time
    CHECK(iteration(offload, "flow") == doctest::Approx(analytic).epsilon(1e-6));
  }
}

TEST_CASE("DeepSpeed's blocking gradient copy: each unit's backward and gather wait for the unit before's scatter") {
  // ZeRO-3 offloading the optimizer alone is DeepSpeed's stage 3, whose
  // gradient hook waits on the host for each reduced shard's copy: nothing
  // more of the backward (the next unit's gather, its compute) is launched
  // until the unit before is scattered and copied. async (FSDP's CPU offload)
  // lets the backward run on under the scatters.
  const driver::WhatIf blocking = run({"parallel.offload=optimizer"});
  const driver::WhatIf async = run({"parallel.offload=optimizer", "parallel.offload_grad_copy=async"});
  const lower::Simulation& sim = *blocking.sim;
  // The backward's pieces and gathers, and the scatters, by unit.
  const int U = 26;  // 24 layer units, the embedding's and the head's
  std::vector<std::size_t> piece(U, 0), gather(U, 0), scatter(U, 0);
  std::vector<bool> seen(U, false);
  auto collect = [&](const lower::Simulation& s, std::vector<std::size_t>& p, std::vector<std::size_t>& g,
                     std::vector<std::size_t>& sc) {
    for (std::size_t t = 0; t < s.info.size(); ++t) {
      const lower::TaskInfo& in = s.info[t];
      if (in.unit < 0) continue;
      const auto u = static_cast<std::size_t>(in.unit);
      if (in.kind == lower::TaskKind::kGradReduce) sc[u] = t;
      // The backward's gathers are the second of each unit.
      if (in.kind == lower::TaskKind::kParamAllGather) {
        if (seen[u]) g[u] = t;
        seen[u] = true;
      }
      if (in.kind == lower::TaskKind::kCompute && in.action.op == schedule::Op::kBackward) p[u] = t;
    }
  };
  collect(sim, piece, gather, scatter);
  // The backward runs the units last to first: unit u - 1 after unit u's scatter.
  for (int u = U - 1; u >= 1; --u) {
    CAPTURE(u);
    const auto next = static_cast<std::size_t>(u - 1);
    CHECK(sim.timeline.start[piece[next]] >= sim.timeline.end[scatter[static_cast<std::size_t>(u)]]);
    CHECK(sim.timeline.start[gather[next]] >= sim.timeline.end[scatter[static_cast<std::size_t>(u)]]);
  }
  // Without the wait some unit's backward starts under the scatter before it.
  std::fill(seen.begin(), seen.end(), false);
  std::vector<std::size_t> a_piece(U, 0), a_gather(U, 0), a_scatter(U, 0);
  collect(*async.sim, a_piece, a_gather, a_scatter);
  int overlapped = 0;
  for (int u = U - 1; u >= 1; --u) {
    overlapped += async.sim->timeline.start[a_piece[static_cast<std::size_t>(u - 1)]] <
                  async.sim->timeline.end[a_scatter[static_cast<std::size_t>(u)]];
  }
  CHECK(overlapped > 0);
  CHECK(blocking.sim->timeline.makespan > async.sim->timeline.makespan);
  // With two micro-batches a replica, DeepSpeed waits only at the
  // gradient-accumulation boundary (the FP32 copy comes after the last
  // backward): the first backward runs on under its scatters.
  const driver::WhatIf two = run({"parallel.offload=optimizer", "parallel.global_batch=32"});
  int first_overlapped = 0, last_overlapped = 0;
  for (std::size_t t = 0; t < two.sim->info.size(); ++t) {
    const lower::TaskInfo& in = two.sim->info[t];
    if (in.kind != lower::TaskKind::kCompute || in.action.op != schedule::Op::kBackward || in.unit < 0 ||
        in.unit + 1 >= U) {
      continue;
    }
    for (std::size_t s = 0; s < two.sim->info.size(); ++s) {  // the scatter of the unit before, same backward
      const lower::TaskInfo& sc = two.sim->info[s];
      if (sc.kind != lower::TaskKind::kGradReduce || sc.unit != in.unit + 1 ||
          sc.action.microbatch != in.action.microbatch) {
        continue;
      }
      const bool overlaps = two.sim->timeline.start[t] < two.sim->timeline.end[s];
      (in.action.microbatch == 0 ? first_overlapped : last_overlapped) += overlaps;
    }
  }
  CHECK(first_overlapped > 0);
  CHECK(last_overlapped == 0);
}

TEST_CASE("gathers and scatters share the sharding group: one at a time, in the order the host issues them") {
  // Every framework's default: a unit's reduce-scatter and the next units'
  // all-gathers go through one process group, whose collectives run one at
  // a time. In the backward (units last to first, prefetching one ahead)
  // the host issues unit u's scatter after u's backward and then, in the
  // pre-hook of unit u - 1, the gather of unit u - 2: that gather starts
  // after the scatter ends. A separate group for the scatters lets them run
  // beside the gathers.
  const driver::WhatIf shared = run({});
  const driver::WhatIf separate = run({"parallel.fsdp_reduce_scatter_group=separate"});
  struct Span {
    core::Time start, end;
    bool scatter;
    int unit;
  };
  auto spans = [](const driver::WhatIf& w) {
    std::vector<Span> out;
    for (std::size_t t = 0; t < w.sim->info.size(); ++t) {
      const lower::TaskInfo& in = w.sim->info[t];
      const bool gather = in.kind == lower::TaskKind::kParamAllGather && in.unit >= 0;
      const bool scatter = in.kind == lower::TaskKind::kGradReduce && in.unit >= 0;
      if (gather || scatter) out.push_back({w.sim->timeline.start[t], w.sim->timeline.end[t], scatter, in.unit});
    }
    return out;
  };
  auto overlapping = [](const std::vector<Span>& s) {
    int n = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (std::size_t j = i + 1; j < s.size(); ++j) n += s[i].start < s[j].end && s[j].start < s[i].end;
    }
    return n;
  };
  const std::vector<Span> one = spans(shared), two = spans(separate);
  CHECK(one.size() == 78);  // 26 units: a gather each for the forward and the backward, a scatter each
  CHECK(overlapping(one) == 0);
  CHECK(overlapping(two) > 0);
  // Unit u's scatter ends before the backward's gather of unit u - 2 (the
  // unit's later gather) starts.
  std::vector<Span> scatter(26), backward_gather(26);
  for (const Span& s : one) {
    Span& slot = (s.scatter ? scatter : backward_gather)[static_cast<std::size_t>(s.unit)];
    if (s.start >= slot.start) slot = s;
  }
  for (std::size_t u = 25; u >= 2; --u) {
    CAPTURE(u);
    CHECK(backward_gather[u - 2].start >= scatter[u].end);
  }
  CHECK(shared.sim->timeline.makespan >= separate.sim->timeline.makespan);
}

TEST_CASE("flow collectives under ZeRO-3: the units' scatters carry the gradients, the stage's bucket moves nothing") {
  // The REDUCE_GRAD action's bucket is ZeRO-1/2's and plain data
  // parallelism's reduction; under ZeRO-3 its analytic time is zero, and as
  // flows it must move no bytes either (it moved the stage's whole
  // gradients a second time).
  auto bucket_time = [](const driver::WhatIf& w) {
    core::Time sum;
    for (std::size_t t = 0; t < w.sim->info.size(); ++t) {
      const lower::TaskInfo& in = w.sim->info[t];
      if (in.kind == lower::TaskKind::kGradReduce && in.unit < 0) sum += w.sim->timeline.end[t] - w.sim->timeline.start[t];
    }
    return sum;
  };
  CHECK(bucket_time(run({"options.collectives=flow"})) == core::Time::zero());
  CHECK(bucket_time(run({})) == core::Time::zero());
  // ZeRO-2 reduce-scatters its buckets: there they take time.
  CHECK(bucket_time(run({"parallel.zero_stage=2", "options.collectives=flow"})) > core::Time::zero());
}

TEST_CASE("the summary names what lives on the host and the gradient copies that applied") {
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                         "parallel.microbatch_size=2", "parallel.global_batch=16",
                                         "parallel.zero_stage=3"};
  auto summary_of = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> o = plan;
    o.insert(o.end(), extra.begin(), extra.end());
    const config::Scenario sc = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", o);
    return driver::summarize(sc, driver::simulate(sc), "x");
  };
  // The default for ZeRO-3 offloading the optimizer alone: DeepSpeed's blocking copy.
  const report::Summary deepspeed = summary_of({"parallel.offload=optimizer"});
  CHECK(report::to_text(deepspeed).find(", optimizer on the host (blocking gradient copies)") != std::string::npos);
  CHECK(report::to_json(deepspeed)["plan"]["offload"] == "optimizer");
  CHECK(report::to_json(deepspeed)["plan"]["offload_grad_copy"] == "blocking");
  const report::Summary fsdp = summary_of({"parallel.offload=optimizer+params"});
  CHECK(report::to_text(fsdp).find(", optimizer and parameters on the host (async gradient copies)") !=
        std::string::npos);
  // Nothing offloaded: neither the words nor the keys.
  const report::Summary none = summary_of({});
  CHECK(report::to_text(none).find("on the host") == std::string::npos);
  CHECK(!report::to_json(none)["plan"].contains("offload"));
}

}  // namespace driver_fsdp_test
