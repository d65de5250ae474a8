#include <doctest/doctest.h>

#include <algorithm>

#include "lower/simulation.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"
#include "schedule/sharding.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_pipeline_test {

using namespace trainsim;
using core::Time;

namespace {

hw::ClusterSpec cluster() {
  hw::ClusterSpec c;
  c.nodes = 2;
  c.node.gpus_per_node = 8;
  c.node.nvlink_gb_per_s = 100;  // 100 B/ns
  c.node.nvlink_latency_us = 1.0;
  c.node.nic_gbit_per_s = 80;  // 10 GB/s = 10 B/ns
  c.node.nics_per_node = 8;
  c.node.nic_latency_us = 2.0;
  c.node.gpu.memory_gb = 80;
  return c;
}

// Every stage: F and B as given, A bytes of activations per micro-batch, no
// communication, no end-of-iteration work.
workload::StageCosts uniform(int stages, Time f, Time b, std::int64_t activation) {
  workload::StageCosts costs;
  for (int s = 0; s < stages; ++s) {
    workload::StageCost c;
    c.forward = f;
    c.input_grad = b;
    c.activation_bytes = activation;
    costs.stages.push_back(c);
  }
  return costs;
}

// A ZeRO-3 unit holding the whole stage: all of F, I and W, `bytes` of
// parameters gathered in `gather`, gradients scattered in `scatter`.
workload::ShardUnit whole_stage_unit(Time gather, double bytes, Time scatter) {
  workload::ShardUnit u;
  u.gather = gather;
  u.gather_bytes = bytes;
  u.grad_scatter = scatter;
  u.grad_bytes = bytes;
  u.forward_share = u.input_grad_share = u.weight_grad_share = 1.0;
  return u;
}

// Pipeline rank r runs on GPU r * tp (tp = 8 puts each rank on its own node).
// With `vp` virtual stages per rank, `costs` holds p x vp stages. A stage with
// ZeRO-3 gather costs gets the UNSHARD/RESHARD pass, as the driver does.
std::unique_ptr<lower::Simulation> simulate(const std::string& schedule, int p, int m,
                                            const workload::StageCosts& costs, int tp = 1,
                                            const lower::Options& options = {}, int vp = 1,
                                            bool twobp_concat = false, workload::Plan plan = {}) {
  const schedule::Schedule* plugin = schedule::find_schedule(schedule);
  const schedule::Shape shape = schedule::Shape::placed(plugin->placement(), p, vp, m);
  schedule::Program program = schedule::with_communication(plugin->program(shape), shape);
  if (costs.stages.front().sharded()) {
    program = schedule::with_sharding(program, plan.reshard_after_forward, !plan.grad_sync_after_last_backward);
  }
  const auto deps = schedule::check(program, shape);
  plan.tp = tp;
  plan.pp = p;
  plan.vp = vp;
  plan.twobp_concat = twobp_concat;
  auto sim = lower::lower(program, shape, lower::wire(program, shape, deps), costs, cluster(), plan, options);
  lower::run(*sim);
  return sim;
}

// Uniform stages with the backward split: F, I and W as given.
workload::StageCosts uniform_split(int stages, Time f, Time i, Time w) {
  workload::StageCosts costs = uniform(stages, f, i, 0);
  for (auto& c : costs.stages) c.weight_grad = w;
  return costs;
}

}  // namespace

TEST_CASE("uniform costs: GPipe and 1F1B take (m + p - 1)(F + B)") {
  // With equal F and B everywhere and free communication, both schedules finish
  // in m + p - 1 slots of F and B each (the pipeline fills and drains once).
  const Time F = Time::ps(3000), B = Time::ps(5000);
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int p : {1, 2, 4, 8}) {
      for (int m : {1, 3, 8, 16}) {
        CAPTURE(name);
        CAPTURE(p);
        CAPTURE(m);
        const auto sim = simulate(name, p, m, uniform(p, F, B, 0));
        CHECK(sim->timeline.makespan == (F + B) * (m + p - 1));
      }
    }
  }
}

TEST_CASE("uniform costs: each rank idles (p - 1)(F + B) of the iteration") {
  // Busy m(F + B) out of (m + p - 1)(F + B): bubble = (p - 1) / (m + p - 1) on every rank.
  const Time F = Time::ps(1000), B = Time::ps(2000);
  const int p = 4, m = 8;
  const auto sim = simulate("1f1b", p, m, uniform(p, F, B, 0));
  for (int r = 0; r < p; ++r) {
    Time busy;
    for (core::TaskId id = 0; id < sim->graph.size(); ++id) {
      if (sim->info[id].rank == r && sim->info[id].kind == lower::TaskKind::kCompute) {
        busy += sim->timeline.end[id] - sim->timeline.start[id];
      }
    }
    CHECK(busy == (F + B) * m);
  }
}

