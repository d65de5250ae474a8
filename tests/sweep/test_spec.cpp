#include <doctest/doctest.h>

#include "config/error.hpp"
#include "sweep/spec.hpp"
#include "sweep_fixture.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_spec_test {

using namespace trainsim;
using sweep::testing::small_spec;

TEST_CASE("a sweep file: listed values, auto, and the defaults of omitted axes") {
  const sweep::Spec s = small_spec(R"({"tp": [2, 4], "pp": "auto", "schedule": "gpipe"})");
  CHECK(s.settings.size() == 1);
  CHECK(s.cluster_labels[0] == "1xdgx-a100");
  CHECK(s.global_batch == 64);
  CHECK(s.tp.values == std::vector<int>{2, 4});
  CHECK(s.pp.automatic);
  CHECK(s.dp.automatic);  // omitted tp, pp, dp: auto
  CHECK(s.vp.values == std::vector<int>{1});  // omitted others: the plan's default
  CHECK(s.schedule.values == std::vector<std::string>{"gpipe"});  // one value without a list
  CHECK(s.recompute.values == std::vector<workload::Recompute>{workload::Recompute::kNone});
}

TEST_CASE("a sweep file's mistakes name the JSON path") {
  auto error = [](const std::string& axes, const std::string& extra = "") {
    try {
      small_spec(axes, extra);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(R"({"tp": [2, 0]})") == "small.json: axes.tp[1]: expected a positive integer, got 0");
  CHECK(error(R"({"tp": "x"})") ==
        "small.json: axes.tp: expected \"auto\", a positive integer or a list of positive integers, got \"x\"");
  CHECK(error(R"({"tpp": 2})").rfind("small.json: axes.tpp: unknown key (did you mean \"tp\"?); known keys here: tp, pp", 0) == 0);
  CHECK(error(R"({"schedule": ["1f1b", "1f1c"]})").rfind("small.json: axes.schedule[1]: no schedule named \"1f1c\" (did you mean \"1f1b\"?); expected one of gpipe, 1f1b", 0) == 0);
  CHECK(error(R"({"zero_stage": [0, 0]})") == "small.json: axes.zero_stage[1]: listed twice: 0");
  CHECK(error(R"({"zero_stage": [0, 4]})") == "small.json: axes.zero_stage[1]: expected a ZeRO stage (0, 1, 2 or 3), got 4");
  CHECK(error(R"({"recompute": []})") == "small.json: axes.recompute: expected \"auto\" or a non-empty list of recompute modes, got []");
  CHECK(error(R"({"tp": []})") == "small.json: axes.tp: expected \"auto\" or a non-empty list of positive integers, got []");
  CHECK(error(R"({"recompute": "sometimes"})") ==
        "small.json: axes.recompute: expected \"auto\", a recompute mode (\"none\", \"selective\", \"full\" or \"selective-op\") or a list "
        "of recompute modes, got \"sometimes\"");
  CHECK(error("{}", R"(, "allow_cross_node_tp": 1)") == "small.json: allow_cross_node_tp: expected true or false, got 1");
  // A CUDA context larger than the GPU is the options' mistake, not every plan's.
  CHECK(error("{}", R"(, "options": {"cuda_context_mib": 100000})") ==
        "small.json: options.cuda_context_mib: 100000 MiB leaves no memory for tensors on the A100-SXM4-80GB (80 GB)");
}

TEST_CASE("a sweep file's keys get the config's suggestions, and its bounds the config's words") {
  auto error = [](const std::string& text) {
    try {
      sweep::parse_spec(nlohmann::json::parse(text), "s.json", ".");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string known = "known keys here: description, model, cluster, global_batch, options, parallel, allow_cross_node_tp, axes";
  CHECK(error(R"({"modle": "gpt-1.7b"})") == "s.json: modle: unknown key (did you mean \"model\"?); " + known);
  CHECK(error(R"({"globl_batch": 64})") == "s.json: globl_batch: unknown key (did you mean \"global_batch\"?); " + known);
  const std::string head = R"({"model": "gpt-1.7b", "cluster": {"node": "dgx-a100", "nodes": 1}, )";
  CHECK(error(head + R"("global_batch": 64, "axes": {"microbatch": 2}})").rfind(
            "s.json: axes.microbatch: unknown key (did you mean \"microbatch_size\"?); known keys here: tp,", 0) == 0);
  // As `trainsim run` says of parallel.global_batch (at most 1e9) and parallel.tp (at most 1e7).
  CHECK(error(head + R"("global_batch": 1e30})") == "s.json: global_batch: expected at most 1000000000, got 1e+30");
  CHECK(error(head + R"("global_batch": 0})") == "s.json: global_batch: expected a positive integer, got 0");
  CHECK(error(head + R"("global_batch": 64, "axes": {"tp": [1, 20000000]}})") ==
        "s.json: axes.tp[1]: expected at most 10000000, got 20000000");
}

TEST_CASE("a list of clusters: each read by the config loader, errors name the entry") {
  const nlohmann::json doc = nlohmann::json::parse(R"({"model": "gpt-1.7b", "global_batch": 64,
      "cluster": [{"node": "dgx-a100", "nodes": 1}, {"node": "dgx-h100", "nodes": 1}]})");
  const sweep::Spec s = sweep::parse_spec(doc, "two.json", ".");
  CHECK(s.cluster_labels == std::vector<std::string>{"1xdgx-a100", "1xdgx-h100"});
  const nlohmann::json bad = nlohmann::json::parse(R"({"model": "gpt-1.7b", "global_batch": 64,
      "cluster": [{"node": "dgx-a100", "nodes": 1}, {"node": "dgx-a100", "nodes": 0}]})");
  CHECK_THROWS_WITH_AS(sweep::parse_spec(bad, "two.json", "."),
                       doctest::Contains("two.json: cluster[1].nodes: expected a positive integer, got 0"),
                       config::ConfigError);
}

}  // namespace sweep_spec_test
