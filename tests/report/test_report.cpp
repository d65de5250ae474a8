#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/chrome_trace.hpp"
#include "report/summary.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_test {

using namespace trainsim;

namespace {

struct Run {
  config::Scenario scenario;
  driver::WhatIf whatif;
  const lower::Simulation& sim() const { return *whatif.sim; }
};

// The default example, end to end, with optional overrides.
Run run_example(const std::vector<std::string>& overrides = {}) {
  Run r;
  r.scenario = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", overrides);
  r.whatif = driver::simulate(r.scenario);
  return r;
}

// The run's summary with nothing but the cluster's 8 GPUs and the plan's ZeRO stage known.
report::Summary summary_of(const Run& r) {
  report::RunInfo info;
  info.gpus = 8;
  info.zero_stage = r.scenario.plan.zero_stage;
  return report::summarize(r.sim(), info);
}

}  // namespace

TEST_CASE("the trace parses, names every thread, and no thread has overlapping slices") {
  const Run r = run_example();
  const auto trace = nlohmann::json::parse(report::chrome_trace(r.sim(), r.scenario.cluster));
  REQUIRE(trace.contains("traceEvents"));
  std::set<std::pair<int, int>> named;
  std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> slices;  // ns
  int counters = 0, flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") named.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    if (ph == "X") {
      // As Perfetto reads them: llround(us x 1000) nanoseconds.
      slices[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {std::llround(e["ts"].get<double>() * 1000.0), std::llround(e["dur"].get<double>() * 1000.0)});
    }
    if (ph == "C") ++counters;
    if (ph == "s" || ph == "f") ++flows;
  }
  CHECK(!slices.empty());
  CHECK(counters > 0);
  CHECK(flows > 0);
  for (auto& entry : slices) {  // no structured binding: doctest's CAPTURE is a lambda
    const auto& thread = entry.first;
    auto& list = entry.second;
    CAPTURE(thread.first);
    CAPTURE(thread.second);
    CHECK(named.count(thread) == 1);
    std::sort(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i) {
      CHECK(list[i].first >= list[i - 1].first + list[i - 1].second);
    }
  }
}

TEST_CASE("slices carry the action names of the schedule") {
  const Run r = run_example();
  const std::string trace = report::chrome_trace(r.sim(), r.scenario.cluster);
  CHECK(trace.find("\"F mb3 s1\"") != std::string::npos);
  CHECK(trace.find("\"B mb0 s3\"") != std::string::npos);
  CHECK(trace.find("\"process_name\"") != std::string::npos);
}

TEST_CASE("a compute slice carries the tensor-parallel time inside it") {
  // tp_comm_us, printed to the nanosecond: compare within half of one.
  auto tp_us = [](const nlohmann::json& e) { return e["args"]["tp_comm_us"].get<double>(); };
  // The default example (tp 2) with full recompute: an F slice holds its
  // stage's forward all-reduces; a B slice the backward's and, as B redoes
  // the forward, the forward's again, so the two differ.
  {
    const Run r = run_example({"parallel.recompute=full"});
    const workload::StageCost& c = r.whatif.costs->stages[1];
    REQUIRE(c.tp_comm_backward > c.tp_comm_forward);
    const auto trace = nlohmann::json::parse(report::chrome_trace(r.sim(), r.scenario.cluster));
    int checked = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      if (e["name"] == "F mb3 s1") CHECK(std::abs(tp_us(e) - c.tp_comm_forward.to_microseconds()) <= 5e-4);
      if (e["name"] == "B mb3 s1") CHECK(std::abs(tp_us(e) - c.tp_comm_backward.to_microseconds()) <= 5e-4);
      checked += e["name"] == "F mb3 s1" || e["name"] == "B mb3 s1";
    }
    CHECK(checked == 2);
  }
  // zb-h1 splits the backward: I carries the backward's collectives, W none.
  {
    const Run r = run_example({"parallel.schedule=zb-h1"});
    const workload::StageCost& c = r.whatif.costs->stages[2];
    const auto trace = nlohmann::json::parse(report::chrome_trace(r.sim(), r.scenario.cluster));
    int checked = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      if (e["name"] == "I mb3 s2") CHECK(std::abs(tp_us(e) - c.tp_comm_backward.to_microseconds()) <= 5e-4);
      if (e["name"] == "W mb3 s2") CHECK(!e["args"].contains("tp_comm_us"));
      checked += e["name"] == "I mb3 s2" || e["name"] == "W mb3 s2";
    }
    CHECK(checked == 2);
  }
  // With data parallelism the last backward of a stage (micro-batch 7 of 8
  // here) is cut by gradient bucket: its parts share the action's TP time,
  // and add up to it.
  {
    const Run r = run_example({"parallel.tp=2", "parallel.pp=2", "parallel.dp=2"});
    const workload::StageCost& c = r.whatif.costs->stages[0];
    const auto trace = nlohmann::json::parse(report::chrome_trace(r.sim(), r.scenario.cluster));
    double sum = 0.0;
    int parts = 0;
    for (const auto& e : trace["traceEvents"]) {
      const std::string name = e.value("name", "");
      if (e["ph"] == "X" && e["args"].value("gpu", -1) == 0 && name.rfind("B mb7 s0 [", 0) == 0) {
        sum += tp_us(e);
        ++parts;
      }
    }
    CHECK(parts > 1);
    CHECK(std::abs(sum - c.tp_comm_backward.to_microseconds()) <= parts * 5e-4);
  }
  // With tp 1 there is nothing inside: no key.
  const Run solo = run_example({"parallel.tp=1", "parallel.dp=2"});
  CHECK(report::chrome_trace(solo.sim(), solo.scenario.cluster).find("tp_comm_us") == std::string::npos);
}