TEST_CASE("peak activations: 1F1B holds min(p - r, m) micro-batches, GPipe holds m") {
  const Time F = Time::ps(1000), B = Time::ps(2000);
  const std::int64_t A = 1000;
  for (int p : {2, 4, 8}) {
    for (int m : {1, 3, 8, 16}) {
      CAPTURE(p);
      CAPTURE(m);
      const auto one = simulate("1f1b", p, m, uniform(p, F, B, A));
      const auto gp = simulate("gpipe", p, m, uniform(p, F, B, A));
      for (int r = 0; r < p; ++r) {
        CHECK(one->memory.pools()[r].peak() == A * std::min(p - r, m));
        CHECK(gp->memory.pools()[r].peak() == A * m);
      }
    }
  }
}

TEST_CASE("a transfer between stages costs latency plus bytes over bandwidth") {
  // p = 2, m = 1, ranks on GPUs 0 and 1 of one node (NVLink: 1 us, 100 B/ns).
  // 1e6 bytes each way: 1 us + 1e6 / 100 ns = 11 us per transfer.
  // Makespan = F + 11 + F + B + 11 + B with F = 10 us, B = 20 us: 82 us.
  workload::StageCosts costs = uniform(2, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].send_forward_bytes = 1e6;
  costs.stages[1].send_backward_bytes = 1e6;
  const auto sim = simulate("1f1b", 2, 1, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(82));
}

TEST_CASE("across nodes a transfer takes the NICs") {
  // Same as above with the ranks on GPUs 0 and 8 (different nodes): 2 us + 1e6 / 10 ns = 102 us
  // per transfer; makespan = 10 + 102 + 10 + 20 + 102 + 20 = 264 us.
  workload::StageCosts costs = uniform(2, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].send_forward_bytes = 1e6;
  costs.stages[1].send_backward_bytes = 1e6;
  const auto sim = simulate("gpipe", 2, 1, costs, 8);
  CHECK(sim->timeline.makespan == Time::microseconds(264));
}

TEST_CASE("the gradient all-reduce and optimizer step end the iteration") {
  // p = 1, m = 2: F B F B = 2 * 30 us, then all-reduce 5 us, then optimizer 7 us: 72 us.
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].grad_bucket_share = {1.0};
  costs.stages[0].grad_bucket_reduce = {Time::microseconds(5)};
  costs.stages[0].optimizer_step = Time::microseconds(7);
  const auto sim = simulate("1f1b", 1, 2, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(72));
}

TEST_CASE("model state is resident from the start") {
  workload::StageCosts costs = uniform(2, Time::ps(10), Time::ps(20), 100);
  costs.stages[0].model_state_bytes = 5000;
  const auto sim = simulate("gpipe", 2, 4, costs);
  // Stage 0: 5000 + 4 micro-batches x 100 = 5400.
  CHECK(sim->memory.pools()[0].peak() == 5400);
  CHECK(sim->memory.pools()[0].timeline().front().bytes_in_use >= 5000);
}

TEST_CASE("transfers between two ranks go first-in first-out") {
  // GPipe, p = 2, m = 2, F = 1 us, B = 2 us, 1e6 bytes each way over NVLink
  // (1 us latency + 1e6 B / 100 B/ns = 10 us).
  // Rank 0: F0 0..1, F1 1..2. Send 0: 1..12. Send 1 waits for send 0: 12..23
  // (shared fairly instead, both would end at 22).
  // Rank 1: F0 12..13, F1 23..24, B0 24..26, B1 26..28.
  // Gradient sends: 26..37 and 37..48. Rank 0: B0 37..39, B1 48..50.
  workload::StageCosts costs = uniform(2, Time::microseconds(1), Time::microseconds(2), 0);
  costs.stages[0].send_forward_bytes = 1e6;
  costs.stages[1].send_backward_bytes = 1e6;
  const auto sim = simulate("gpipe", 2, 2, costs);
  std::vector<core::TaskId> sends;
  for (core::TaskId id = 0; id < sim->graph.size(); ++id) {
    if (sim->info[id].kind == lower::TaskKind::kTransfer && sim->info[id].rank == 0) sends.push_back(id);
  }
  REQUIRE(sends.size() == 2);
  CHECK(sim->timeline.start[sends[0]] == Time::microseconds(1));
  CHECK(sim->timeline.end[sends[0]] == Time::microseconds(12));
  CHECK(sim->timeline.start[sends[1]] == Time::microseconds(12));
  CHECK(sim->timeline.end[sends[1]] == Time::microseconds(23));
  CHECK(sim->timeline.makespan == Time::microseconds(50));
}

