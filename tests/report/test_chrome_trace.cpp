#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/chrome_trace.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_chrome_trace_test {

using namespace trainsim;
using nlohmann::json;

namespace {

struct Slice {
  std::int64_t start = 0, end = 0;  // ns, as Perfetto reads them
  std::string name;
  json args;
};
using Thread = std::pair<int, int>;  // (pid, tid)

// A trace as a viewer sees it: thread and process names, and each thread's
// slices in time order.
struct Trace {
  std::map<int, std::string> processes;
  std::map<Thread, std::string> threads;
  std::map<Thread, std::vector<Slice>> slices;
  std::map<std::string, int> counters;  // name -> samples
};

// Perfetto's reading of a ts or dur: llround(us * 1000) nanoseconds.
std::int64_t ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

Trace parse(const std::string& text) {
  Trace t;
  const json doc = json::parse(text);
  for (const json& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") t.processes[e["pid"]] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name") t.threads[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (ph == "C") ++t.counters[e["name"]];
    if (ph == "X") {
      const std::int64_t start = ns(e["ts"]);
      t.slices[{e["pid"], e["tid"]}].push_back({start, start + ns(e["dur"]), e["name"], e["args"]});
    }
  }
  for (auto& [thread, list] : t.slices) {
    std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) { return a.start < b.start; });
  }
  return t;
}

struct Run {
  config::Scenario scenario;
  driver::WhatIf whatif;
  Trace trace;
};

Run run(const config::Scenario& sc) {
  Run r{sc, driver::simulate(sc, true), {}};
  r.trace = parse(report::chrome_trace(*r.whatif.sim, r.scenario.cluster));
  return r;
}

Run run_example(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return run(config::load_file(std::string(TRAINSIM_SOURCE_DIR "/configs/examples/") + name, overrides));
}

// 4 Llama layers with 8 experts each on one DGX H100, flow collectives, laid
// out as `parallel` (a JSON object) says.
Run run_small_moe_flows(const std::string& parallel) {
  json doc = json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": {"arch": "llama", "layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 8, "seq": 4096, "vocab": 32000,
              "moe": {"experts": 8, "top_k": 2, "expert_ffn": 4096}},
    "options": {"collectives": "flow"}
  })");
  doc["parallel"] = json::parse(parallel);
  return run(config::load_document(doc, "test.json", "."));
}

