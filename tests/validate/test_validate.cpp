// Validation end to end: predictions are what `trainsim run` reports, errors
// and MAPE are averaged as documented, orderings pass and fail, and a bad
// case fails with the case file's JSON path.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "validate/validate.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace validate_test {

using namespace trainsim;
using namespace trainsim::validate;
using nlohmann::json;

namespace {

const std::string kSource = TRAINSIM_SOURCE_DIR;
const std::string kExample = kSource + "/configs/examples/gpt-1.7b-8xa100.json";

// Three cases in two groups, and made-up predictions for them (the configs
// are never simulated here).
CaseFile hand_file() {
  return parse_cases(json::parse(R"({
    "cases": [
      {"id": "a", "group": "G1", "source": "s", "config": {},
       "measured": {"iteration_time_s": 2.0, "model_tflops_per_gpu": 100, "peak_memory_gib": 40}},
      {"id": "b", "group": "G1", "source": "s", "config": {}, "measured": {"iteration_time_s": 1.0}},
      {"id": "c", "group": "G2", "source": "s", "config": {}, "measured": {"samples_per_s": 10, "peak_memory_gib": 20}}
    ],
    "orderings": [
      {"name": "b faster than a", "metric": "iteration_time_s", "increasing": ["b", "a"]},
      {"name": "a faster than b", "metric": "iteration_time_s", "increasing": ["a", "b"]},
      {"name": "a/b in [2, 3]", "metric": "iteration_time_s", "ratio": {"numerator": "a", "denominator": "b", "min": 2, "max": 3}},
      {"name": "a/b at most 2", "metric": "iteration_time_s", "ratio": {"numerator": "a", "denominator": "b", "max": 2}},
      {"name": "equal is not increasing", "metric": "mfu", "increasing": ["a", "c"]}
    ]
  })"),
                     "hand.json", "");
}

Prediction predicted(std::initializer_list<std::pair<Metric, double>> values) {
  Prediction p;
  for (const auto& [m, v] : values) p.values[static_cast<std::size_t>(m)] = v;
  return p;
}

// a: 2.2 s (+10%), 95 TFLOP/s (-5%), 30 GiB (-25%); b: 0.8 s (-20%);
// c: 10.5 samples/s (+5%), 21 GiB (+5%). Every MFU is 0.5.
std::vector<Prediction> hand_predictions() {
  return {predicted({{Metric::kIterationTime, 2.2}, {Metric::kModelTflopsPerGpu, 95}, {Metric::kPeakMemoryGib, 30},
                     {Metric::kMfu, 0.5}}),
          predicted({{Metric::kIterationTime, 0.8}, {Metric::kMfu, 0.5}}),
          predicted({{Metric::kSamplesPerS, 10.5}, {Metric::kPeakMemoryGib, 21}, {Metric::kMfu, 0.5}})};
}

std::string error_of(const CaseFile& f) {
  try {
    predict(f, select_cases(f, ""));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

CaseFile one_case(const json& c) {
  return parse_cases(json{{"cases", json::array({c})}}, "x.json", kSource + "/configs/examples");
}

json inline_case() {
  return json::parse(R"({"id": "bad", "group": "G", "source": "s", "measured": {"mfu": 0.5},
    "config": {"cluster": {"node": "dgx-a100", "nodes": 1}, "model": "gpt-1.7b",
               "parallel": {"tp": 2, "pp": 4, "microbatch_size": 4, "global_batch": 64}}})");
}

}  // namespace

