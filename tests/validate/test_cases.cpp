// Reading a validation case file: both config forms, overrides, measured
// metrics in a fixed order, and one-line errors naming the JSON path.
#include <doctest/doctest.h>

#include <string>

#include "validate/cases.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace validate_cases_test {

using namespace trainsim;
using namespace trainsim::validate;
using nlohmann::json;

namespace {

json one_case() {
  return json::parse(R"({
    "id": "a", "group": "G", "source": "paper",
    "config": {"cluster": {"node": "dgx-a100", "nodes": 1}, "model": "gpt-1.7b",
               "parallel": {"tp": 2, "pp": 4, "global_batch": 64}},
    "measured": {"iteration_time_s": 1.0}
  })");
}

json file_of(const json& c) { return json{{"cases", json::array({c})}}; }

// The message a document fails with ("" if it loads).
std::string error_of(const json& doc) {
  try {
    parse_cases(doc, "x.json", "dir");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a case with an inline config, overrides, assumptions and measurements") {
  json c = one_case();
  c["set"] = {"parallel.schedule=gpipe", "parallel.pp=2"};
  c["assumptions"] = {{"parallel.pp", "not stated"}, {"model", "the paper's shape"}};
  // Written out of order: loading lists them in all_metrics() order.
  c["measured"] = {{"peak_memory_gib", 30}, {"mfu", 0.5}, {"iteration_time_s", 2.0}};
  c["notes"] = "n";
  json doc = file_of(c);
  doc["description"] = "d";
  const CaseFile f = parse_cases(doc, "x.json", "dir");
  REQUIRE(f.cases.size() == 1);
  const Case& k = f.cases[0];
  CHECK(f.description == "d");
  CHECK(k.id == "a");
  CHECK(k.group == "G");
  CHECK(k.source == "paper");
  CHECK(k.config.is_object());
  CHECK(k.config_file.empty());
  CHECK(k.set == std::vector<std::string>{"parallel.schedule=gpipe", "parallel.pp=2"});
  REQUIRE(k.assumptions.size() == 2);
  CHECK(k.assumptions[0].first == "model");  // sorted by key
  CHECK(k.assumptions[1].second == "not stated");
  REQUIRE(k.measured.size() == 3);
  CHECK(k.measured[0] == std::pair{Metric::kIterationTime, 2.0});
  CHECK(k.measured[1] == std::pair{Metric::kMfu, 0.5});
  CHECK(k.measured[2] == std::pair{Metric::kPeakMemoryGib, 30.0});
  CHECK(k.notes == "n");
  CHECK(f.find("a") == &k);
  CHECK(f.find("b") == nullptr);
}

TEST_CASE("a config given as a file is relative to the case file's folder") {
  json c = one_case();
  c["config"] = "configs/x.json";
  CHECK(parse_cases(file_of(c), "dir/cases.json", "dir").cases[0].config_file == "dir/configs/x.json");
  c["config"] = "/abs/x.json";
  CHECK(parse_cases(file_of(c), "dir/cases.json", "dir").cases[0].config_file == "/abs/x.json");
  c["config"] = "x.json";  // a case file in the working directory has no folder
  CHECK(parse_cases(file_of(c), "cases.json", "").cases[0].config_file == "x.json");
  c["config"] = "../configs/./x.json";
  CHECK(parse_cases(file_of(c), "dir/cases.json", "dir").cases[0].config_file == "configs/x.json");
}

TEST_CASE("the sample case file loads") {
  const CaseFile f = load_cases(std::string(TRAINSIM_SOURCE_DIR) + "/tests/validate_sample/cases.json");
  REQUIRE(f.cases.size() == 3);
  CHECK(f.cases[1].config_file == std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/gpt-1.7b-8xa100.json");
  REQUIRE(f.orderings.size() == 2);
  CHECK(f.orderings[0].increasing == std::vector<std::string>{"sample_1f1b", "sample_gpipe"});
  CHECK(f.orderings[0].metric == Metric::kPeakMemoryGib);
  REQUIRE(f.orderings[1].ratio);
  CHECK(f.orderings[1].ratio->min == 1.5);
  CHECK(f.orderings[1].case_ids() == std::vector<std::string>{"sample_1f1b", "sample_gpipe"});
}

TEST_CASE("case file errors name the file, the JSON path and the case") {
  CHECK(error_of(json::array()) == "x.json: (top level): expected a JSON object with \"cases\" (and optionally \"orderings\")");
  CHECK(error_of(json{{"case", json::array()}}).starts_with("x.json: case: unknown key (did you mean \"cases\"?)"));
  CHECK(error_of(json::object()) == "x.json: cases: is missing (expected a list of cases)");
  CHECK(error_of(json{{"cases", json::array()}}) == "x.json: cases: expected a non-empty list of cases, got []");

  json c = one_case();
  c["mesured"] = c["measured"];
  CHECK(error_of(file_of(c)).starts_with(
      "x.json: cases[0].mesured: unknown key (did you mean \"measured\"?); known keys here: id, group, source"));
  CHECK(error_of(file_of(c)).ends_with("(case \"a\")"));

  c = one_case();
  c.erase("id");
  CHECK(error_of(file_of(c)) == "x.json: cases[0].id: is missing (expected a unique case id)");
  c = one_case();
  c.erase("group");
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].group: is missing"));
  c = one_case();
  c["source"] = "";
  CHECK(error_of(file_of(c)) == "x.json: cases[0].source: expected non-empty text, got \"\" (case \"a\")");
  c = one_case();
  c["config"] = 3;
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].config: expected a config object, or the path"));
  c = one_case();
  c["set"] = {"parallel.pp"};
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].set[0]: expected \"key.path=value\""));
  c = one_case();
  c["assumptions"] = {{"parallel.pp", 2}};
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].assumptions.parallel.pp: expected non-empty text"));

  c = one_case();
  c["measured"] = json::object();
  // Nothing measured and no ordering naming the case: it would check nothing.
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].measured: expected at least one measured metric, or an "
                                         "ordering that names case"));
  c["measured"] = {{"model_tflops", 137}};
  CHECK(error_of(file_of(c)) ==
        "x.json: cases[0].measured.model_tflops: unknown metric \"model_tflops\" (did you mean "
        "\"model_tflops_per_gpu\"?); supported metrics: iteration_time_s, model_tflops_per_gpu, "
        "hardware_tflops_per_gpu, mfu, hfu, samples_per_gpu_per_s, tokens_per_s, tokens_per_gpu_per_s, samples_per_s, "
        "peak_memory_gib, "
        "peak_memory_gb, model_state_gib, activation_memory_gib, device_memory_used_gb, layer_forward_ms, "
              "layer_backward_ms "
        "(case \"a\")");
  c["measured"] = {{"iteration_time_s", 0}};
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].measured.iteration_time_s: expected a positive number, got 0"));
  c["measured"] = {{"mfu", 52}};
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].measured.mfu: expected a fraction of peak from 0 to 1"));
  // Bounded as config values are: 1e308 would turn the error into -100% of a
  // 309-digit number and the MAPE into inf; 1e-300 would overflow the error.
  c["measured"] = {{"iteration_time_s", 1e308}};
  CHECK(error_of(file_of(c)) == "x.json: cases[0].measured.iteration_time_s: expected a measured value from 1e-06 to "
                                "1e+12, got 1e+308 (case \"a\")");
  c["measured"] = {{"tokens_per_s", 1e-300}};
  CHECK(error_of(file_of(c)).starts_with("x.json: cases[0].measured.tokens_per_s: expected a measured value from 1e-06"));
  c["measured"] = {{"tokens_per_s", 1e12}, {"layer_forward_ms", 1e-6}};  // the bounds themselves are fine
  CHECK(error_of(file_of(c)) == "");

  json two = file_of(one_case());
  two["cases"].push_back(one_case());
  CHECK(error_of(two) == "x.json: cases[1].id: duplicate case id \"a\" (ids must be unique)");
}