TEST_CASE("a tied embedding's gradient all-reduce waits for both ends of the pipeline") {
  // p = 2, m = 1, F = 10 us, B = 20 us, no transfer cost: rank 0 F 0..10,
  // rank 1 F 10..20 and B 20..40, rank 0 B 40..60. The 5 us embedding
  // all-reduce on each end starts when both ends are done (60) and ends at 65;
  // the optimizer steps (0 us) follow.
  workload::StageCosts costs = uniform(2, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].embedding_grad_all_reduce = Time::microseconds(5);
  costs.stages[1].embedding_grad_all_reduce = Time::microseconds(5);
  const auto sim = simulate("1f1b", 2, 1, costs);
  for (core::TaskId id = 0; id < sim->graph.size(); ++id) {
    if (sim->info[id].kind == lower::TaskKind::kEmbeddingAllReduce) {
      CHECK(sim->timeline.start[id] == Time::microseconds(60));
    }
  }
  CHECK(sim->timeline.makespan == Time::microseconds(65));
}

// One stage: F 10 us, B 30 us, gradients in 3 equal buckets of 5 us each,
// a 2 us optimizer step and a 7 us parameter all-gather (ZeRO-1/2).
namespace {
workload::StageCosts three_buckets() {
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(30), 0);
  costs.stages[0].grad_bucket_share = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  costs.stages[0].grad_bucket_reduce = {Time::microseconds(5), Time::microseconds(5), Time::microseconds(5)};
  costs.stages[0].optimizer_step = Time::microseconds(2);
  costs.stages[0].param_all_gather = Time::microseconds(7);
  return costs;
}
}  // namespace

TEST_CASE("gradient buckets start as soon as their part of the last backward ends") {
  // p = 1, m = 1: F 0..10 us, B 10..40 us cut in 3 equal parts ending at 20, 30, 40.
  // Bucket reductions of 5 us each: 20..25, 30..35, 40..45; optimizer 2 us at 45..47;
  // then a 7 us parameter all-gather (ZeRO-1/2): 47..54.
  const workload::StageCosts costs = three_buckets();
  const auto sim = simulate("1f1b", 1, 1, costs);
  std::vector<Time> bucket_starts;
  for (core::TaskId id = 0; id < sim->graph.size(); ++id) {
    if (sim->info[id].kind == lower::TaskKind::kGradReduce) bucket_starts.push_back(sim->timeline.start[id]);
  }
  REQUIRE(bucket_starts.size() == 3);
  // Thirds of 30 us round to the picosecond; compare in microseconds.
  CHECK(bucket_starts[0].to_microseconds() == doctest::Approx(20).scale(0));
  CHECK(bucket_starts[1].to_microseconds() == doctest::Approx(30).scale(0));
  CHECK(bucket_starts[2].to_microseconds() == doctest::Approx(40).scale(0));
  CHECK(sim->timeline.makespan == Time::microseconds(54));
}

TEST_CASE("compute slows while a gradient bucket is reduced beside it") {
  // As in the bucket test, with comm_slowdown 1 (half speed while a collective
  // runs on the GPU): F 0..10; B's parts of 10 us each: 10..20; bucket 0 runs
  // 20..25 while part 2 does 2.5 us of work, the other 7.5 end at 32.5; bucket 1
  // runs 32.5..37.5 while part 3 does 2.5, the rest ends at 45; bucket 2
  // 45..50; optimizer 50..52; parameter all-gather 52..59.
  const workload::StageCosts costs = three_buckets();
  lower::Options options;
  options.comm_slowdown = 1.0;
  const auto sim = simulate("1f1b", 1, 1, costs, 1, options);
  CHECK(sim->timeline.makespan.to_microseconds() == doctest::Approx(59).scale(0));
}

TEST_CASE("ZeRO-3 with the stage as one unit gathers one action ahead and scatters each backward's gradients") {
  // p = 1, m = 2 (1F1B: F0 F1 B0 B1), F = 10 us, B = 20 us, all-gather 5 us,
  // reduce-scatter 3 us, gathers on their own stream, each at most one action
  // ahead (it waits for the action before last):
  //   gather F0 0..5, F0 5..15; gather F1 5..10, F1 15..25;
  //   gather B0 waits F0: 15..20, B0 25..45; scatter B0 45..48;
  //   gather B1 waits F1: 25..30, B1 45..65; scatter B1 65..68;
  //   REDUCE_GRAD (nothing left) and the optimizer (0 us) at 68.
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].shard_units = {whole_stage_unit(Time::microseconds(5), 1000, Time::microseconds(3))};
  const auto sim = simulate("1f1b", 1, 2, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(68));
  // Two gathered copies can be held at once (the current action's and the next one's).
  CHECK(sim->memory.pools()[0].peak() == 2000);
}