TEST_CASE("rows: signed error of each measurement") {
  const CaseFile f = hand_file();
  const Result r = compare(f, {0, 1, 2}, hand_predictions());
  REQUIRE(r.rows.size() == 6);
  // Case by case, metrics in all_metrics() order.
  CHECK(r.rows[0].case_id == "a");
  CHECK(r.rows[0].metric == Metric::kIterationTime);
  CHECK(r.rows[0].group == "G1");
  CHECK(r.rows[0].measured == 2.0);
  CHECK(r.rows[0].predicted == 2.2);
  CHECK(r.rows[0].error_pct == doctest::Approx(10.0).scale(0));   // (2.2 - 2) / 2
  CHECK(r.rows[1].error_pct == doctest::Approx(-5.0).scale(0));   // (95 - 100) / 100
  CHECK(r.rows[2].metric == Metric::kPeakMemoryGib);
  CHECK(r.rows[2].error_pct == doctest::Approx(-25.0).scale(0));  // (30 - 40) / 40
  CHECK(r.rows[3].error_pct == doctest::Approx(-20.0).scale(0));  // (0.8 - 1) / 1
  CHECK(r.rows[4].error_pct == doctest::Approx(5.0).scale(0));    // (10.5 - 10) / 10
  CHECK(r.rows[5].error_pct == doctest::Approx(5.0).scale(0));    // (21 - 20) / 20
}

TEST_CASE("MAPE per group and overall, performance and memory apart") {
  const Result r = compare(hand_file(), {0, 1, 2}, hand_predictions());
  // Performance: G1 has |+10| + |-5| + |-20| = 35 over 3 rows = 11.667;
  // G2 has 5 over 1 row. Overall is over rows, (35 + 5) / 4 = 10, not the
  // mean of the groups' MAPE (8.33).
  REQUIRE(r.performance.groups.size() == 2);
  CHECK(r.performance.groups[0].group == "G1");
  CHECK(r.performance.groups[0].rows == 3);
  CHECK(r.performance.groups[0].mape_pct == doctest::Approx(35.0 / 3.0).scale(0));
  CHECK(r.performance.groups[1].group == "G2");
  CHECK(r.performance.groups[1].mape_pct == doctest::Approx(5.0).scale(0));
  CHECK(r.performance.rows == 4);
  CHECK(r.performance.overall_pct == doctest::Approx(10.0).scale(0));
  REQUIRE(r.performance.worst);
  CHECK(r.performance.worst->case_id == "b");  // -20%
  // Memory: G1 |-25| = 25, G2 |+5| = 5, overall (25 + 5) / 2 = 15.
  REQUIRE(r.memory.groups.size() == 2);
  CHECK(r.memory.groups[0].mape_pct == doctest::Approx(25.0).scale(0));
  CHECK(r.memory.groups[1].mape_pct == doctest::Approx(5.0).scale(0));
  CHECK(r.memory.overall_pct == doctest::Approx(15.0).scale(0));
  CHECK(r.memory.worst->case_id == "a");
}

TEST_CASE("one layer's times have a MAPE of their own, apart from performance and memory") {
  // a: forward 5 ms measured, 5.5 predicted (+10%); backward 10, 9 (-10%);
  // b: forward 2 against 2.1 (+5%). Layer time: G1 (10 + 10 + 5) / 3; the
  // performance and memory MAPE have no rows.
  const CaseFile f = parse_cases(json::parse(R"({"cases": [
      {"id": "a", "group": "G1", "source": "s", "config": {}, "measured": {"layer_forward_ms": 5, "layer_backward_ms": 10}},
      {"id": "b", "group": "G1", "source": "s", "config": {}, "measured": {"layer_forward_ms": 2}}]})"),
                                 "hand.json", "");
  const Result r = compare(f, {0, 1},
                           {predicted({{Metric::kLayerForwardMs, 5.5}, {Metric::kLayerBackwardMs, 9.0}}),
                            predicted({{Metric::kLayerForwardMs, 2.1}})});
  CHECK(kind(Metric::kLayerForwardMs) == MetricKind::kLayerTime);
  CHECK(kind(Metric::kLayerBackwardMs) == MetricKind::kLayerTime);
  CHECK(r.layer_time.rows == 3);
  CHECK(r.layer_time.overall_pct == doctest::Approx(25.0 / 3.0).scale(0));
  CHECK(r.layer_time.worst->case_id == "a");
  CHECK(r.performance.rows == 0);
  CHECK(r.memory.rows == 0);
}