// Every thread with slices is named, and no two of its slices overlap.
void check_threads(const Trace& t) {
  for (const auto& entry : t.slices) {  // no structured binding: doctest's CAPTURE is a lambda
    const auto& thread = entry.first;
    const auto& list = entry.second;
    REQUIRE(t.threads.count(thread) == 1);
    CAPTURE(t.threads.at(thread));
    for (std::size_t i = 1; i < list.size(); ++i) {
      CAPTURE(list[i - 1].name);
      CAPTURE(list[i].name);
      CHECK(list[i - 1].end <= list[i].start);
    }
  }
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TEST_CASE("ZeRO-3's parameter gathers have a thread of their own; no thread's slices overlap") {
  // GPT 52B, ZeRO-3, interleaved 1F1B, the reduce-scatters over a group of
  // their own: the gathers run on their own stream beside the gradient
  // reductions, so on one thread they overlapped.
  const Run r = run_example("gpt-52b-64xa100-breadth-first.json",
                            {"parallel.schedule=interleaved-1f1b", "parallel.fsdp_reduce_scatter_group=separate"});
  check_threads(r.trace);
  int gathers = 0, reductions = 0;
  for (const auto& [thread, list] : r.trace.slices) {
    const std::string& name = r.trace.threads.at(thread);
    for (const Slice& s : list) {
      if (starts_with(s.name, "param all-gather")) {
        ++gathers;
        CHECK(ends_with(name, " param gather"));
        CHECK(s.args["collective"] == "all-gather");
      }
      if (starts_with(s.name, "grad reduce")) {
        ++reductions;
        CHECK(ends_with(name, " comm"));
      }
    }
  }
  CHECK(gathers > 0);
  CHECK(reductions > 0);
  CHECK(r.trace.threads.at({0, 2}) == "GPU 0 param gather");

  // One group for both (the default): the gathers and the units'
  // reduce-scatters share a thread, the group's queue; the tied embedding's
  // all-reduce stays on comm.
  const Run one = run_example("gpt-52b-64xa100-breadth-first.json", {"parallel.schedule=interleaved-1f1b"});
  check_threads(one.trace);
  int queued = 0, embedding = 0;
  for (const auto& [thread, list] : one.trace.slices) {
    const std::string& name = one.trace.threads.at(thread);
    for (const Slice& s : list) {
      if (starts_with(s.name, "param all-gather") || starts_with(s.name, "grad reduce-scatter")) {
        ++queued;
        CHECK(ends_with(name, " sharding group (gathers and scatters)"));
      }
      if (starts_with(s.name, "embedding grad all-reduce")) {
        ++embedding;
        CHECK(ends_with(name, " comm"));
      }
    }
  }
  CHECK(queued > 0);
  CHECK(embedding > 0);
}

TEST_CASE("slices name their GPU by id, with its pipeline, data and tensor rank") {
  // tp 8, pp 2, dp 2 in full fidelity: GPU g = (pipeline rank x 2 + replica)
  // x 8 + tensor rank, so GPU 1 is pipeline rank 0, replica 0, tensor rank 1,
  // and GPU 25 pipeline rank 1, replica 1, tensor rank 1.
  const Run r = run_example("gpt-7.5b-32xa100-thin-link.json");
  check_threads(r.trace);
  auto place = [](int g) { return std::array<int, 3>{g / 16, g / 8 % 2, g % 8}; };
  CHECK(place(1) == std::array<int, 3>{0, 0, 1});
  CHECK(place(25) == std::array<int, 3>{1, 1, 1});
  std::set<int> computing;
  for (const auto& [thread, list] : r.trace.slices) {
    const std::string& name = r.trace.threads.at(thread);
    int gpu = -1, rank = -1, peer = -1;
    for (const Slice& s : list) {
      CAPTURE(name);
      CAPTURE(s.name);
      if (std::sscanf(name.c_str(), "GPU %d compute (pipeline rank %d)", &gpu, &rank) == 2) {
        computing.insert(gpu);
        CHECK(s.args["gpu"] == gpu);
        CHECK(s.args["pp_rank"] == rank);
        CHECK(s.args["pp_rank"] == place(gpu)[0]);
        CHECK(s.args["dp_rank"] == place(gpu)[1]);
        CHECK(s.args["tp_rank"] == place(gpu)[2]);
        if (s.name != "optimizer step") CHECK(s.args["stage"] == rank);  // one stage per rank
      } else if (std::sscanf(name.c_str(), "GPU %d send to GPU %d", &gpu, &peer) == 2) {
        CHECK(s.args["from_gpu"] == gpu);
        CHECK(s.args["to_gpu"] == peer);
        CHECK(s.args["from_pp_rank"] == place(gpu)[0]);
        CHECK(s.args["to_tp_rank"] == place(peer)[2]);
      }
      CHECK(!s.args.contains("rank"));  // the simulator's own index is not shown
    }
  }
  CHECK(computing.size() == 32);
}

TEST_CASE("compute slices carry their stage, micro-batch and layer count") {
  // GPT 1.7B: 24 layers over pp 4 stages, 6 each.
  const Run r = run_example("gpt-1.7b-8xa100.json");
  bool found = false;
  for (const auto& [thread, list] : r.trace.slices) {
    for (const Slice& s : list) {
      if (s.name != "F mb3 s1") continue;
      found = true;
      CHECK(s.args["stage"] == 1);
      CHECK(s.args["microbatch"] == 3);
      CHECK(s.args["layers"] == 6);
      CHECK(s.args["gpu"] == 2);  // stage 1 on pipeline rank 1: GPU (1 x 1 + 0) x 2 + 0
      CHECK(s.args["pp_rank"] == 1);
    }
  }
  CHECK(found);
}

TEST_CASE("collective slices say their kind, bytes per GPU, group size and dimension") {
  // GPT 1.7B on 8 GPUs as tp 1, pp 4, dp 2: each stage's gradients are
  // all-reduced over its 2 replicas, bucket by bucket; the buckets' bytes add
  // up to the stage's gradients. The tied embedding is all-reduced between
  // the first and last stages (2 GPUs, across the pipeline).
  const Run r = run_example("gpt-1.7b-8xa100.json", {"parallel.tp=1", "parallel.dp=2"});
  check_threads(r.trace);
  std::map<int, double> bytes;  // GPU 0 (stage 0) and the others' first replica, per stage
  int embedding = 0;
  for (const auto& [thread, list] : r.trace.slices) {
    for (const Slice& s : list) {
      if (starts_with(s.name, "grad reduce")) {
        CHECK(s.args["collective"] == "all-reduce");
        CHECK(s.args["group"] == "dp");
        CHECK(s.args["group_size"] == 2);
        bytes[s.args["stage"]] += s.args["bytes_per_gpu"].get<double>();
      }
      if (starts_with(s.name, "embedding")) {
        ++embedding;
        CHECK(s.args["collective"] == "all-reduce");
        CHECK(s.args["group"] == "pp");
        CHECK(s.args["group_size"] == 2);
        CHECK(s.args["bytes_per_gpu"].get<double>() ==
              doctest::Approx(r.whatif.costs->stages.front().embedding_grad_bytes).epsilon(1e-9));
      }
    }
  }
  REQUIRE(bytes.size() == 4);
  for (const auto& entry : bytes) {  // no structured binding: doctest's CAPTURE is a lambda
    const auto& stage = entry.first;
    const auto& b = entry.second;
    CAPTURE(stage);
    // Printed as whole bytes: at most half a byte off per bucket.
    CHECK(std::abs(b - r.whatif.costs->stages[stage].grad_bytes) <= 0.5 * 1000);
  }
  CHECK(embedding == 2);  // one slice on each end of the pipeline

  // ZeRO-1: gradients are reduce-scattered, and the updated parameters
  // all-gathered after the optimizer step, on the communication stream.
  const Run z = run_example("gpt-1.7b-8xa100.json", {"parallel.tp=1", "parallel.dp=2", "parallel.zero_stage=1"});
  check_threads(z.trace);
  int gathers = 0;
  for (const auto& [thread, list] : z.trace.slices) {
    for (const Slice& s : list) {
      if (starts_with(s.name, "grad reduce")) CHECK(s.args["collective"] == "reduce-scatter");
      if (starts_with(s.name, "param all-gather")) {
        ++gathers;
        CHECK(ends_with(z.trace.threads.at(thread), " comm"));
        CHECK(s.args["collective"] == "all-gather");
        CHECK(s.args["group_size"] == 2);
        CHECK(s.args["bytes_per_gpu"].get<double>() ==
              doctest::Approx(z.whatif.costs->stages[s.args["stage"].get<int>()].param_bytes).epsilon(1e-9));
      }
    }
  }
  CHECK(gathers == 4);  // one per stage
}

TEST_CASE("DeepSpeed's second gathers in the trace: on the group's queue, or a thread of their own") {
  // GPT 1.7B on pp 2, dp 4, ZeRO-3, every layer recomputed, a reuse
  // distance that gives back all but each layer's last weight: each of a
  // rank's 12 layer units gathers again in each of its 2 backwards. With
  // one group for gathers and scatters (the default) they queue on its
  // thread; with the scatters over a group of their own, on a thread beside
  // the gather stream. No thread's slices overlap either way.
  for (const char* group : {"shared", "separate"}) {
    CAPTURE(group);
    const Run d = run_example("gpt-1.7b-8xa100.json",
                              {"parallel.tp=1", "parallel.pp=2", "parallel.dp=4", "parallel.microbatch_size=2",
                               "parallel.global_batch=16", "parallel.zero_stage=3", "parallel.recompute=full",
                               "parallel.fsdp_max_reuse_distance=1e6",
                               std::string("parallel.fsdp_reduce_scatter_group=") + group});
    check_threads(d.trace);
    const std::string thread_name = std::string(group) == "shared" ? " sharding group (gathers and scatters)"
                                                                   : " param re-gather";
    int regathers = 0;
    for (const auto& [thread, list] : d.trace.slices) {
      for (const Slice& s : list) {
        if (!starts_with(s.name, "param re-gather")) continue;
        ++regathers;
        CHECK(ends_with(d.trace.threads.at(thread), thread_name));
        CHECK(s.args["collective"] == "all-gather");
      }
    }
    CHECK(regathers == 2 * 12 * 2);
  }
}

TEST_CASE("ZeRO-3 in the trace: each unit's gather, compute part and gradient scatter, named by unit") {
  // GPT 1.7B (24 layers) on pp 1, dp 8: the embedding, 24 layers and the
  // head are 26 units; one micro-batch, so one forward and one backward run.
  const Run z = run_example("gpt-1.7b-8xa100.json", {"parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                                     "parallel.microbatch_size=2", "parallel.global_batch=16",
                                                     "parallel.zero_stage=3"});
  check_threads(z.trace);
  int gathers = 0, forward_parts = 0, scatters = 0;
  double gathered_bytes = 0.0;
  for (const auto& entry : z.trace.slices) {
    const std::string& thread = z.trace.threads.at(entry.first);
    for (const Slice& s : entry.second) {
      if (starts_with(s.name, "param all-gather s0 unit ")) {
        ++gathers;
        CHECK(ends_with(thread, " sharding group (gathers and scatters)"));
        gathered_bytes += s.args["bytes_per_gpu"].get<double>();
      }
      if (starts_with(s.name, "F mb0 s0 unit ")) ++forward_parts;
      if (starts_with(s.name, "grad reduce-scatter s0 unit ")) {
        ++scatters;
        CHECK(ends_with(thread, " sharding group (gathers and scatters)"));
      }
    }
  }
  CHECK(gathers == 52);  // 26 for the forward, 26 again for the backward
  CHECK(forward_parts == 26);
  CHECK(scatters == 26);
  // Two gathers of every unit move the stage's parameters twice.
  CHECK(gathered_bytes == doctest::Approx(2 * z.whatif.costs->stages[0].param_bytes).epsilon(1e-6));
}

TEST_CASE("HSDP in the trace: a unit's gather and scatter name the shard group, its all-reduce the groups across") {
  // GPT 1.7B on dp 8 sharded in groups of 4: 26 units, one micro-batch.
  const Run z = run_example("gpt-1.7b-8xa100.json", {"parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                                     "parallel.microbatch_size=2", "parallel.global_batch=16",
                                                     "parallel.zero_stage=3", "parallel.fsdp_shard_size=4"});
  int gathers = 0, scatters = 0, all_reduces = 0, over_dp = 0;
  for (const auto& entry : z.trace.slices) {
    for (const Slice& s : entry.second) {
      gathers += starts_with(s.name, "param all-gather s0 unit ") && ends_with(s.name, " (shard group)") ? 1 : 0;
      scatters += starts_with(s.name, "grad reduce-scatter s0 unit ") && ends_with(s.name, " (shard group)") ? 1 : 0;
      all_reduces +=
          starts_with(s.name, "grad all-reduce s0 unit ") && ends_with(s.name, " (across shard groups)") ? 1 : 0;
      over_dp += ends_with(s.name, " (dp)") ? 1 : 0;
    }
  }
  CHECK(gathers == 52);  // every unit in the forward and again in the backward
  CHECK(scatters == 26);
  CHECK(all_reduces == 26);
  CHECK(over_dp == 0);
}

TEST_CASE("flow collectives' MoE backward: no empty slice; its parts numbered from 1; arrows end on compute") {
  // 4 Llama layers with 8 experts on pp 2 (2 MoE layers a stage), dp 4, ep
  // 4; with flow collectives each layer's dispatch and combine run as tasks
  // between the action's pieces of compute. A backward starts with its first
  // layer's combine, before any compute: the piece of no time that stands
  // for the action's start there is not a slice.
  const Run r = run_small_moe_flows(R"({"pp": 2, "dp": 4, "ep": 4, "microbatch_size": 1, "global_batch": 8})");
  check_threads(r.trace);
  // Stage 0's backward of micro-batch 0: layer by layer (in the order the
  // pass runs them) a combine, compute, a dispatch, compute. Cut at each
  // layer's dispatch and at the second layer's combine, its compute is 4
  // parts, [1/4] to [4/4], each once and each taking time.
  std::set<std::string> parts;
  for (const auto& entry : r.trace.slices) {
    for (const Slice& s : entry.second) {
      if (s.args.contains("microbatch") && !s.args.contains("collective")) {
        CAPTURE(s.name);
        CHECK(s.end > s.start);
      }
      if (starts_with(s.name, "B mb0 s0")) CHECK(parts.insert(s.name).second);
    }
  }
  CHECK(parts == std::set<std::string>{"B mb0 s0 [1/4]", "B mb0 s0 [2/4]", "B mb0 s0 [3/4]", "B mb0 s0 [4/4]"});
  // Each arrow's end lies inside a slice of its category on its thread
  // (Perfetto binds it to the slice enclosing it): the gradient sent back
  // to stage 0 ends on its backward's first part, after that combine (the
  // last backward, cut by gradient bucket as well, has more parts).
  const json events = json::parse(report::chrome_trace(*r.whatif.sim, r.scenario.cluster))["traceEvents"];
  int arrows = 0, into_backward = 0;
  for (const json& e : events) {
    if (e["ph"] != "f") continue;
    ++arrows;
    const std::int64_t at = ns(e["ts"]);
    const std::vector<Slice>& on = r.trace.slices.at({e["pid"].get<int>(), e["tid"].get<int>()});
    const auto inside = std::find_if(on.begin(), on.end(), [&](const Slice& s) { return s.start <= at && at < s.end; });
    CAPTURE(e["name"].get<std::string>());
    REQUIRE(inside != on.end());
    if (starts_with(inside->name, "B mb")) {
      ++into_backward;
      CHECK(inside->name.find(" [1/") != std::string::npos);
    }
  }
  // 2 micro-batches, each sent forward once and back once.
  CHECK(arrows == 4);
  CHECK(into_backward == 2);
}

TEST_CASE("ZeRO-3 of a MoE model with flow collectives: the experts' gathers and scatters on a thread of their own") {
  // 4 MoE layers (a unit each, with the embedding and the head: 6) on dp 8,
  // ep 4: each unit's experts are gathered and scattered over edp 2 after
  // the rest over dp 8, another group's collectives, beside the sharding
  // group's queue and one at a time.
  const Run r = run_small_moe_flows(
      R"({"dp": 8, "ep": 4, "microbatch_size": 1, "global_batch": 8, "zero_stage": 3})");
  check_threads(r.trace);
  int gathers = 0, scatters = 0;
  for (const auto& entry : r.trace.slices) {
    const std::string& thread = r.trace.threads.at(entry.first);
    for (const Slice& s : entry.second) {
      if (s.name.find("(edp, experts)") == std::string::npos) continue;
      CHECK(ends_with(thread, " experts' gathers and scatters (edp)"));
      CHECK(s.args["group"] == "edp");
      CHECK(s.args["group_size"] == 2);
      gathers += starts_with(s.name, "param all-gather s0 unit ") ? 1 : 0;
      scatters += starts_with(s.name, "grad reduce-scatter s0 unit ") ? 1 : 0;
    }
  }
  // The 4 layers' units, gathered for the forward and again for the
  // backward, and scattered once; the embedding and the head have no experts.
  CHECK(gathers == 8);
  CHECK(scatters == 4);
}

TEST_CASE("the network process says how many links it shows") {
  for (const char* example : {"gpt-1.7b-8xa100.json", "gpt-7.5b-32xa100-thin-link.json"}) {
    CAPTURE(example);
    const Run r = run_example(example);
    const lower::Simulation& sim = *r.whatif.sim;
    std::size_t carrying = 0;
    for (hw::LinkId l = 0; l < sim.network.rate_history().size(); ++l) {
      if (!sim.network.rate_history()[l].empty() && sim.network.bytes_carried()[l] > 0.0) ++carrying;
    }
    std::size_t tracks = 0;
    for (const auto& [name, samples] : r.trace.counters) tracks += starts_with(name, "link ");
    REQUIRE(carrying > 0);
    const std::string label = r.trace.processes.rbegin()->second;
    if (carrying > 16) {
      CHECK(tracks == 16);
      CHECK(label == fmt::format("network: the 16 busiest of {} links", carrying));
    } else {
      CHECK(tracks == carrying);
      CHECK(label == fmt::format("network: {} link{}", carrying, carrying == 1 ? "" : "s"));
    }
  }
}

TEST_CASE("names from the config are escaped: a switch named le\"af{n/2}\\x") {
  // The custom-network example with its leaves renamed; link names (and so
  // the link counters) hold the quote and the backslash.
  std::ifstream in(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-7.5b-32xa100-thin-link.json");
  json doc = json::parse(in);
  json& net = doc["cluster"]["network"];
  net["switches"][0]["name"] = "le\"af{n/2}\\x";
  net["links"][0]["to"] = "le\"af{n/2}\\x";
  net["links"][1]["from"] = "le\"af0\\x";
  net["links"][1]["to"] = "le\"af1\\x";
  const Run r = run(config::load_document(doc, "quote-net.json", TRAINSIM_SOURCE_DIR "/configs/examples"));
  check_threads(r.trace);
  CHECK(r.trace.counters.count("link le\"af0\\x->le\"af1\\x") == 1);
}

TEST_CASE("names from a layer table are escaped") {
  // Two layers named with a quote, a backslash and a newline, run in burst
  // parallelism on one node: slices are named after the layers.
  const json doc = json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": {"name": "two \"layers\"", "arch": "layers", "input_bytes_per_sample": 1000,
              "layers": [
                {"name": "conv\"1\\", "flops_per_sample": 1e9, "params": 1000, "output_bytes_per_sample": 1000,
                 "gemms": [[1024, 64, 27]]},
                {"name": "fc\n2", "flops_per_sample": 1e9, "params": 1000, "output_bytes_per_sample": 1000,
                 "gemms": [[1024, 64, 27]]}]},
    "parallel": {"global_batch": 8, "schedule": "burst"}
  })");
  const Run r = run(config::load_document(doc, "quoted-layers.json", "."));
  check_threads(r.trace);
  std::set<std::string> names;
  for (const auto& [thread, list] : r.trace.slices) {
    for (const Slice& s : list) names.insert(s.name);
  }
  CHECK(names.count("F conv\"1\\") == 1);
  CHECK(names.count("B fc\n2") == 1);
}

TEST_CASE("slices start on whole nanoseconds and end a picosecond short of one") {
  const Run r = run_example("gpt-1.7b-8xa100.json");
  const std::string text = report::chrome_trace(*r.whatif.sim, r.scenario.cluster);
  const json doc = json::parse(text);
  int slices = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e.contains("ts")) {
      // Three decimals: a whole number of nanoseconds.
      const double ns = e["ts"].get<double>() * 1000.0;
      CHECK(std::abs(ns - std::round(ns)) < 1e-3);
    }
    if (e.contains("dur")) {
      ++slices;
      const double ps = e["dur"].get<double>() * 1e6;
      CHECK((ps == 0.0 || std::abs(std::fmod(std::round(ps) + 1.0, 1000.0)) == 0.0));
    }
  }
  CHECK(slices > 0);
  CHECK(text.find("\"ts\":0.000,") != std::string::npos);
}

}  // namespace report_chrome_trace_test