TEST_CASE("FSDP under torch.distributed.pipelining: one gather, gradients held whole, one scatter after the last backward") {
  // p = 1, m = 2 (1F1B: F0 B0 F1 B1); F = 10 us, B = 20 us, one unit of
  // 1000 bytes gathered in 5 us, its 1000 bytes of gradients scattered in
  // 3 us; reshard after forward off, as TorchTitan runs pipelines, and
  // parallel.fsdp_grad_sync = "last-backward": no backward gives the
  // parameters back, so the stage is gathered once; no backward syncs, so
  // one scatter follows the last:
  //   gather 0..5, F0 5..15, B0 15..35, F1 35..45, B1 45..65, scatter 65..68.
  // Memory: the parameters 0..65 (their last use), the gradients whole from
  // B0's start to the scatter's end, 15..68: 2000 bytes at most, 1000 while
  // the scatter runs, none after.
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].shard_units = {whole_stage_unit(Time::microseconds(5), 1000, Time::microseconds(3))};
  workload::Plan plan;
  plan.reshard_after_forward = false;
  plan.grad_sync_after_last_backward = true;
  // (gather starts, scatter starts, bytes in use at 66 us) of a run, in us.
  auto comm_and_memory = [](const lower::Simulation& sim) {
    std::vector<double> gathers, scatters;
    for (core::TaskId t = 0; t < sim.info.size(); ++t) {
      const double start = sim.timeline.start[t].to_microseconds();
      if (sim.info[t].kind == lower::TaskKind::kParamAllGather) gathers.push_back(start);
      if (sim.info[t].kind == lower::TaskKind::kGradReduce && sim.info[t].unit >= 0) scatters.push_back(start);
    }
    std::int64_t at_66 = -1;
    for (const hw::MemorySample& s : sim.memory.pools()[0].timeline()) {
      if (s.time <= Time::microseconds(66)) at_66 = s.bytes_in_use;
    }
    return std::make_tuple(gathers, scatters, at_66);
  };
  const auto last = simulate("1f1b", 1, 2, costs, 1, {}, 1, false, plan);
  CHECK(last->timeline.makespan == Time::microseconds(68));
  CHECK(comm_and_memory(*last) == std::make_tuple(std::vector<double>{0.0}, std::vector<double>{65.0}, std::int64_t{1000}));
  CHECK(last->memory.pools()[0].peak() == 2000);
  CHECK(last->memory.pools()[0].in_use() == 0);
  // Syncing after each run of backwards (the default): F0 B0 and F1 B1 each
  // gather (the second prefetched on the gather stream, 5..10) and scatter
  // (35..38, 65..68); nothing is held at 66 us (the parameters went back at
  // B1's end), the two gathered copies overlapping 5..35 make the peak.
  plan.grad_sync_after_last_backward = false;
  const auto each = simulate("1f1b", 1, 2, costs, 1, {}, 1, false, plan);
  CHECK(each->timeline.makespan == Time::microseconds(68));
  CHECK(comm_and_memory(*each) ==
        std::make_tuple(std::vector<double>{0.0, 5.0}, std::vector<double>{35.0, 65.0}, std::int64_t{0}));
  CHECK(each->memory.pools()[0].peak() == 2000);
}

TEST_CASE("ZeRO-3 unit by unit: the next unit is gathered while one computes, each freed after its use") {
  // p = 1, m = 1: F0 then B0. Two units, each half of F = 10 us and of
  // B = 20 us, each gathered in 4 us (1000 bytes) and scattered in 3 us.
  // Prefetch 1: gather i may start once gather i - 2's first use has ended.
  //   forward:  g0 (unit 0) 0..4, g1 (unit 1) 4..8; F u0 4..9, F u1 9..14;
  //   backward, unit 1 first: g2 (u1) after F u0: 9..13, g3 (u0) after F u1: 14..18;
  //             B u1 14..24, B u0 24..34; scatter u1 24..27, scatter u0 34..37.
  // Memory: each unit from its gather's start to its last use's end: two at
  // most (g1 while F u0 runs, g2 while F u1 runs, ...).
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  workload::ShardUnit half = whole_stage_unit(Time::microseconds(4), 1000, Time::microseconds(3));
  half.forward_share = half.input_grad_share = half.weight_grad_share = 0.5;
  costs.stages[0].shard_units = {half, half};
  const auto sim = simulate("1f1b", 1, 1, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(37));
  CHECK(sim->memory.pools()[0].peak() == 2000);
  std::vector<std::pair<int, double>> gathers;  // (unit, start in us), in task order
  for (core::TaskId t = 0; t < sim->info.size(); ++t) {
    if (sim->info[t].kind != lower::TaskKind::kParamAllGather) continue;
    CHECK(sim->info[t].units == 2);
    gathers.emplace_back(sim->info[t].unit, sim->timeline.start[t].to_microseconds());
  }
  CHECK(gathers == std::vector<std::pair<int, double>>{{0, 0.0}, {1, 4.0}, {1, 9.0}, {0, 14.0}});
  // No prefetch: each gather waits for the unit before it to finish computing.
  //   g0 0..4, F u0 4..9; g1 9..13, F u1 13..18; g2 (u1) 18..22, B u1 22..32;
  //   g3 (u0) 32..36, B u0 36..46; scatter u0 46..49.
  lower::Options none;
  workload::Plan plan;
  plan.fsdp_prefetch = 0;
  CHECK(simulate("1f1b", 1, 1, costs, 1, none, 1, false, plan)->timeline.makespan == Time::microseconds(49));
}