TEST_CASE("layer metrics are the summary's one-layer times in milliseconds") {
  report::Summary s;
  s.info.layer_forward_s = 0.0075;
  s.info.layer_backward_s = 0.0125;
  const MetricValues v = metric_values(s);
  CHECK(at(v, Metric::kLayerForwardMs) == doctest::Approx(7.5).scale(0));
  CHECK(at(v, Metric::kLayerBackwardMs) == doctest::Approx(12.5).scale(0));
}

TEST_CASE("a layer-table model has no one-layer time: measuring one is an error, predicting one gives no value") {
  const json c = json::parse(R"({"id": "cnn", "group": "G", "source": "s", "config": "vgg16-dp-16xa100.json",
                                 "measured": {"iteration_time_s": 0.004, "layer_forward_ms": 3}})");
  CHECK(error_of(one_case(c)) == "x.json: cases[0].measured.layer_forward_ms: a layer-table model has no transformer "
                                 "layer to time (case \"cnn\")");
  report::Summary s;
  s.burst = report::BurstStats{};
  CHECK(std::isnan(at(metric_values(s), Metric::kLayerForwardMs)));
  CHECK(std::isnan(at(metric_values(s), Metric::kLayerBackwardMs)));
}

TEST_CASE("orderings pass, fail, and are skipped when a case is not selected") {
  const Result r = compare(hand_file(), {0, 1, 2}, hand_predictions());
  REQUIRE(r.orderings.size() == 5);
  using S = OrderingResult::Status;
  CHECK(r.orderings[0].status == S::kPass);  // 0.8 < 2.2
  CHECK(r.orderings[0].predicted == std::vector<double>{0.8, 2.2});
  CHECK(r.orderings[1].status == S::kFail);  // 2.2 > 0.8
  CHECK(r.orderings[2].status == S::kPass);  // 2.2 / 0.8 = 2.75 in [2, 3]
  CHECK(r.orderings[2].ratio == doctest::Approx(2.75).scale(0));
  CHECK(r.orderings[3].status == S::kFail);  // 2.75 > 2
  CHECK(r.orderings[4].status == S::kFail);  // 0.5 = 0.5: not strictly increasing
  CHECK(r.orderings_passed == 2);
  CHECK(r.orderings_failed == 3);

  // Without b only the ordering over a and c is checked; rows and MAPE cover a and c.
  const auto all = hand_predictions();
  const Result ac = compare(hand_file(), {0, 2}, {all[0], all[2]});
  CHECK(ac.orderings[0].status == S::kSkipped);
  CHECK(ac.orderings[2].status == S::kSkipped);
  CHECK(ac.orderings[4].status == S::kFail);
  CHECK(ac.orderings_passed + ac.orderings_failed == 1);
  CHECK(ac.rows.size() == 5);
  CHECK(ac.performance.overall_pct == doctest::Approx((10.0 + 5.0 + 5.0) / 3.0).scale(0));
}

TEST_CASE("--only selects case ids by glob, in file order") {
  const CaseFile f = hand_file();
  CHECK(select_cases(f, "") == std::vector<std::size_t>{0, 1, 2});
  CHECK(select_cases(f, "[bc]") == std::vector<std::size_t>{1, 2});
  CHECK(select_cases(f, "a*") == std::vector<std::size_t>{0});
  CHECK(select_cases(f, "z*").empty());
}

