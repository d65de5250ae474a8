#include <doctest/doctest.h>

#include "config/error.hpp"
#include "sweep/report.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_report_test {

using namespace trainsim;

namespace {
sweep::Report sample() {
  sweep::Report rep;
  rep.sweep = "s.json";
  rep.sweep_hash = "00112233aabbccdd";
  rep.combinations = 5;
  rep.valid_plans = 3;
  rep.invalid["tp x pp x dp differs from the GPU count"] = 2;
  sweep::Result a;
  a.key = "tp=2 pp=4 dp=1 vp=1 mbs=4 1f1b zero=0 sp=off rc=none";
  a.cluster = "1xdgx-a100";
  a.plan.tp = 2;
  a.plan.pp = 4;
  a.plan.microbatch_size = 4;
  a.plan.global_batch = 64;
  a.status = sweep::Status::kOk;
  a.iteration_time_s = 0.1234567890123;
  a.tokens_per_s = 1.0e6 / 3.0;
  a.mfu = 0.45;
  a.peak_memory_bytes = 12345678901;
  a.bubble_fraction = 0.1;
  sweep::Result b = a;
  b.key = "tp=8 pp=1 dp=1 vp=1 mbs=4 1f1b zero=0 sp=off rc=none";
  b.plan.tp = 8;
  b.plan.pp = 1;
  b.status = sweep::Status::kOom;
  sweep::Result c = a;
  c.key = "tp=1 pp=8 dp=1 vp=1 mbs=4 1f1b zero=0 sp=off rc=none";
  c.status = sweep::Status::kFailed;
  c.error = "too long, \"really\"";
  rep.results = {a, b, c};
  return rep;
}
}  // namespace

TEST_CASE("JSON reads back to the same report, and CSV quotes what it must") {
  const sweep::Report rep = sample();
  const nlohmann::json doc = sweep::to_json(rep);
  CHECK(doc["results"][0]["rank"] == 1);
  CHECK(doc["results"][1]["rank"].is_null());
  const sweep::Report back = sweep::from_json(doc, "r.json");
  CHECK(sweep::to_json(back) == doc);
  CHECK(sweep::to_csv(back) == sweep::to_csv(rep));
  const std::string csv = sweep::to_csv(rep);
  CHECK(csv.find("\n1,ok,1xdgx-a100,tp=2 pp=4") != std::string::npos);
  CHECK(csv.find(",\"too long, \"\"really\"\"\"\n") != std::string::npos);
}

TEST_CASE("tensor-parallel overlap of the forward only reads back as such") {
  sweep::Report rep = sample();
  rep.results[0].plan.tp = 2;
  rep.results[0].plan.sequence_parallel = true;
  rep.results[0].plan.overlap.tp_comm = true;
  rep.results[0].plan.overlap.tp_comm_backward = false;
  rep.results[1].plan.overlap.tp_comm = true;  // both passes
  const nlohmann::json doc = sweep::to_json(rep);
  CHECK(doc["results"][0]["tp_comm_overlap"] == "forward");
  CHECK(doc["results"][1]["tp_comm_overlap"] == true);
  CHECK(doc["results"][2]["tp_comm_overlap"] == false);
  const sweep::Report back = sweep::from_json(doc, "r.json");
  CHECK(back.results[0].plan.overlap.tp_comm);
  CHECK(!back.results[0].plan.overlap.tp_comm_backward);
  CHECK(back.results[1].plan.overlap.tp_comm_backward);
  CHECK(sweep::to_csv(rep).find(",forward,") != std::string::npos);
}

TEST_CASE("the sweep's content hash is written and read back; a file without it reads too") {
  nlohmann::json doc = sweep::to_json(sample());
  CHECK(doc["sweep_hash"] == "00112233aabbccdd");
  CHECK(sweep::from_json(doc, "r.json").sweep_hash == "00112233aabbccdd");
  // A --baseline written by an earlier version has none (sweep-merge refuses it, the gate does not need it).
  doc.erase("sweep_hash");
  CHECK(sweep::from_json(doc, "r.json").sweep_hash.empty());
  doc["sweep_hash"] = 7;
  CHECK_THROWS_WITH_AS(sweep::from_json(doc, "r.json"), "r.json: sweep_hash: has the wrong type: 7", config::ConfigError);
}

TEST_CASE("a malformed result file names the JSON path") {
  nlohmann::json doc = sweep::to_json(sample());
  doc["results"][1]["tp"] = "eight";
  CHECK_THROWS_WITH_AS(sweep::from_json(doc, "r.json"), "r.json: results[1].tp: has the wrong type: \"eight\"",
                       config::ConfigError);
  doc.erase("valid_plans");
  CHECK_THROWS_WITH_AS(sweep::from_json(doc, "r.json"),
                       "r.json: valid_plans: is missing (expected the JSON a sweep writes with --json)",
                       config::ConfigError);
}

TEST_CASE("the table: top plans only, aligned") {
  const sweep::Report rep = sample();
  const auto rows = sweep::top_plans(rep, 10);
  REQUIRE(rows.size() == 1);  // only one plan fits
  const std::string t = sweep::table(rows, true);
  CHECK(t.find("rank  plan") != std::string::npos);
  CHECK(t.find("    1  tp=2 pp=4 dp=1 vp=1 mbs=4 1f1b zero=0 sp=off rc=none      0.1235 s") != std::string::npos);
  CHECK(t.find("45.0%") != std::string::npos);
  CHECK(t.find("11.50 GiB") != std::string::npos);  // 12345678901 / 2^30 = 11.4978
}

}  // namespace sweep_report_test