TEST_CASE("uniform costs: interleaved 1F1B and breadth-first take (m v + p - 1)(F + B) per chunk") {
  // Each chunk costs F and B; a rank's work is m v (F + B) and the pipeline
  // fills and drains once, over p - 1 chunk slots: the bubble (p - 1)(F + B)
  // is 1/v of the non-interleaved one for the same model (Narayanan et al. 2021, §2.2.2).
  const Time F = Time::ps(3000), B = Time::ps(5000);
  for (const char* name : {"interleaved-1f1b", "breadth-first"}) {
    for (int p : {1, 2, 4}) {
      for (int v : {1, 2, 4}) {
        for (int m : {p, 2 * p, 4 * p}) {
          CAPTURE(name);
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          const auto sim = simulate(name, p, m, uniform(p * v, F, B, 0), 1, {}, v);
          CHECK(sim->timeline.makespan == (F + B) * (m * v + p - 1));
        }
      }
    }
  }
}

TEST_CASE("uniform costs: 2BP takes (m + p - 1)(F + I) + m W") {
  // 1F1B's shape with I in place of B, then rank 0, the last to finish its
  // I's, runs its m deferred W's.
  const Time F = Time::ps(3000), I = Time::ps(3500), W = Time::ps(2500);
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 16}) {
      CAPTURE(p);
      CAPTURE(m);
      const auto sim = simulate("2bp", p, m, uniform_split(p, F, I, W));
      CHECK(sim->timeline.makespan == (F + I) * (m + p - 1) + W * m);
    }
  }
}

TEST_CASE("uniform costs: ZB-H1 idles (p - 1)(F + I - W), ZB-H2 (p - 1) max(F, F + I - 2W)") {
  // m >= p and W <= I. ZB-H1's W's fill all of 1F1B's bubble but F + I - W
  // per stage; ZB-H2's longer warm-up leaves only the fill, (p - 1) F, unless
  // two W's cannot cover an F + I.
  for (const auto& [f, i, w] : {std::tuple{1000, 1000, 1000}, std::tuple{1000, 1500, 700}, std::tuple{1000, 1200, 1000}}) {
    const Time F = Time::ps(f), I = Time::ps(i), W = Time::ps(w);
    for (int p : {2, 4, 8}) {
      for (int m : {p, 2 * p, 3 * p}) {
        const int f_ps = f, i_ps = i, w_ps = w;  // copies: doctest's CAPTURE is a lambda
        CAPTURE(f_ps);
        CAPTURE(i_ps);
        CAPTURE(w_ps);
        CAPTURE(p);
        CAPTURE(m);
        const Time work = (F + I + W) * m;
        CHECK(simulate("zb-h1", p, m, uniform_split(p, F, I, W))->timeline.makespan == work + (F + I - W) * (p - 1));
        if (m >= 2 * p) {
          const Time fill = std::max(F, F + I - W - W);
          CHECK(simulate("zb-h2", p, m, uniform_split(p, F, I, W))->timeline.makespan == work + fill * (p - 1));
        }
      }
    }
  }
}

TEST_CASE("micro-batches in flight: ZB-H1 as 1F1B (p - r), ZB-H2 2(p - r) - 1, interleaved and breadth-first") {
  // Activations A are held from F to I (W keeps nothing here): rank r's peak
  // is the most forwards it runs ahead of its I's. ZB-H1 warms up with
  // p - r - 1 and adds one; ZB-H2 with 2(p - r) - 2. Breadth-first holds all
  // m v chunk-micro-batches, as GPipe; interleaved 1F1B (m = p) too, since
  // Megatron-LM runs every forward first when m = p.
  const Time F = Time::ps(1000), I = Time::ps(1000), W = Time::ps(1000);
  const std::int64_t A = 1000;
  for (int p : {2, 4}) {
    const int m = 3 * p;
    auto split = uniform_split(p, F, I, W);
    for (auto& c : split.stages) c.activation_bytes = A;
    const auto h1 = simulate("zb-h1", p, m, split);
    const auto h2 = simulate("zb-h2", p, m, split);
    for (int r = 0; r < p; ++r) {
      CAPTURE(p);
      CAPTURE(r);
      CHECK(h1->memory.pools()[r].peak() == A * (p - r));
      CHECK(h2->memory.pools()[r].peak() == A * (2 * (p - r) - 1));
    }
    const int v = 2;
    const auto bf = simulate("breadth-first", p, p, uniform(p * v, F, I, A), 1, {}, v);
    const auto il = simulate("interleaved-1f1b", p, p, uniform(p * v, F, I, A), 1, {}, v);
    for (int r = 0; r < p; ++r) {
      CHECK(bf->memory.pools()[r].peak() == A * p * v);
      CHECK(il->memory.pools()[r].peak() == A * p * v);
    }
  }
}