TEST_CASE("compute tasks with the same communication inside share one entry of the table") {
  // The default example (tp 2, pp 4, 64 / 4 = 16 micro-batches, symmetric:
  // one pipeline): every F of a stage holds the same forward all-reduces,
  // every B the same backward's, so the table needs at most one forward and
  // one backward value per stage, 2 x 4 = 8, however many micro-batches run
  // (stages with the same layers share theirs too); F and B differ: 2 at least.
  const Run r = run_example();
  const lower::Simulation& sim = r.sim();
  std::size_t with_comm = 0;
  for (const lower::TaskInfo& ti : sim.info) {
    if (ti.comm == lower::TaskInfo::kNoComm) continue;
    ++with_comm;
    REQUIRE(ti.comm < sim.comm_inside.size());
    const lower::CommInside& c = sim.comm_inside[ti.comm];
    const workload::StageCost& cost = r.whatif.costs->stages[static_cast<std::size_t>(ti.action.stage)];
    CHECK(c.tp_s == (ti.action.op == schedule::Op::kForward ? cost.tp_comm_forward : cost.tp_comm_backward).to_seconds());
  }
  CHECK(with_comm == 2 * 16 * 4);  // an F and a B a micro-batch, 16 micro-batches, 4 stages
  CHECK(sim.comm_inside.size() <= 8);
  CHECK(sim.comm_inside.size() >= 2);
  // With tp 1 nothing runs inside compute: no entries, every task kNoComm.
  const Run solo = run_example({"parallel.tp=1", "parallel.dp=2"});
  CHECK(solo.sim().comm_inside.empty());
}

TEST_CASE("the same config twice gives byte-identical trace and summary") {
  const Run a = run_example();
  const Run b = run_example();
  CHECK(report::chrome_trace(a.sim(), a.scenario.cluster) == report::chrome_trace(b.sim(), b.scenario.cluster));
  report::RunInfo info;
  info.global_batch = 64;
  info.seq = 2048;
  info.gpus = 8;
  info.peak_tflops = 312;
  CHECK(report::to_json(report::summarize(a.sim(), info)).dump() ==
        report::to_json(report::summarize(b.sim(), info)).dump());
}

TEST_CASE("the summary's figures follow from the timeline") {
  const Run r = run_example();
  report::RunInfo info;
  info.global_batch = 64;
  info.seq = 2048;
  info.gpus = 8;
  info.peak_tflops = 312;
  info.model_flops_per_iteration = 1e15;
  const report::Summary s = report::summarize(r.sim(), info);
  const double t = r.sim().timeline.makespan.to_seconds();
  CHECK(s.iteration_time_s == t);
  CHECK(s.samples_per_s == doctest::Approx(64 / t).scale(0));
  CHECK(s.tokens_per_s == doctest::Approx(64 * 2048 / t).scale(0));
  // 1e15 FLOPs / t / 8 GPUs, in TFLOP/s; MFU is that over 312.
  CHECK(s.model_tflops_per_gpu == doctest::Approx(1e15 / t / 8 / 1e12).scale(0));
  CHECK(s.mfu == doctest::Approx(s.model_tflops_per_gpu / 312).scale(0));
  REQUIRE(s.stages.size() == 4);
  double mean = 0;
  for (const auto& st : s.stages) mean += st.bubble_fraction / 4;
  CHECK(s.bubble_fraction == doctest::Approx(mean).scale(0));
  // 1F1B: rank 0 holds the most activations.
  CHECK(s.peak_memory_bytes == s.stages[0].peak_memory_bytes);
  const auto j = report::to_json(s);
  for (const char* key : {"iteration_time_s", "tokens_per_s", "samples_per_s", "model_tflops_per_gpu", "mfu",
                          "bubble_fraction", "stages", "peak_memory_bytes", "oom", "gpus", "events", "sim_wall_s"}) {
    CHECK_MESSAGE(j.contains(key), key);
  }
  CHECK(j["stages"][0].contains("bubble_fraction"));
  CHECK(j["stages"][0].contains("peak_memory_bytes"));
}

