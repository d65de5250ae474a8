// A calibration profile's interpolation: GEMM throughput over the measured
// grid, and collective times over measured sizes; and the collective costs
// that use them.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "hw/calibration_profile.hpp"
#include "hw/collective.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_calibration_profile_test {

using namespace trainsim;

namespace {

// Axes m {256, 1024}, n {256, 1024}, k {256, 4096}; values [i_m][i_n][i_k]:
// 100 200 / 300 400 for m = 256, 500 600 / 700 1000 for m = 1024 (the last
// breaks linearity, so the cross terms count).
hw::GemmGrid two_by_two() {
  hw::GemmGrid g;
  g.m = {256, 1024};
  g.n = {256, 1024};
  g.k = {256, 4096};
  g.tflops = {100, 200, 300, 400, 500, 600, 700, 1000};
  g.tflops_min = g.tflops;
  g.tflops_max = g.tflops;
  return g;
}

hw::CollectivePoint point(double bytes, double us) { return {bytes, {us, us, us}, {1, 1, 1}}; }

}  // namespace

TEST_CASE("GEMM interpolation is exact at the grid's points") {
  const hw::GemmGrid g = two_by_two();
  CHECK(g.interpolate(256, 256, 256) == 100);
  CHECK(g.interpolate(256, 256, 4096) == 200);
  CHECK(g.interpolate(256, 1024, 256) == 300);
  CHECK(g.interpolate(1024, 256, 4096) == 600);
  CHECK(g.interpolate(1024, 1024, 4096) == 1000);
}

TEST_CASE("GEMM interpolation is trilinear in log2 of each size") {
  const hw::GemmGrid g = two_by_two();
  // m = 512 is halfway from 256 to 1024 in log2; k = 1024 halfway from 256 to
  // 4096 (2 of 4 doublings); n = 256 on the axis: the mean of
  // v(0,0,0) v(0,0,1) v(1,0,0) v(1,0,1) = (100 + 200 + 500 + 600) / 4 = 350.
  CHECK(g.interpolate(512, 256, 1024) == doctest::Approx(350).epsilon(1e-12).scale(0));
  // Every coordinate halfway: the mean of all eight, 3800 / 8 = 475.
  CHECK(g.interpolate(512, 512, 1024) == doctest::Approx(475).epsilon(1e-12).scale(0));
  // m a quarter of the way (log2 362.04 = 8.5), n and k on their lower ends:
  // 100 + 0.25 x (500 - 100) = 200.
  CHECK(g.interpolate(256 * std::sqrt(2.0), 256, 256) == doctest::Approx(200).epsilon(1e-12).scale(0));
  // k three quarters (log2 k = 11, of 8 to 12), m = 1024, n = 1024:
  // 700 + 0.75 x (1000 - 700) = 925.
  CHECK(g.interpolate(1024, 1024, 2048) == doctest::Approx(925).epsilon(1e-12).scale(0));
}

TEST_CASE("GEMM interpolation clamps at the grid's edges") {
  const hw::GemmGrid g = two_by_two();
  CHECK(g.interpolate(64, 1e6, 8) == 300);           // m, k below: lower ends; n above: upper end
  CHECK(g.interpolate(1e5, 1e5, 1e5) == 1000);
  // One axis clamped, another between: m = 8192 -> 1024; n = 512 halfway; k = 256:
  // (500 + 700) / 2 = 600.
  CHECK(g.interpolate(8192, 512, 256) == doctest::Approx(600).epsilon(1e-12).scale(0));
}

TEST_CASE("one-dimensional interpolation in log size") {
  // 1 KiB -> 10, 1 MiB -> 40: 32 KiB is halfway in log2, so 25.
  CHECK(hw::interpolate_log({1024, 1048576}, {10, 40}, 32768) == doctest::Approx(25).epsilon(1e-12).scale(0));
  CHECK(hw::interpolate_log({1024, 1048576}, {10, 40}, 1) == 10);
  CHECK(hw::interpolate_log({1024, 1048576}, {10, 40}, 1e12) == 40);
  CHECK(hw::interpolate_log({1024}, {10}, 5) == 10);
}

TEST_CASE("measured collective times interpolate log-log and extend at the largest size's rate") {
  const hw::CollectiveCurve c{hw::CollectiveKind::kAllReduce,
                              {point(1024, 10), point(1048576, 40), point(1073741824, 10000)}};
  // 32 KiB, halfway in log2 between 1 KiB and 1 MiB: 10 x (40 / 10)^0.5 = 20 us.
  CHECK(c.seconds(32768) == doctest::Approx(20e-6).epsilon(1e-12).scale(0));
  CHECK(c.seconds(1048576) == doctest::Approx(40e-6).epsilon(1e-12).scale(0));
  // Below the smallest size: its time, the latency floor.
  CHECK(c.seconds(100) == doctest::Approx(10e-6).epsilon(1e-12).scale(0));
  // 2 GiB: 10 ms for the first GiB and as long again for the second.
  CHECK(c.seconds(2147483648.0) == doctest::Approx(20e-3).epsilon(1e-12).scale(0));
}

TEST_CASE("collectives over the measured ranks of one node take the measured time") {
  auto profile = std::make_shared<hw::CalibrationProfile>();
  profile->nccl_ranks = 4;
  profile->nccl.push_back({hw::CollectiveKind::kAllReduce, {point(1024, 10), point(1073741824, 10000)}});
  hw::ClusterSpec c;
  c.nodes = 2;
  c.node.gpus_per_node = 8;
  c.node.nvlink_bus_gb_per_s = 240;
  c.node.nics_per_node = 8;
  c.node.nic_bus_gb_per_s = 24;
  const hw::CollectiveGroup four = hw::group_of(c, {0, 1, 2, 3});
  const double model = hw::collective_time(hw::CollectiveKind::kAllReduce, 1073741824.0, four, c.node).to_seconds();
  c.node.gpu.calibration = profile;
  // 1 GiB among 4 GPUs of one node: the measured 10 ms, not NCCL's model.
  CHECK(hw::collective_time(hw::CollectiveKind::kAllReduce, 1073741824.0, four, c.node).to_seconds() ==
        doctest::Approx(10e-3).epsilon(1e-9).scale(0));
  CHECK(model != doctest::Approx(10e-3).epsilon(1e-3));
  // Not measured: another kind, another number of ranks, a group across nodes, a forced tree.
  const hw::CollectiveGroup eight = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7});
  const hw::CollectiveGroup across = hw::group_of(c, {0, 1, 8, 9});
  hw::NodeSpec plain = c.node;
  plain.gpu.calibration = nullptr;
  using K = hw::CollectiveKind;
  CHECK(hw::collective_time(K::kAllGather, 1e6, four, c.node) == hw::collective_time(K::kAllGather, 1e6, four, plain));
  CHECK(hw::collective_time(K::kAllReduce, 1e6, eight, c.node) == hw::collective_time(K::kAllReduce, 1e6, eight, plain));
  CHECK(hw::collective_time(K::kAllReduce, 1e6, across, c.node) == hw::collective_time(K::kAllReduce, 1e6, across, plain));
  CHECK(hw::collective_time(K::kAllReduce, 1e6, four, c.node, hw::CollectiveAlgorithm::kTree) ==
        hw::collective_time(K::kAllReduce, 1e6, four, plain, hw::CollectiveAlgorithm::kTree));
}

}  // namespace hw_calibration_profile_test
