#include <doctest/doctest.h>

#include "hw/collective.hpp"
#include "lower/burst.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_burst_test {

using namespace trainsim;
using core::Time;

namespace {

// One node of 4 GPUs: NVLink 100 GB/s (0.1 byte/ps) with 0.01 us (10000 ps)
// latency; HBM at 1 byte/ps and no kernel overhead, so a layer without GEMMs
// takes exactly its bytes in picoseconds.
hw::ClusterSpec node4() {
  hw::ClusterSpec c;
  c.nodes = 1;
  hw::NodeSpec& n = c.node;
  n.gpus_per_node = 4;
  n.nvlink_gb_per_s = 100;
  n.nvlink_latency_us = 0.01;
  n.nvlink_bus_gb_per_s = 100;
  n.nics_per_node = 4;
  n.nic_gbit_per_s = 100;
  n.nic_bus_gb_per_s = 10;
  n.gpu.peak_tflops = 100;
  n.gpu.memory_gb = 80;
  n.gpu.hbm_achievable_tb_per_s = 1;
  n.gpu.gemm_tflops = {{1000, 100}};
  return c;
}

// Layer a: 1000 bytes in and out per sample, 500 parameters (1000 bytes of
// FP16 weights): F = 2000 x samples + 1000 ps. Layer b: 1000 in, 500 out,
// 1000 parameters: F = 1500 x samples + 2000 ps.
workload::LayerTable two_layers() {
  workload::LayerTable t;
  t.name = "tiny";
  t.input_bytes_per_sample = 1000;
  t.layers.push_back({"a", 0, 500, 1000, {}});
  t.layers.push_back({"b", 0, 1000, 500, {}});
  return t;
}

Time end_of(const lower::Simulation& sim, lower::TaskKind kind, schedule::Op op, int layer, int gpu) {
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const auto& ti = sim.info[id];
    if (ti.kind == kind && ti.action.op == op && ti.action.stage == layer && ti.rank == gpu) return sim.timeline.end[id];
  }
  FAIL("no such task");
  return Time::zero();
}

}  // namespace

TEST_CASE("burst lowering: layer a on 2 GPUs, layer b on 1, by hand") {
  // Batch 4. Forward: a on GPUs 0 and 1, 2 samples each: 2 x 2000 + 1000 = 5000.
  // GPU 1 sends its 2 samples' output (2000 bytes) to GPU 0: 10000 latency +
  // 20000 at 0.1 byte/ps -> arrives at 35000. b on GPU 0, 4 samples: 8000 ->
  // 43000. Backward: b 16000 -> 59000; the gradient of GPU 1's samples goes
  // back, 59000 -> 89000; a's backward (10000) on GPU 0: 59000 -> 69000, on GPU 1:
  // 89000 -> 99000. Then a's gradients (1000 bytes) all-reduce over GPUs 0 and 1,
  // starting when both have them: 99000 + NCCL's modelled time.
  const auto c = node4();
  auto sim = lower::lower_burst(two_layers(), {2, 1}, 4, c);
  lower::run_burst(*sim, false);
  using schedule::Op;
  using lower::TaskKind;
  CHECK(end_of(*sim, TaskKind::kCompute, Op::kForward, 0, 1) == Time::ps(5000));
  CHECK(end_of(*sim, TaskKind::kTransfer, Op::kSendF, 0, 1) == Time::ps(35000));
  CHECK(end_of(*sim, TaskKind::kCompute, Op::kForward, 1, 0) == Time::ps(43000));
  CHECK(end_of(*sim, TaskKind::kCompute, Op::kBackward, 1, 0) == Time::ps(59000));
  CHECK(end_of(*sim, TaskKind::kTransfer, Op::kSendB, 1, 0) == Time::ps(89000));
  CHECK(end_of(*sim, TaskKind::kCompute, Op::kBackward, 0, 0) == Time::ps(69000));
  CHECK(end_of(*sim, TaskKind::kCompute, Op::kBackward, 0, 1) == Time::ps(99000));
  const Time reduce = hw::collective_time(hw::CollectiveKind::kAllReduce, 1000, hw::group_of(c, {0, 1}), c.node);
  CHECK(reduce > Time::zero());
  CHECK(sim->timeline.makespan == Time::ps(99000) + reduce);
  CHECK(sim->background.empty());  // no background job
  // Memory: GPU 0 holds both layers' state (1500 parameters x 16 bytes) and,
  // at its peak (b's forward), a's output for 2 samples and b's for 4: 2000 + 2000.
  CHECK(sim->memory.pools()[0].peak() == 1500 * 16 + 2000 + 2000);
  CHECK(sim->memory.pools()[2].peak() == 0);  // GPU 2 runs nothing
}

TEST_CASE("burst lowering: with every layer on every GPU nothing moves") {
  // Data parallel on 4: 1 sample each; a: 3000, b: 3500 forward, then 7000 and
  // 6000 backward: 19500 of compute, then the two all-reduces one after the other
  // (b's first, as its backward ends first; it overlaps a's backward).
  const auto c = node4();
  auto sim = lower::lower_burst(two_layers(), {4, 4}, 4, c);
  lower::run_burst(*sim, false);
  for (core::TaskId id = 0; id < sim->graph.size(); ++id) CHECK(sim->info[id].kind != lower::TaskKind::kTransfer);
  const auto group = hw::group_of(c, {0, 1, 2, 3});
  const Time ra = hw::collective_time(hw::CollectiveKind::kAllReduce, 1000, group, c.node);
  const Time rb = hw::collective_time(hw::CollectiveKind::kAllReduce, 2000, group, c.node);
  // b's reduction starts at 3000 + 3500 + 7000 = 13500; a's at the later of
  // its backward's end (19500) and b's reduction's end.
  const Time b_done = Time::ps(13500) + rb;
  CHECK(sim->timeline.makespan == std::max(b_done, Time::ps(19500)) + ra);
}

TEST_CASE("a background job takes every idle stretch of every GPU") {
  // The first case again with a background job and interference 0.5: compute
  // takes 1.5x (a: 7500 per GPU, b: 12000, backward 24000 and 15000), the
  // transfers as before (30000 each way).
  //   GPU 0: a 0-7500, idle 7500-37500 (b waits for GPU 1's samples, sent at
  //          7500), b 37500-49500, b's backward 49500-73500, a's backward
  //          73500-88500, idle to the end
  //   GPU 1: a 0-7500, idle until the gradient arrives at 73500 + 30000 =
  //          103500, a's backward 103500-118500, idle to the end
  //   GPUs 2, 3: idle throughout.
  const auto c = node4();
  lower::BurstOptions o;
  o.background = true;
  o.interference = 0.5;
  auto sim = lower::lower_burst(two_layers(), {2, 1}, 4, c, o);
  lower::run_burst(*sim, true);
  const Time end = sim->timeline.makespan;
  const Time reduce = hw::collective_time(hw::CollectiveKind::kAllReduce, 1000, hw::group_of(c, {0, 1}), c.node);
  CHECK(end == Time::ps(118500) + reduce);
  using Spans = std::vector<std::pair<Time, Time>>;
  REQUIRE(sim->background.size() == 4);
  CHECK(sim->background[0] == Spans{{Time::ps(7500), Time::ps(37500)}, {Time::ps(88500), end}});
  CHECK(sim->background[1] == Spans{{Time::ps(7500), Time::ps(103500)}, {Time::ps(118500), end}});
  CHECK(sim->background[2] == Spans{{Time::zero(), end}});
  CHECK(sim->background[3] == Spans{{Time::zero(), end}});
}

}  // namespace lower_burst_test
