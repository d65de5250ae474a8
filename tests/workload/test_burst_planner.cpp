#include <doctest/doctest.h>

#include "workload/burst_planner.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_burst_planner_test {

using namespace trainsim;
using namespace trainsim::workload;
using core::Time;

namespace {

Time us(double x) { return Time::microseconds(x); }

// Three layers on 1, 2 or 4 GPUs (times in microseconds):
//                  F on the busiest GPU (w = 1 / 2 / 4)   all-reduce (w = 1 / 2 / 4)
//   conv1          40 / 24 / 16                           0 / 5 / 8
//   conv2          20 / 12 /  8                           0 / 5 / 8
//   fc             10 / 10 / 10 (bound by its weights)    0 / 50 / 60 (many parameters)
// B = 2F, so a layer's compute C = 3F: conv1 120 / 72 / 48, conv2 60 / 36 / 24,
// fc 30 / 30 / 30. Moving a layer's output to a different width takes X = 2
// each way. One GPU: 120 + 60 + 30 = 210 of GPU-time.
BurstCosts three_layers() {
  BurstCosts c;
  c.names = {"conv1", "conv2", "fc"};
  c.widths = {1, 2, 4};
  c.forward = {{us(40), us(24), us(16)}, {us(20), us(12), us(8)}, {us(10), us(10), us(10)}};
  c.all_reduce = {{us(0), us(5), us(8)}, {us(0), us(5), us(8)}, {us(0), us(50), us(60)}};
  const std::vector<std::vector<Time>> x = {{us(0), us(2), us(2)}, {us(2), us(0), us(2)}, {us(2), us(2), us(0)}};
  c.transfer = {x, x, {}};
  return c;
}

std::vector<int> widths_of(const BurstPlan& p) {
  std::vector<int> w;
  for (const auto& l : p.layers) w.push_back(l.gpus);
  return w;
}

}  // namespace

TEST_CASE("samples split evenly, the first GPUs taking one more") {
  CHECK(sample_range(32, 16, 0) == std::pair{0, 2});
  CHECK(sample_range(32, 16, 15) == std::pair{30, 32});
  // 10 over 4: 3, 3, 2, 2.
  CHECK(sample_range(10, 4, 0) == std::pair{0, 3});
  CHECK(sample_range(10, 4, 1) == std::pair{3, 6});
  CHECK(sample_range(10, 4, 3) == std::pair{8, 10});
}

TEST_CASE("redistribution: gathering to fewer GPUs, scattering to more") {
  // 8 samples from 4 GPUs (2 each) to 1: GPUs 1..3 send their 2; GPU 0 keeps its own.
  const auto gather = redistribution(8, 4, 1);
  REQUIRE(gather.size() == 3);
  CHECK(gather[0].from == 1);
  CHECK(gather[0].to == 0);
  CHECK(gather[0].samples == 2);
  // 8 from 2 GPUs (4 each) to 4 (2 each): GPU 0 sends samples 2-3 to GPU 1,
  // GPU 1 sends 4-5 to GPU 2 and 6-7 to GPU 3; GPU 1's own range (2-3) is new to it.
  const auto scatter = redistribution(8, 2, 4);
  REQUIRE(scatter.size() == 3);
  CHECK((scatter[0].from == 0 && scatter[0].to == 1 && scatter[0].samples == 2));
  CHECK((scatter[1].from == 1 && scatter[1].to == 2 && scatter[1].samples == 2));
  CHECK((scatter[2].from == 1 && scatter[2].to == 3 && scatter[2].samples == 2));
  CHECK(redistribution(8, 4, 4).empty());
}

