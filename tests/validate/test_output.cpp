// The validation report as text and as JSON: stable keys, the table's rows,
// MAPE lines and ordering verdicts.
#include <doctest/doctest.h>

#include <string>

#include "validate/output.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace validate_output_test {

using namespace trainsim::validate;
using nlohmann::json;

namespace {

CaseFile sample() {
  return parse_cases(json::parse(R"({
    "description": "hand",
    "cases": [
      {"id": "a", "group": "G1", "source": "paper A", "config": "a.json", "set": ["parallel.pp=2"],
       "assumptions": {"parallel.pp": "not stated"}, "notes": "n",
       "measured": {"iteration_time_s": 2.0, "peak_memory_gib": 40}},
      {"id": "bb", "group": "G2", "source": "paper B", "config": {}, "measured": {"model_tflops_per_gpu": 100}}
    ],
    "orderings": [
      {"name": "a slower", "metric": "iteration_time_s", "increasing": ["bb", "a"], "source": "paper A"},
      {"name": "ratio", "metric": "iteration_time_s", "ratio": {"numerator": "a", "denominator": "bb", "min": 3}}
    ]
  })"),
                     "hand.json", "");
}

// a: 2.2 s (+10%), 30 GiB (-25%, and out of memory); bb: 1 s, 95 TFLOP/s (-5%).
Result result(const CaseFile& f) {
  std::vector<Prediction> p(2);
  p[0].values[static_cast<std::size_t>(Metric::kIterationTime)] = 2.2;
  p[0].values[static_cast<std::size_t>(Metric::kPeakMemoryGib)] = 30;
  p[0].oom = true;
  p[0].gpus = 8;
  p[0].fidelity = "symmetric";
  p[1].values[static_cast<std::size_t>(Metric::kIterationTime)] = 1.0;
  p[1].values[static_cast<std::size_t>(Metric::kModelTflopsPerGpu)] = 95;
  return compare(f, {0, 1}, p);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("values print with about four significant figures") {
  CHECK(show_value(110660.4) == "110660");
  CHECK(show_value(155.47) == "155.5");
  CHECK(show_value(35.614) == "35.61");
  CHECK(show_value(1.1845353) == "1.185");
  CHECK(show_value(0.49831) == "0.4983");
  CHECK(show_value(0.00123) == "0.00123");
  CHECK(show_value(0.0) == "0.0000");
}

TEST_CASE("text: the table, MAPE per group and overall, the worst row, the orderings") {
  const CaseFile f = sample();
  const std::string t = to_text(result(f));
  CHECK(t.starts_with("trainsim validate: hand.json — 2 cases, 3 measurements\n  hand\n\n"));
  CHECK(has(t, "  case  metric                  measured   predicted     error\n"));
  // Case a is predicted out of memory: each of its rows says so.
  CHECK(has(t, "  a     iteration_time_s           2.000       2.200    +10.0%  (out of memory)\n"));
  CHECK(has(t, "  a     peak_memory_gib            40.00       30.00    -25.0%  (out of memory)\n"));
  CHECK(has(t, "  bb    model_tflops_per_gpu       100.0       95.00     -5.0%\n"));
  // Performance: G1 10%, G2 5%, overall (10 + 5) / 2 = 7.5%.
  CHECK(has(t, "performance MAPE   rows      MAPE\n"
               "  G1                  1    10.00%\n"
               "  G2                  1     5.00%\n"
               "  overall             2     7.50%\n"
               "  worst: a iteration_time_s: measured 2.000, predicted 2.200 (+10.00%)\n"));
  CHECK(has(t, "memory MAPE        rows      MAPE\n"
               "  G1                  1    25.00%\n"
               "  overall             1    25.00%\n"));
  CHECK(has(t, "orderings: 1 pass, 1 fail\n"
               "  PASS  a slower [paper A]\n"
               "        iteration_time_s increasing: bb 1.000 < a 2.200\n"
               "  FAIL  ratio\n"
               "        iteration_time_s: a / bb = 2.200, expected at least 3\n"));
  CHECK(!has(t, "not stated"));
  const std::string v = to_text(result(f), true);
  CHECK(has(v, "  a  [G1; paper A] 8 GPUs, symmetric fidelity\n    config: a.json\n    --set parallel.pp=2\n"
               "    assumed parallel.pp: not stated\n    notes: n\n"));
}

TEST_CASE("text: a kind of metric without measurements says so") {
  const CaseFile f = sample();
  std::vector<Prediction> p(1);
  const std::string t = to_text(compare(f, {1}, p));
  CHECK(has(t, "memory MAPE: no measurements\n"));
  CHECK(has(t, "layer time MAPE: no measurements\n"));
  CHECK(has(t, "orderings: 0 pass, 0 fail, 2 skipped\n  SKIP  a slower [paper A]\n"));
}

TEST_CASE("JSON: rows, per-group and overall MAPE, orderings") {
  const CaseFile f = sample();
  const json j = to_json(result(f));
  for (const char* key : {"file", "description", "cases", "rows", "mape", "orderings", "orderings_passed",
                          "orderings_failed"}) {
    CHECK_MESSAGE(j.contains(key), key);
  }
  CHECK(j["file"] == "hand.json");
  REQUIRE(j["rows"].size() == 3);
  const json& row = j["rows"][0];
  CHECK(row["case"] == "a");
  CHECK(row["group"] == "G1");
  CHECK(row["metric"] == "iteration_time_s");
  CHECK(row["kind"] == "performance");
  CHECK(row["measured"] == 2.0);
  CHECK(row["predicted"] == 2.2);
  CHECK(row["error_pct"].get<double>() == doctest::Approx(10.0).scale(0));
  CHECK(j["rows"][1]["kind"] == "memory");
  const json& perf = j["mape"]["performance"];
  CHECK(perf["rows"] == 2);
  CHECK(perf["overall_pct"].get<double>() == doctest::Approx(7.5).scale(0));
  CHECK(perf["groups"][0]["group"] == "G1");
  CHECK(perf["groups"][1]["mape_pct"].get<double>() == doctest::Approx(5.0).scale(0));
  CHECK(perf["worst"]["case"] == "a");
  CHECK(j["mape"]["memory"]["overall_pct"].get<double>() == doctest::Approx(25.0).scale(0));
  // No layer time was measured: no rows, no figure.
  CHECK(j["mape"]["layer_time"]["rows"] == 0);
  CHECK(j["mape"]["layer_time"]["overall_pct"].is_null());
  CHECK(j["orderings"][0]["status"] == "pass");
  CHECK(j["orderings"][0]["kind"] == "increasing");
  CHECK(j["orderings"][0]["cases"] == json({"bb", "a"}));
  CHECK(j["orderings"][1]["status"] == "fail");
  CHECK(j["orderings"][1]["kind"] == "ratio");
  CHECK(j["orderings"][1]["min"] == 3);
  CHECK(j["orderings"][1]["max"].is_null());
  CHECK(j["orderings_passed"] == 1);
  const json& a = j["cases"][0];
  CHECK(a["id"] == "a");
  CHECK(a["config"] == "a.json");
  CHECK(a["oom"] == true);
  CHECK(a["assumptions"]["parallel.pp"] == "not stated");
  CHECK(a["predicted"].size() == kMetricCount);
  CHECK(a["measured"]["peak_memory_gib"] == 40.0);
  CHECK(j["cases"][1]["config"].is_null());  // inline

  // Without measurements of a kind its MAPE is null.
  std::vector<Prediction> p(1);
  const json only_b = to_json(compare(f, {1}, p));
  CHECK(only_b["mape"]["memory"]["overall_pct"].is_null());
  CHECK(only_b["mape"]["memory"]["worst"].is_null());
  CHECK(only_b["orderings"][0]["status"] == "skipped");
}

}  // namespace validate_output_test