TEST_CASE("a case predicts what trainsim run reports for its config") {
  const CaseFile f = load_cases(kSource + "/tests/validate_sample/cases.json");
  std::size_t calls = 0;
  const auto p = predict(f, select_cases(f, ""), [&](std::size_t done, std::size_t total) {
    CHECK(done == calls);  // 0 once loaded, then 1, 2, 3
    CHECK(total == 3);
    ++calls;
  });
  CHECK(calls == 4);
  REQUIRE(p.size() == 3);
  auto run = [](const std::vector<std::string>& set) {
    const config::Scenario sc = config::load_file(kExample, set);
    return driver::summarize(sc, driver::simulate(sc), kExample);
  };
  const report::Summary s1 = run({});
  CHECK(at(p[0].values, Metric::kIterationTime) == s1.iteration_time_s);
  CHECK(at(p[0].values, Metric::kModelTflopsPerGpu) == s1.model_tflops_per_gpu);
  CHECK(at(p[0].values, Metric::kHardwareTflopsPerGpu) == s1.hardware_tflops_per_gpu);
  CHECK(at(p[0].values, Metric::kMfu) == s1.mfu);
  CHECK(at(p[0].values, Metric::kHfu) == s1.hfu);
  CHECK(at(p[0].values, Metric::kTokensPerS) == s1.tokens_per_s);
  CHECK(at(p[0].values, Metric::kSamplesPerS) == s1.samples_per_s);
  CHECK(at(p[0].values, Metric::kSamplesPerGpuPerS) == doctest::Approx(s1.samples_per_s / 8).scale(0));
  CHECK(at(p[0].values, Metric::kPeakMemoryGib) ==
        doctest::Approx(static_cast<double>(s1.peak_memory_bytes) / (1 << 30)).scale(0));
  CHECK(at(p[0].values, Metric::kPeakMemoryGb) == doctest::Approx(s1.peak_memory_bytes / 1e9).scale(0));
  CHECK(at(p[0].values, Metric::kModelStateGib) ==
        doctest::Approx(static_cast<double>(s1.stages[0].model_state_bytes) / (1 << 30)).scale(0));
  CHECK(p[0].gpus == 8);
  CHECK(p[0].fidelity == "symmetric");
  // The config file with its --set overrides.
  CHECK(at(p[1].values, Metric::kIterationTime) == run({"parallel.schedule=gpipe"}).iteration_time_s);
  CHECK(at(p[2].values, Metric::kMfu) == run({"parallel.pp=2", "parallel.tp=4"}).mfu);
}

TEST_CASE("memory metrics: the peak in GiB and GB, nvidia-smi's view, and the first rank's peak split at its model state") {
  // Peak 3 GiB = 3 x 1,073,741,824 = 3,221,225,472 bytes = 3.221225472 GB.
  // The first rank peaks at 2.5 GiB, 1.5 GiB of it model state: 1 GiB above
  // it. Rank 1's higher peak sets the peak, not the first rank's split.
  report::Summary s;
  s.peak_memory_bytes = std::int64_t{3} << 30;
  s.stages.resize(2);
  s.stages[0].peak_memory_bytes = (std::int64_t{5} << 30) / 2;
  s.stages[0].model_state_bytes = (std::int64_t{3} << 30) / 2;
  s.stages[1].peak_memory_bytes = std::int64_t{3} << 30;
  s.stages[1].model_state_bytes = std::int64_t{2} << 30;
  const MetricValues v = metric_values(s);
  CHECK(at(v, Metric::kPeakMemoryGib) == 3.0);
  CHECK(at(v, Metric::kPeakMemoryGb) == doctest::Approx(3.221225472).epsilon(1e-12).scale(0));
  CHECK(at(v, Metric::kModelStateGib) == 1.5);
  CHECK(at(v, Metric::kActivationMemoryGib) == 1.0);
  // nvidia-smi's view adds the CUDA context: 3,221,225,472 + 1573 MiB
  // (1,649,410,048 bytes) = 4,870,635,520 bytes = 4.87063552 GB.
  s.cuda_context_bytes = std::int64_t{1573} << 20;
  CHECK(at(metric_values(s), Metric::kDeviceMemoryUsedGb) == doctest::Approx(4.87063552).epsilon(1e-12).scale(0));
  CHECK(at(metric_values(s), Metric::kPeakMemoryGb) == doctest::Approx(3.221225472).epsilon(1e-12).scale(0));
  for (const char* n : {"peak_memory_gb", "model_state_gib", "activation_memory_gib", "device_memory_used_gb"}) {
    CAPTURE(n);
    REQUIRE(metric_named(n).has_value());
    CHECK(kind(*metric_named(n)) == MetricKind::kMemory);
  }
}