TEST_CASE("2BP keeps what every W needs until the end: memory grows with m") {
  // A = 0, W operands Wb: after its I's a rank holds m x Wb until the W's run.
  // ZB-H1 runs W's as it goes: rank r owes at most r of them, plus the one
  // whose operands its current I is making.
  const Time F = Time::ps(1000), I = Time::ps(1000), W = Time::ps(1000);
  const std::int64_t Wb = 10;
  const int p = 4;
  for (int m : {4, 8, 16}) {
    auto costs = uniform_split(p, F, I, W);
    for (auto& c : costs.stages) c.weight_grad_bytes = Wb;
    const auto two = simulate("2bp", p, m, costs);
    const auto h1 = simulate("zb-h1", p, m, costs);
    for (int r = 0; r < p; ++r) {
      CAPTURE(m);
      CAPTURE(r);
      CHECK(two->memory.pools()[r].peak() == Wb * m);
      CHECK(h1->memory.pools()[r].peak() == Wb * (r + 1));
    }
  }
}

TEST_CASE("the GEMM inputs W reads, kept since F, are not counted twice while I runs") {
  // p = 1, m = 1, zb-h1: F0 I0 W0. Activations A = 100 of which K = 30 are
  // the GEMM inputs W reads; W's operands Wb = 50 (those 30 plus 20 of output
  // gradients I makes). During F: 100. I's start adds Wb - K = 20: 120, the
  // peak (counting the inputs again would give 150). I's end gives back
  // A - K = 70, leaving Wb = 50 until W ends.
  auto costs = uniform_split(1, Time::ps(1000), Time::ps(1000), Time::ps(1000));
  costs.stages[0].activation_bytes = 100;
  costs.stages[0].weight_grad_bytes = 50;
  costs.stages[0].weight_grad_kept_bytes = 30;
  const auto sim = simulate("zb-h1", 1, 1, costs);
  CHECK(sim->memory.pools()[0].peak() == 120);
  CHECK(sim->memory.pools()[0].in_use() == 0);
}

TEST_CASE("parallel.twobp_concat runs a rank's deferred W's as one op") {
  // p = 1, m = 4: F I F I F I F I, then one W over all four micro-batches,
  // timed at Wc (here 3 us instead of 4 x 1 us): 4 (2 + 1) + 3 = 15 us.
  auto costs = uniform_split(1, Time::microseconds(2), Time::microseconds(1), Time::microseconds(1));
  costs.stages[0].weight_grad_concat = Time::microseconds(3);
  CHECK(simulate("2bp", 1, 4, costs)->timeline.makespan == Time::microseconds(16));
  CHECK(simulate("2bp", 1, 4, costs, 1, {}, 1, true)->timeline.makespan == Time::microseconds(15));
}

TEST_CASE("ZeRO-3 with breadth-first: one gather per pass, one scatter after the last backward") {
  // GPipe-like order on p = 1, m = 3: windows (F0 F1 F2) and (B0 B1 B2).
  // F = 10 us, B = 20 us, gather 5 us, reduce-scatter 3 us:
  //   gather 1: 0..5; F0 5..15, F1 15..25, F2 25..35;
  //   gather 2 (no window before last to wait for): 5..10;
  //   B0 35..55, B1 55..75, B2 75..95; one scatter 95..98.
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].shard_units = {whole_stage_unit(Time::microseconds(5), 1000, Time::microseconds(3))};
  const auto sim = simulate("breadth-first", 1, 3, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(98));
  int gathers = 0;
  for (const auto& info : sim->info) gathers += info.kind == lower::TaskKind::kParamAllGather;
  CHECK(gathers == 2);
  // Both windows' parameters are held from 5 us (the second was prefetched).
  CHECK(sim->memory.pools()[0].peak() == 2000);
}