TEST_CASE("ordering errors") {
  auto with = [](const json& ordering) {
    json doc = file_of(one_case());
    json b = one_case();
    b["id"] = "b";
    doc["cases"].push_back(b);
    doc["orderings"] = json::array({ordering});
    return error_of(doc);
  };
  const json inc = json::parse(R"({"name": "n", "metric": "mfu", "increasing": ["a", "b"]})");
  CHECK(with(inc).empty());
  json o = inc;
  o["increasing"] = {"a", "c"};
  CHECK(with(o) == "x.json: orderings[0].increasing[1]: no case with id \"c\" in this file");
  o["increasing"] = {"a"};
  CHECK(with(o).starts_with("x.json: orderings[0].increasing: expected a list of at least two case ids"));
  o = inc;
  o["metric"] = "mfux";
  CHECK(with(o).starts_with("x.json: orderings[0].metric: unknown metric \"mfux\" (did you mean \"mfu\"?); supported"));
  o = inc;
  o["ratio"] = {{"numerator", "a"}, {"denominator", "b"}, {"min", 1}};
  CHECK(with(o) == "x.json: orderings[0]: expected exactly one of \"increasing\" (a list of case ids) or \"ratio\"");
  o.erase("increasing");
  CHECK(with(o).empty());
  o["ratio"] = {{"numerator", "a"}, {"denominator", "z"}, {"max", 1}};
  CHECK(with(o) == "x.json: orderings[0].ratio.denominator: no case with id \"z\" in this file");
  o["ratio"] = {{"numerator", "a"}, {"denominator", "b"}};
  CHECK(with(o) == "x.json: orderings[0].ratio: expected \"min\", \"max\" or both");
  o["ratio"] = {{"numerator", "a"}, {"denominator", "b"}, {"min", 2}, {"max", 1}};
  CHECK(with(o) == "x.json: orderings[0].ratio: min 2 is larger than max 1");
  o["ratio"] = {{"numerator", "a"}, {"denominator", "b"}, {"maxx", 2}};
  CHECK(with(o) == "x.json: orderings[0].ratio.maxx: unknown key (did you mean \"max\"?); known keys here: numerator, "
                   "denominator, min, max");
  o = inc;
  o["sauce"] = "x";
  CHECK(with(o).starts_with("x.json: orderings[0].sauce: unknown key (did you mean \"source\"?)"));
}

TEST_CASE("a case file that cannot be read or parsed") {
  auto error_loading = [](const std::string& path) {
    try {
      load_cases(path);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_loading("nope.json") == "nope.json: cannot open case file: no such file");
  const std::string malformed = std::string(TRAINSIM_SOURCE_DIR) + "/tests/cli/bad/malformed.json";
  CHECK(error_loading(malformed).find("malformed.json:2:") != std::string::npos);
}

TEST_CASE("a case with nothing measured loads when an ordering names it") {
  // A published claim with no per-run figure ("2BP is faster than 1F1B") is
  // two cases compared by an ordering; neither needs a measurement.
  json a = one_case();
  a["measured"] = json::object();
  json b = one_case();
  b["id"] = "b";
  json doc = {{"cases", json::array({a, b})}};
  doc["orderings"] = json::parse(R"([{"name": "b beats a", "metric": "iteration_time_s", "increasing": ["b", "a"]}])");
  CHECK(error_of(doc) == "");
  const CaseFile f = parse_cases(doc, "x.json", "dir");
  CHECK(f.cases[0].measured.empty());
}

}  // namespace validate_cases_test
