// The contract between tools/calibrate and the simulator: a profile put
// together by the harness's own JSON functions (fed made-up figures here, as
// no GPU runs in the tests) loads in trainsim with every value where the
// harness put it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "config/calibration_load.hpp"
#include "host_step.hpp"
#include "profile_json.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace calibration_profile_format_test {

using namespace trainsim;
using nlohmann::json;

namespace {

calibrate::DeviceInfo device() {
  calibrate::DeviceInfo d;
  d.gpu_name = "NVIDIA H200";
  d.gpu_count = 2;
  d.compute_capability = "9.0";
  d.sm_count = 132;
  d.sm_clock_mhz = 1980;
  d.memory_clock_mhz = 3201;
  d.memory_gib = 139.8;
  d.l2_mib = 60;
  d.driver_version = d.runtime_version = "13.0";
  d.cublas_version = "13.0.0";
  d.nccl_version = "2.27.7";
  d.date = "2026-11-30T12:00:00Z";
  d.quick = true;
  d.warmup = 3;
  d.samples = 11;
  return d;
}

calibrate::Stat stat(double median) { return {median, 0.9 * median, 1.1 * median}; }

// Every section, as main.cpp assembles them, with two GPUs measured.
json whole_profile() {
  json p = calibrate::profile_json(device());
  std::vector<calibrate::Stat> cells;
  for (int i = 0; i < 8; ++i) cells.push_back(stat(100.0 + 10.0 * i));
  json gemm = {{"bf16", calibrate::grid_json({64, 4096}, cells)},
               {"model_shapes", json::array({calibrate::model_gemm_json("gpt-1.7b", "qkv_proj", 8, 2048, 864, 2304, stat(300))})}};
  // Burnt at 4096^3, the grid's corner cell 7 (170 TFLOP/s): a burn of 144.5 is 0.85 of it.
  gemm["sustained"] = calibrate::sustained_json(4096, 20, 180.0, 144.5, 2.0 / 3.0, 153.0);
  p["gemm"] = gemm;
  // 3e12 FLOPs in 2 + 4 ms: 3e12 / 6e-3 s = 500 TFLOP/s.
  p["attention"] = calibrate::attention_json(
      json::array({calibrate::attention_point_json(8, 16, 2048, 128, stat(2), stat(4), 3e12)}));
  p["hbm"] = {{"copy", {calibrate::size_point_json(1048576, "tb_per_s", stat(5)), calibrate::size_point_json(4294967296.0, "tb_per_s", stat(4.2))}},
              {"triad", {calibrate::size_point_json(1048576, "tb_per_s", stat(5.5))}}};
  p["launch"] = calibrate::launch_json(stat(2.5), stat(0.8));
  p["host_copy"] = {{"h2d", {calibrate::size_point_json(1073741824, "gb_per_s", stat(55))}},
                    {"d2h", {calibrate::size_point_json(1073741824, "gb_per_s", stat(54))}}};
  p["p2p"] = calibrate::p2p_json(stat(2.0), json::array({calibrate::size_point_json(1073741824, "gb_per_s", stat(390))}));
  json nccl = {{"measured", true}, {"ranks", 2}};
  for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter"}) {
    nccl[kind] = {calibrate::collective_point_json(1024, stat(12), stat(0.1)),
                  calibrate::collective_point_json(1073741824, stat(3000), stat(360))};
  }
  nccl["send_recv"] = {calibrate::size_point_json(1048576, "gb_per_s", stat(20)),
                       calibrate::size_point_json(1073741824, "gb_per_s", stat(70))};
  p["nccl"] = nccl;
  return p;
}

std::shared_ptr<const hw::CalibrationProfile> load(const json& p) {
  // Through text, as the file is written and read.
  return config::read_calibration_profile(json::parse(p.dump(2)), "h200.json");
}

}  // namespace

TEST_CASE("a profile the harness's functions write loads with every value in place") {
  const auto p = load(whole_profile());
  CHECK(p->header.gpu_name == "NVIDIA H200");
  CHECK(p->header.mode == "quick");
  CHECK(p->header.samples == 11);
  CHECK(p->header.note.empty());
  // cells[(i_m * 2 + i_n) * 2 + i_k]: (1, 0, 1) is cell 5, 150 TFLOP/s.
  CHECK(p->gemm_bf16.at(1, 0, 1) == 150);
  CHECK(p->gemm_bf16.tflops_min[5] == doctest::Approx(135).epsilon(1e-12).scale(0));
  CHECK(p->gemm_bf16.k == std::vector<double>{64, 4096});
  REQUIRE(p->model_gemms.size() == 1);
  CHECK(p->model_gemms[0].n == 864);
  REQUIRE(p->attention.size() == 1);
  CHECK(p->attention[0].tflops.median == doctest::Approx(500).epsilon(1e-12).scale(0));
  // Slowest samples 2.2 + 4.4 ms: 3e12 / 6.6e-3 = 454.5 TFLOP/s.
  CHECK(p->attention[0].tflops.min == doctest::Approx(454.545454).epsilon(1e-6).scale(0));
  CHECK(p->hbm_tb_per_s() == 4.2);
  CHECK(p->launch_us.median == 2.5);
  CHECK(p->graph_launch_us.median == 0.8);
  CHECK(p->p2p.back().rate.median == 390);
  CHECK(p->nccl_ranks == 2);
  CHECK(p->nccl_bus_gb_per_s() == 360);
  REQUIRE(p->nccl_send_recv.size() == 2);
  CHECK(p->nccl_send_recv.back().rate.median == 70);
}