TEST_CASE("zb-1p and zb-2p: placed by time under their memory limits, no slower than the handcrafted ones") {
  // F = I = W (the shape's default times match these costs): the heuristic
  // must keep at most p (zb-1p) or 2p (zb-2p) micro-batches in flight (F
  // done, W not) on every rank, and finish no later than ZB-H1 / ZB-H2,
  // m(F + I + W) + (p - 1)(F + I - W) and m(F + I + W) + (p - 1)F.
  const Time F = Time::ps(1000), I = Time::ps(1000), W = Time::ps(1000);
  for (int p : {2, 4, 8}) {
    for (int m : {p, 2 * p, 3 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      for (const auto& [name, limit] : {std::pair{"zb-1p", 1}, std::pair{"zb-2p", 2}}) {
        const schedule::Program prog = schedule::find_schedule(name)->program(schedule::Shape::linear(p, m));
        for (const auto& actions : prog.ranks) {
          int in_flight = 0, most = 0;
          for (const auto& a : actions) {
            in_flight += a.op == schedule::Op::kForward ? 1 : a.op == schedule::Op::kWeightGrad ? -1 : 0;
            most = std::max(most, in_flight);
          }
          CHECK(most <= limit * p);
        }
      }
      const Time one = simulate("zb-1p", p, m, uniform_split(p, F, I, W))->timeline.makespan;
      const Time two = simulate("zb-2p", p, m, uniform_split(p, F, I, W))->timeline.makespan;
      CHECK(one <= (F + I + W) * m + (F + I - W) * (p - 1));
      CHECK(two <= one);
    }
  }
}

TEST_CASE("zb-v: near zero bubble, never slower than zb-h1 on the same ranks") {
  // F = I = W per chunk, free communication. Rank p - 1 cannot start before
  // the forward reaches it, (p - 1) F, and then runs 2m chunks x (F + I + W):
  // at least 6 m F + (p - 1) F, which zb-v meets when m = p (and for every m >= p
  // when p <= 2). The fair rival holds the same model on the same p GPUs at
  // the same memory: zb-h1 with one stage of two chunks per rank (2F, 2I, 2W),
  // m (6F) + (p - 1)(2F + 2I - 2W) = 6 m F + 2 (p - 1) F; zb-v's bubble is at
  // most that and usually about half.
  const Time F = Time::ps(1000);
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {p, p + 1, 2 * p, 2 * p + 3, 4 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const Time v = simulate("zb-v", p, m, uniform_split(2 * p, F, F, F), 1, {}, 2)->timeline.makespan;
      const Time h1 = simulate("zb-h1", p, m, uniform_split(p, F * 2, F * 2, F * 2))->timeline.makespan;
      CHECK(h1 == F * (6 * m + 2 * (p - 1)));
      CHECK(v >= F * (6 * m + p - 1));
      CHECK(v <= h1);
      if (m == p || p <= 2) CHECK(v == F * (6 * m + p - 1));
    }
  }
}

TEST_CASE("blocking sends hold the sender's next compute until the send arrives") {
  // The FIFO case above with options.blocking_sends: sends take 11 us each.
  // Rank 0: F0 0..1, send 1..12, F1 waits for it 12..13, send 13..24.
  // Rank 1: F0 12..13, F1 24..25, B0 25..27, send 27..38, B1 waits 38..40,
  // send 40..51. Rank 0: B0 38..40, B1 51..53. Makespan 53 us (50 overlapped).
  workload::StageCosts costs = uniform(2, Time::microseconds(1), Time::microseconds(2), 0);
  costs.stages[0].send_forward_bytes = 1e6;
  costs.stages[1].send_backward_bytes = 1e6;
  lower::Options options;
  options.blocking_sends = true;
  const auto sim = simulate("gpipe", 2, 2, costs, 1, options);
  CHECK(sim->timeline.makespan == Time::microseconds(53));
}

TEST_CASE("dualpipev: within the DualPipe README's bubble, PP + 1 chunk activations a rank") {
  // p = 2, m = 4, F = I = W = 1 (B = 2), free communication, by hand. Rank 0
  // holds stages 0 and 3, rank 1 stages 1 and 2. Rank 0: F s0 mb0-2 0-3,
  // F s3 mb0 3-4, I s3 mb0 4-5, W 5-6, F s3 mb1 6-7 (s2 mb1 at 5), F s0 mb3
  // 7-8, B s3 mb1 8-10, F s3 mb2 10-11, B s0 mb0 11-13, B s3 mb2 13-15,
  // F s3 mb3 15-16, B s0 mb1 17-19, B s3 mb3 19-21, I s0 mb2 21-22, W 22-23,
  // I s0 mb3 23-24, W 24-25. Rank 1: F s1/s2 mb0, mb1 1-5, F s1 mb2 5-6,
  // B s2 mb0 6-8, F s2 mb2 8-9, B s1 mb0 9-11, F s1 mb3 11-12, B s2 mb1
  // 12-14, F s2 mb3 14-15, B s1 mb1 15-17, B s2 mb2 17-19, B s1 mb2 19-21,
  // I s2 mb3 21-22, I s1 mb3 22-23, W 23-24, W 24-25. Makespan 25 = 2m x 3 + 1.
  const Time F = Time::ps(1000);
  CHECK(simulate("dualpipev", 2, 4, uniform_split(4, F, F, F), 1, {}, 2)->timeline.makespan == F * 25);
  // The README's bubble for 2p stages on p ranks is (p - 1)(F&B + B - 3W),
  // F&B the time of an overlapped forward-backward pair: with nothing to
  // overlap (a dense model) F + B, so the bound is (p - 1)(F + 2I - W). The
  // simulated schedule stays within it, and above the work itself.
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p + 2}) {
      for (auto [f, i, w] : {std::tuple{1, 1, 1}, std::tuple{2, 1, 1}, std::tuple{1, 2, 1}, std::tuple{1, 1, 2}}) {
        CAPTURE(p);
        CAPTURE(m);
        const Time v = simulate("dualpipev", p, m, uniform_split(2 * p, F * f, F * i, F * w), 1, {}, 2)->timeline.makespan;
        const Time work = F * (2 * m * (f + i + w));
        CHECK(v >= work);
        CHECK(v <= work + F * ((p - 1) * (f + 2 * i - w)));
      }
    }
  }
  // Memory: a chunk's activation from its F to its backward's end. Each rank
  // holds 2(p - r - 1) + 2(r + 1) = 2p chunks after its warm-up and one more
  // in the main phase's F0 B1 F1 B0: PP + 1 = 2p + 1, the README's figure.
  const std::int64_t A = 1000;
  for (int p : {2, 4}) {
    for (int m : {2 * p, 3 * p}) {
      auto costs = uniform_split(2 * p, F, F, F);
      for (auto& c : costs.stages) c.activation_bytes = A;
      const auto sim = simulate("dualpipev", p, m, costs, 1, {}, 2);
      for (int r = 0; r < p; ++r) {
        CAPTURE(p);
        CAPTURE(r);
        CHECK(sim->memory.pools()[r].peak() == A * (2 * p + 1));
      }
    }
  }
}