TEST_CASE("a case whose config fails names the case file, the JSON path and the case") {
  // 24 heads on 16 GPUs, one stage.
  json c = inline_case();
  c["config"]["cluster"]["nodes"] = 2;
  c["config"]["parallel"]["tp"] = 16;
  c["config"]["parallel"]["pp"] = 1;
  CHECK(error_of(one_case(c)) ==
        "x.json: cases[0].config.parallel.tp: model.heads = 24 does not divide across tp = 16 ranks (case \"bad\")");

  c = inline_case();
  c["config"]["clustr"] = c["config"]["cluster"];
  CHECK(error_of(one_case(c)).starts_with("x.json: cases[0].config.clustr: unknown key (did you mean \"cluster\"?)"));

  c = inline_case();
  c["set"] = {"parallel.schedule=gpipe", "parallel.foo=1"};
  CHECK(error_of(one_case(c)) == "x.json: cases[0].set[1]: --set parallel.foo=1: no key \"foo\" in parallel (case \"bad\")");

  c = inline_case();
  c["set"] = {"cluster.nodes=2", "parallel.pp=1", "parallel.tp=16"};
  CHECK(error_of(one_case(c)).starts_with("x.json: cases[0].config.parallel.tp: model.heads = 24 does not divide"));
  CHECK(error_of(one_case(c)).ends_with("(from --set parallel.tp=16) (case \"bad\")"));

  // A config file: its own name and path follow the case's.
  c = inline_case();
  c["config"] = "nope.json";
  CHECK(error_of(one_case(c)) == "x.json: cases[0].config: " + kSource +
                                     "/configs/examples/nope.json: cannot open config file: no such file (case \"bad\")");
  c["config"] = "gpt-1.7b-8xa100.json";
  c["set"] = {"cluster.nodes=2", "parallel.pp=1", "parallel.tp=16"};
  CHECK(error_of(one_case(c)).starts_with("x.json: cases[0].config: " + kExample + ": parallel.tp: model.heads = 24"));
  c["set"] = {"parallel.foo=1"};
  CHECK(error_of(one_case(c)).starts_with("x.json: cases[0].set[0]: --set parallel.foo=1: no key"));
}

TEST_CASE("every config loads before any case is simulated") {
  json doc = {{"cases", json::array({inline_case(), inline_case()})}};
  doc["cases"][0]["id"] = "good";
  doc["cases"][1]["config"]["parallel"]["pp"] = 3;  // 24 layers do not divide into 3 x 2 x 1 = 8 GPUs
  const CaseFile f = parse_cases(doc, "x.json", "");
  std::size_t calls = 0;
  CHECK_THROWS_WITH_AS(predict(f, {0, 1}, [&](std::size_t, std::size_t) { ++calls; }),
                       doctest::Contains("x.json: cases[1].config.parallel"), config::ConfigError);
  CHECK(calls == 0);
}

TEST_CASE("a plan the simulator cannot run names the case") {
  json c = inline_case();
  // As `trainsim run` says it (exit status 6 there).
  c["set"] = {"model.seq=10000000", "cluster.node.gpu.gemm_max_tflops=0.001"};
  CHECK(error_of(one_case(c)).starts_with("x.json: cases[0].config: cannot simulate this plan: simulated time overflows"));
  CHECK(error_of(one_case(c)).ends_with("(case \"bad\")"));
}

}  // namespace validate_test