TEST_CASE("candidate widths: divisors of the GPU count, no more than the batch") {
  CHECK(candidate_widths(16, 32) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(candidate_widths(16, 6) == std::vector<int>{1, 2, 4});
  CHECK(candidate_widths(24, 100) == std::vector<int>{1, 2, 3, 4, 6, 8, 12, 24});
}

TEST_CASE("the cost model of a given plan") {
  const BurstCosts c = three_layers();
  // Data parallel on 4: compute 48 + 24 + 30 = 102, no transfers. Backlog,
  // walking the backward: fc queues 60; conv2's backward (16) drains it to 44,
  // then + 8 = 52; conv1's backward (32) drains it to 20, + 8 = 28 exposed.
  const BurstPlan dp = evaluate_plan(c, {4, 4, 4});
  CHECK(dp.predicted == us(130));
  CHECK(dp.exposed_reduce == us(28));
  // GPU-time 4 x 48 + 4 x 24 + 4 x 30 = 408 against 210.
  CHECK(dp.amplification == doctest::Approx(408.0 / 210.0).scale(0));
  CHECK(dp.layers[2].amplification == doctest::Approx(4.0).scale(0));
  CHECK_THROWS_AS(evaluate_plan(c, {4, 3, 4}), std::invalid_argument);
}

TEST_CASE("the planner on three layers: the optimum, by hand") {
  const BurstCosts c = three_layers();
  // Limit 2 (GPU-time up to 420). The fc layer does not speed up and its
  // all-reduce is large, so it belongs on one GPU; the convolutions on four:
  //   compute 48 + 24 + 30 = 102, plus conv2 -> fc moved both ways 2 x 2 = 4;
  //   backlog: fc on one GPU queues nothing; conv2 queues 8; conv1's backward
  //   (32) drains it, then + 8 -> 8 exposed. Time 114; GPU-time 192 + 96 + 30 = 318.
  // Nearest rivals: (4, 4, 2) -> 106 + 16 = 122; (4, 2, 1) -> 122 + 8 = 130;
  // (4, 4, 4) -> 130; (2, 4, 1) -> 134 + 5 = 139; everything else is slower.
  const BurstPlan p = plan_burst(c, 2.0);
  CHECK(widths_of(p) == std::vector<int>{4, 4, 1});
  CHECK(p.predicted == us(114));
  CHECK(p.exposed_reduce == us(8));
  CHECK(p.amplification == doctest::Approx(318.0 / 210.0).scale(0));
  CHECK(p.layers[2].transfer_in == us(2));
  CHECK(p.layers[0].amplification == doctest::Approx(192.0 / 120.0).scale(0));

  // Limit 1.5 (GPU-time up to 315) rules out (4, 4, 1) at 318; the best left is
  // (4, 2, 1): compute 48 + 36 + 30 = 114, two width changes 2 x 4 = 8; backlog:
  // conv2 queues 5, drained by conv1's transfer and backward, conv1 queues 8.
  // 130, GPU-time 192 + 72 + 30 = 294. ((4, 2, 2) would take 126 but needs 324.)
  const BurstPlan q = plan_burst(c, 1.5);
  CHECK(widths_of(q) == std::vector<int>{4, 2, 1});
  CHECK(q.predicted == us(130));
  CHECK(q.amplification == doctest::Approx(294.0 / 210.0).scale(0));

  // Limit 1: only one GPU per layer: 210, nothing to reduce.
  const BurstPlan one = plan_burst(c, 1.0);
  CHECK(widths_of(one) == std::vector<int>{1, 1, 1});
  CHECK(one.predicted == us(210));
}

TEST_CASE("a plan's transfer cost comes from the flows on the topology") {
  // One node of 4 GPUs on NVLink at 100 GB/s (0.1 byte/ps), 0.01 us latency.
  hw::ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.node.gpus_per_node = 4;
  cluster.node.nvlink_gb_per_s = 100;
  cluster.node.nvlink_latency_us = 0.01;
  cluster.node.nvlink_bus_gb_per_s = 100;
  cluster.node.nics_per_node = 4;
  cluster.node.nic_gbit_per_s = 100;
  cluster.node.nic_bus_gb_per_s = 10;
  cluster.node.gpu.peak_tflops = 100;
  cluster.node.gpu.hbm_achievable_tb_per_s = 1;
  cluster.node.gpu.gemm_tflops = {{1000, 100}};
  LayerTable t;
  t.input_bytes_per_sample = 1000;
  t.layers.push_back({"a", 0, 0, 1000, {}});
  t.layers.push_back({"b", 0, 0, 1000, {}});
  const BurstCosts c = burst_costs(t, cluster, 8, 1.0);
  CHECK(c.widths == std::vector<int>{1, 2, 4});
  // 4 -> 1: GPUs 1..3 each send 2 samples (2000 bytes) to GPU 0, whose NVLink
  // in-link carries 6000 bytes at 0.1 byte/ps: 60000 ps after 10000 ps latency.
  CHECK(c.transfer[0][2][0] == Time::ps(70000));
  // 1 -> 2: GPU 0 sends 4 samples (4000 bytes) to GPU 1: 10000 + 40000.
  CHECK(c.transfer[0][0][1] == Time::ps(50000));
  CHECK(c.transfer[1].empty());  // nothing after the last layer
  // No parameters, nothing to reduce; forward of the busiest GPU: 8 / w samples
  // x 2000 bytes at 1 byte/ps (no kernel overhead here).
  CHECK(c.all_reduce[0][2] == Time::zero());
  CHECK(c.forward[0][0] == Time::ps(16000));
  CHECK(c.forward[0][2] == Time::ps(4000));
  // A background job's interference stretches compute alike.
  CHECK(burst_costs(t, cluster, 8, 1.5).forward[0][2] == Time::ps(6000));
}

}  // namespace workload_burst_planner_test