TEST_CASE("dualpipe: within the DualPipe README's bubble, PP + 1 chunk activations a rank, copies add their gradients") {
  // p = 2, m = 4 (2 each way), F = I = W = 1 (B = 2), free communication, by
  // hand. Rank 0 runs 0F0 3F0 0F1 3B0 3F1 0B0 3B1 0I1 0W1, rank 1 the
  // mirror 2F0 1F0 2F1 1B0 1F1 2B0 1B1 2I1 2W1. Rank 0: 0F0 0-1, 3F0 1-2
  // (2F0 at 0-1), 0F1 2-3, 3B0 3-5, 3F1 5-6 (2F1 at 2-3), 0B0 6-8 (1B0 at
  // 3-5), 3B1 8-10, 0I1 10-11 (1B1 at 8-10), 0W1 11-12; rank 1 the same by
  // symmetry. Makespan 12 = the work, 2 chunks x 2 x 3: with pp 2 the
  // README's bubble (pp / 2 - 1)(...) is zero.
  const Time F = Time::ps(1000);
  CHECK(simulate("dualpipe", 2, 4, uniform_split(4, F, F, F))->timeline.makespan == F * 12);
  // The bound for pp ranks is (pp / 2 - 1)(F&B + B - 3W); with nothing to
  // overlap F&B = F + B, so (pp / 2 - 1)(F + 2I - W). The simulated schedule
  // stays within it, and above the work (m / 2 through each of 2 chunks).
  for (int p : {2, 4, 6, 8}) {
    for (int m : {2 * p, 2 * p + 2, 4 * p}) {
      for (auto [f, i, w] : {std::tuple{1, 1, 1}, std::tuple{2, 1, 1}, std::tuple{1, 2, 1}, std::tuple{1, 1, 2}}) {
        CAPTURE(p);
        CAPTURE(m);
        const Time v = simulate("dualpipe", p, m, uniform_split(2 * p, F * f, F * i, F * w))->timeline.makespan;
        const Time work = F * (m * (f + i + w));
        CHECK(v >= work);
        CHECK(v <= work + F * ((p / 2 - 1) * (f + 2 * i - w)));
      }
    }
  }
  // Memory: a chunk's activation from its F to its backward's end. The
  // README's figure for DualPipe is PP + 1 chunks a rank.
  const std::int64_t A = 1000;
  for (int p : {2, 4, 8}) {
    for (int m : {2 * p, 4 * p}) {
      auto costs = uniform_split(2 * p, F, F, F);
      for (auto& c : costs.stages) c.activation_bytes = A;
      const auto sim = simulate("dualpipe", p, m, costs);
      for (int r = 0; r < p; ++r) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(r);
        CHECK(sim->memory.pools()[r].peak() == A * (p + 1));
      }
    }
  }
  // The copies' gradient sum: each stage with its copy on the mirror rank,
  // once both have ended their backwards. p = 2, m = 4 as above: stages 3
  // (rank 0) and 1 (rank 1) end at 10 and add theirs 10-11; stages 0 and 2
  // end at 12 and add theirs 12-13; the step waits for it: 13.
  auto costs = uniform_split(4, F, F, F);
  for (auto& c : costs.stages) c.copy_grad_all_reduce = F;
  const auto sim = simulate("dualpipe", 2, 4, costs);
  CHECK(sim->timeline.makespan == F * 13);
}

}  // namespace lower_pipeline_test