TEST_CASE("a GPU that never idles has a bubble of zero, not a rounding below it") {
  // One stage (pp 1) keeps the compute stream busy end to end: t - busy is 0.
  // Summed as seconds in doubles, the 256 micro-batches' tasks land just past
  // t and the text said "-0.0%"; summed in picoseconds they are t exactly.
  const Run r = run_example({"parallel.pp=1", "parallel.tp=8", "parallel.dp=1", "parallel.global_batch=1024"});
  const report::Summary s = summary_of(r);
  REQUIRE(s.stages.size() == 1);
  CHECK(s.bubble_fraction == 0.0);
  CHECK(s.stages[0].bubble_fraction == 0.0);
  const std::string text = report::to_text(s);
  CHECK(text.find("-0.0%") == std::string::npos);
}

TEST_CASE("each rank's peak splits into its model state and what sits above it") {
  // 1F1B over 4 stages with 16 micro-batches: rank r holds the activations of
  // at most 4 - r micro-batches (its warm-up forwards plus one), on top of
  // its stage's model state, held from time zero.
  const Run r = run_example();
  const report::Summary s = summary_of(r);
  REQUIRE(s.stages.size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    const workload::StageCost& c = r.whatif.costs->stages[rank];
    CHECK(s.stages[rank].model_state_bytes == c.model_state_bytes);
    CHECK(s.stages[rank].peak_memory_bytes - s.stages[rank].model_state_bytes == (4 - rank) * c.activation_bytes);
  }
  CHECK(report::to_json(s)["stages"][0]["model_state_bytes"] == r.whatif.costs->stages[0].model_state_bytes);
  // The text table shows the split too: rank 0's peak and its model state in GiB.
  const std::string text = report::to_text(s);
  CHECK(text.find("    rank    GPU   bubble     peak GiB  model state GiB\n") != std::string::npos);
  const std::string row0 = fmt::format("{:>12.2f} {:>16.2f}", s.stages[0].peak_memory_bytes / 1073741824.0,
                                       s.stages[0].model_state_bytes / 1073741824.0);
  CHECK(text.find(row0) != std::string::npos);
}

TEST_CASE("a plan that does not fit is reported as out of memory") {
  // GPipe with 64 micro-batches of 1.7B on 4 stages holds far more than 80 GB.
  const Run r = run_example({"parallel.schedule=gpipe", "parallel.global_batch=256"});
  const report::Summary s = summary_of(r);
  CHECK(s.oom);
  CHECK(s.peak_memory_bytes > s.memory_capacity_bytes);
}