TEST_CASE("the sustained GEMM run sets the burn fraction a calibrated GPU's tensor work starts from") {
  const auto p = load(whole_profile());
  REQUIRE(p->gemm_sustained.has_value());
  CHECK(p->gemm_sustained->size == 4096);
  CHECK(p->gemm_sustained->duty_tflops == 153.0);
  // The burn over the grid at the burnt shape (not over the run's best
  // window, 180): 144.5 / 170 = 0.85, the GPU's burn fraction.
  CHECK(*p->sustained_fraction() == doctest::Approx(0.85).epsilon(1e-12).scale(0));
  hw::NodeSpec node;
  node.gpu.sustained_tensor_fraction = 0.919;  // a preset's
  CHECK(config::calibrated(node, p).gpu.sustained_tensor_fraction == doctest::Approx(0.85).epsilon(1e-12).scale(0));
  // A profile without the run keeps the preset's share.
  json old = whole_profile();
  old["gemm"].erase("sustained");
  CHECK(config::calibrated(node, load(old)).gpu.sustained_tensor_fraction == 0.919);
}

TEST_CASE("a sustained run of a share above the whole time, or of a non-square GEMM, is refused by name") {
  json doc = whole_profile();
  doc["gemm"]["sustained"]["duty_gemm_share"] = 1.5;
  CHECK_THROWS_WITH_AS(load(doc), "h200.json: gemm.sustained.duty_gemm_share: expected a share of the time, at most 1, got 1.5",
                       config::ConfigError);
  doc = whole_profile();
  doc["gemm"]["sustained"]["k"] = 8192;
  CHECK_THROWS_WITH_AS(load(doc), "h200.json: gemm.sustained.k: expected m = n = k (one square GEMM is burnt)",
                       config::ConfigError);
}

TEST_CASE("sections the harness could not measure load as not measured") {
  json doc = whole_profile();
  doc["p2p"] = calibrate::not_measured("one GPU visible");
  doc["nccl"] = calibrate::not_measured("trainsim-calibrate was built without NCCL");
  doc.erase("attention");
  const auto p = load(doc);
  CHECK(p->p2p_skipped == "one GPU visible");
  CHECK(p->nccl_skipped == "trainsim-calibrate was built without NCCL");
  CHECK(p->attention.empty());
}

TEST_CASE("a failed measurement (NaN) is written as null and refused by name") {
  json doc = whole_profile();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  doc["hbm"]["copy"][0] = calibrate::size_point_json(1048576, "tb_per_s", {nan, nan, nan});
  CHECK_THROWS_WITH_AS(load(doc), "h200.json: hbm.copy[0].tb_per_s.median: expected a positive number, got null",
                       config::ConfigError);
}

TEST_CASE("the host's AdamW step, measured here, loads as one core's rate and reaches the node") {
  // A real measurement on this machine's CPU, small: the figures vary, their form does not.
  const json step = calibrate::measure_host_adam(1 << 16, 3);
  CHECK(step["threads"] == 1);
  CHECK(step["params"] == 1 << 16);
  json doc = whole_profile();
  doc["host_step"] = step;
  const auto p = load(doc);
  REQUIRE(p->host_adam_params_per_s.has_value());
  CHECK(p->host_adam_params_per_s->median == step["adam_params_per_s"]["median"].get<double>());
  CHECK(p->host_adam_params_per_s->min <= p->host_adam_params_per_s->median);
  hw::NodeSpec node;
  node.host_cores = 128;  // the preset's; the rate a core steps comes from the profile alone
  CHECK(config::calibrated(node, p).host_adam_params_per_s_per_core == p->host_adam_params_per_s->median);
  CHECK(config::calibrated(node, p).host_cores == 128);
  // Without the section the node keeps no rate: the DRAM alone bounds the step.
  CHECK(config::calibrated(node, load(whole_profile())).host_adam_params_per_s_per_core == 0.0);
  // The rate is one thread's.
  doc["host_step"]["threads"] = 8;
  CHECK_THROWS_WITH_AS(load(doc),
                       "h200.json: host_step.threads: expected 1: the rate is one thread's, which trainsim scales by a "
                       "process's cores, got 8",
                       config::ConfigError);
  CHECK_THROWS_AS(calibrate::measure_host_adam(0, 3), std::invalid_argument);
}

TEST_CASE("samples are summarized by median, minimum and maximum") {
  const calibrate::Stat s = calibrate::summarize({3, 1, 2});
  CHECK(s.median == 2);
  CHECK(s.min == 1);
  CHECK(s.max == 3);
  CHECK(calibrate::summarize({4, 1, 2, 3}).median == 2.5);  // an even count: the mean of the middle two
  // 16 units of work in 2, 4, 8 ms: median 4 per ms, slowest 2, fastest 8.
  const calibrate::Stat r = calibrate::rate({8, 2, 4}, 16);
  CHECK(r.median == 4);
  CHECK(r.min == 2);
  CHECK(r.max == 8);
}

}  // namespace calibration_profile_format_test
