#include <doctest/doctest.h>

#include <algorithm>

#include "lower/simulation.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"

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

// Pipeline rank r runs on GPU r * tp (tp = 8 puts each rank on its own node).
std::unique_ptr<lower::Simulation> simulate(const std::string& schedule, int p, int m,
                                            const workload::StageCosts& costs, int tp = 1,
                                            const lower::Options& options = {}) {
  const schedule::Shape shape = schedule::Shape::linear(p, m);
  const schedule::Program program =
      schedule::with_communication(schedule::find_schedule(schedule)->program(shape), shape);
  const auto deps = schedule::check(program, shape);
  workload::Plan plan;
  plan.tp = tp;
  plan.pp = p;
  auto sim = lower::lower(program, shape, deps, costs, cluster(), plan, options);
  lower::run(*sim);
  return sim;
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

TEST_CASE("ZeRO-3 gathers parameters one action ahead and scatters each backward's gradients") {
  // p = 1, m = 2 (1F1B: F0 F1 B0 B1), F = 10 us, B = 20 us, all-gather 5 us,
  // reduce-scatter 3 us, gathers on their own stream, each at most one action
  // ahead (it waits for the action before last):
  //   gather F0 0..5, F0 5..15; gather F1 5..10, F1 15..25;
  //   gather B0 waits F0: 15..20, B0 25..45; scatter B0 45..48;
  //   gather B1 waits F1: 25..30, B1 45..65; scatter B1 65..68;
  //   REDUCE_GRAD (nothing left) and the optimizer (0 us) at 68.
  workload::StageCosts costs = uniform(1, Time::microseconds(10), Time::microseconds(20), 0);
  costs.stages[0].param_gather = Time::microseconds(5);
  costs.stages[0].param_gather_bytes = 1000;
  costs.stages[0].grad_scatter = Time::microseconds(3);
  const auto sim = simulate("1f1b", 1, 2, costs);
  CHECK(sim->timeline.makespan == Time::microseconds(68));
  // Two gathered copies can be held at once (the current action's and the next one's).
  CHECK(sim->memory.pools()[0].peak() == 2000);
}