TEST_CASE("the CUDA context counts against the GPU's memory, not in the tensors' peak") {
  // With no context the example's tensors peak at P bytes on an 80 GB GPU. A
  // context of C MiB leaves 80e9 - C x 2^20 bytes to the tensors: the plan
  // fits while P + C x 2^20 <= 80e9, so one MiB either side of the headroom
  // decides it; the peak itself does not move.
  const report::Summary none = summary_of(run_example({"options.cuda_context_mib=0"}));
  REQUIRE_FALSE(none.oom);
  const std::int64_t headroom_mib = (80'000'000'000 - none.peak_memory_bytes) / 1048576;
  const report::Summary just_fits =
      summary_of(run_example({"options.cuda_context_mib=" + std::to_string(headroom_mib - 1)}));
  const report::Summary too_big =
      summary_of(run_example({"options.cuda_context_mib=" + std::to_string(headroom_mib + 1)}));
  CHECK_FALSE(just_fits.oom);
  CHECK(too_big.oom);
  CHECK(too_big.peak_memory_bytes == none.peak_memory_bytes);
  CHECK(too_big.memory_capacity_bytes == 80'000'000'000);
  CHECK(too_big.cuda_context_bytes == (headroom_mib + 1) * 1048576);
  // The default, 400 MiB = 0.39 GiB, is in the text and the JSON.
  const report::Summary plain = summary_of(run_example());
  CHECK(plain.cuda_context_bytes == 400 * 1048576);
  CHECK(report::to_text(plain).find("GiB + 0.39 GiB CUDA context, of 74.51 GiB  (fits)") != std::string::npos);
  CHECK(report::to_json(plain)["cuda_context_bytes"] == 400 * 1048576);
}

TEST_CASE("exposed communication is the time the compute stream waits on it") {
  // The default example with dp = 1: no data-parallel time is exposed but the
  // tied-embedding all-reduce of the first and last stages, which runs after
  // their last backward with nothing left to overlap.
  // Tensor-parallel collectives block the compute stream: every rank runs
  // each of the 16 micro-batches' F and B once (1F1B), so its exposed time is
  // 16 x (its stage's TP time in a forward + in a backward).
  const Run r = run_example();
  const report::Summary s = summary_of(r);
  double most = 0.0;
  for (int k = 0; k < 4; ++k) {
    const workload::StageCost& c = r.whatif.costs->stages[k];
    const double expected = 16 * (c.tp_comm_forward + c.tp_comm_backward).to_seconds();
    CHECK(expected > 0.0);  // tp = 2
    CHECK(s.stages[k].exposed.tp == doctest::Approx(expected).scale(0).epsilon(1e-12));
    most = std::max(most, expected);
  }
  CHECK(s.exposed.tp == doctest::Approx(most).scale(0).epsilon(1e-12));
  CHECK(s.stages[1].exposed.dp == 0.0);
  CHECK(s.stages[0].exposed.dp > 0.0);
  // Pipeline ranks after the first wait for their first activations: pp > 0.
  CHECK(s.stages[3].exposed.pp > 0.0);
}

TEST_CASE("a summary of totals only has the full summary's totals and leaves out exposure and links") {
  // What a sweep ranks by comes from the same timeline either way; the
  // exposed communication (nonzero in the default example: tp = 2, see
  // above) and the link table are what kTotals skips.
  const Run r = run_example({"parallel.zero_stage=1"});
  report::RunInfo info;
  info.gpus = 8;
  info.global_batch = r.scenario.plan.global_batch;
  info.seq = r.scenario.model.seq;
  info.peak_tflops = 312;
  info.model_flops_per_iteration = r.whatif.costs->model_flops_per_iteration;
  const report::Summary full = report::summarize(r.sim(), info);
  const report::Summary totals = report::summarize(r.sim(), info, report::Detail::kTotals);
  CHECK(totals.iteration_time_s == full.iteration_time_s);
  CHECK(totals.tokens_per_s == full.tokens_per_s);
  CHECK(totals.mfu == full.mfu);
  CHECK(totals.bubble_fraction == full.bubble_fraction);
  CHECK(totals.peak_memory_bytes == full.peak_memory_bytes);
  CHECK(totals.oom == full.oom);
  CHECK(totals.slowest_gpu == full.slowest_gpu);
  REQUIRE(full.exposed.tp > 0.0);
  CHECK(totals.exposed.tp == 0.0);
  CHECK(totals.exposed.pp == 0.0);
  CHECK(!full.link_classes.empty());
  CHECK(totals.link_classes.empty());
  CHECK(totals.busiest_links.empty());
}

TEST_CASE("link traffic: the bytes of every transfer, by link class, busiest first") {
  // The default example sends activations and gradients between stages over
  // NVLink: 16 micro-batches x 3 boundaries x 2 directions x (4 x 2048 x 2304 x 2 B / 2)
  // = 96 transfers of 18,874,368 B, each over two NVLink links (out of the
  // sender, into the receiver).
  const Run r = run_example();
  const report::Summary s = summary_of(r);
  REQUIRE(s.link_classes.size() == 3);
  const report::LinkClassUse& nvlink = s.link_classes[0];
  CHECK(nvlink.link_class == "nvlink");
  CHECK(nvlink.bytes == doctest::Approx(96 * 18874368.0 * 2).scale(0));
  CHECK(s.link_classes[1].bytes == 0.0);  // no NIC traffic inside one node
  REQUIRE(!s.busiest_links.empty());
  for (std::size_t i = 1; i < s.busiest_links.size(); ++i) {
    CHECK(s.busiest_links[i - 1].utilisation >= s.busiest_links[i].utilisation);
  }
  const auto j = report::to_json(s);
  CHECK(j["links"]["nvlink"]["bytes"].get<double>() == doctest::Approx(nvlink.bytes).scale(0));
}

TEST_CASE("gradient reductions and parameter gathers are reported apart") {
  // GPT 52B under ZeRO-3, interleaved 1F1B, its reduce-scatters over a
  // group of their own: each rank's gathers run on a stream of their own,
  // beside its gradient reductions on the communication stream. Each figure
  // is the most one rank spends in its kind (the sum of its tasks'
  // durations), so each fits in the iteration; their sum did not.
  Run r;
  r.scenario = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-52b-64xa100-breadth-first.json",
                                 {"parallel.schedule=interleaved-1f1b", "parallel.fsdp_reduce_scatter_group=separate"});
  r.whatif = driver::simulate(r.scenario);
  const report::Summary s = summary_of(r);
  const lower::Simulation& sim = r.sim();
  std::vector<double> reducing(sim.gpu_of_rank.size()), gathering(sim.gpu_of_rank.size());
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    const double d = (sim.timeline.end[id] - sim.timeline.start[id]).to_seconds();
    if (ti.kind == lower::TaskKind::kParamAllGather) gathering[ti.rank] += d;
    if (ti.kind == lower::TaskKind::kGradReduce || ti.kind == lower::TaskKind::kEmbeddingAllReduce) {
      reducing[ti.rank] += d;
    }
  }
  CHECK(s.grad_all_reduce_s == doctest::Approx(*std::max_element(reducing.begin(), reducing.end())));
  CHECK(s.param_all_gather_s == doctest::Approx(*std::max_element(gathering.begin(), gathering.end())));
  CHECK(s.param_all_gather_s > 0.0);
  CHECK(s.param_gather_stream);
  CHECK(s.grad_all_reduce_s < s.iteration_time_s);
  CHECK(s.param_all_gather_s < s.iteration_time_s);
  CHECK(s.grad_all_reduce_s + s.param_all_gather_s > s.iteration_time_s);  // the old, summed figure
  const auto j = report::to_json(s);
  CHECK(j["grad_all_reduce_s"] == s.grad_all_reduce_s);
  CHECK(j["param_all_gather_s"] == s.param_all_gather_s);
  const std::string text = report::to_text(s);
  CHECK(text.find("parameter all-gather") != std::string::npos);
  CHECK(text.find("parameter-gather stream (ZeRO-3)") != std::string::npos);

  // One group for both (the default): the two queue one after the other, so
  // their sum fits in the iteration, and the lines say so.
  Run shared;
  shared.scenario = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-52b-64xa100-breadth-first.json",
                                      {"parallel.schedule=interleaved-1f1b"});
  shared.whatif = driver::simulate(shared.scenario);
  const report::Summary one = summary_of(shared);
  CHECK(one.shard_queue);
  CHECK(one.grad_all_reduce_s + one.param_all_gather_s <= one.iteration_time_s);
  const std::string one_text = report::to_text(one);
  CHECK(one_text.find("in one queue with the gathers (ZeRO-3)") != std::string::npos);
  CHECK(one_text.find("in one queue with the reduce-scatters (ZeRO-3)") != std::string::npos);

  // The distributed optimizer's gathers under the next forward
  // (options.overlap_param_gather) run on that stream too, but are not ZeRO-3's.
  Run overlapped;
  overlapped.scenario = config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json",
                                          {"parallel.tp=1", "parallel.dp=8", "parallel.pp=1",
                                           "parallel.distributed_optimizer=true", "options.overlap_param_gather=true"});
  overlapped.whatif = driver::simulate(overlapped.scenario);
  const std::string under_forward = report::to_text(summary_of(overlapped));
  CHECK(under_forward.find("parameter-gather stream (under the next forward)") != std::string::npos);
  CHECK(under_forward.find("(ZeRO-3)") == std::string::npos);

  // Without ZeRO there is nothing to gather, and no line for it.
  const report::Summary plain = summary_of(run_example());
  CHECK(plain.param_all_gather_s == 0.0);
  CHECK(report::to_text(plain).find("parameter all-gather") == std::string::npos);
  CHECK(report::to_json(plain)["param_all_gather_s"] == 0.0);
}

}  // namespace report_test
