#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "load_error.hpp"
#include "schedule/action.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_csv_schedule_test {

using namespace trainsim;
using nlohmann::json;

namespace {

// A scratch folder holding the CSV files of these tests.
std::filesystem::path scratch() {
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_test_config_csv";
  std::filesystem::create_directories(dir);
  return dir;
}

void write(const std::string& name, const std::string& text) {
  std::ofstream(scratch() / name, std::ios::binary) << text;
}

// pp 2, m 2 (global batch 2 of 1 per micro-batch), the schedule given.
json doc(const std::string& schedule) {
  json d = json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": "gpt-1.7b",
    "parallel": {"tp": 4, "pp": 2, "dp": 1, "microbatch_size": 1, "global_batch": 2}
  })");
  d["parallel"]["schedule"] = schedule;
  return d;
}

std::string error_of(const json& d, const std::vector<std::string>& overrides = {}) {
  return config::testing::load_error(d, overrides, "test.json", scratch().string());
}

// 1F1B for p = 2, m = 2.
const char* kGood = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n";

}  // namespace

TEST_CASE("csv:PATH reads the schedule relative to the config's folder") {
  write("good.csv", kGood);
  const config::Scenario sc = config::load_document(doc("csv:good.csv"), "test.json", scratch().string());
  CHECK(sc.plan.schedule == "csv:good.csv");
  REQUIRE(sc.csv_schedule != nullptr);
  CHECK(sc.csv_schedule->name() == "csv:good.csv");
  const schedule::Program p = sc.csv_schedule->program(schedule::Shape::looped(2, 1, 2));
  CHECK(schedule::to_string(p.ranks[1]) == "1F0 1B0 1F1 1B1");
  // An absolute path is taken as it is.
  CHECK(error_of(doc("csv:" + (scratch() / "good.csv").string())) == "");
  // A plugin name leaves csv_schedule empty.
  CHECK(config::load_document(doc("1f1b"), "test.json", ".").csv_schedule == nullptr);
}

TEST_CASE("csv:PATH errors name the config, parallel.schedule, and the CSV's line and column") {
  const std::string dir = scratch().string();
  CHECK(error_of(doc("csv:nope.csv")) ==
        "test.json: parallel.schedule: " + dir + "/nope.csv: cannot open schedule CSV file: no such file");
  CHECK(error_of(doc("csv:")) ==
        "test.json: parallel.schedule: expected a file name after \"csv:\", e.g. \"csv:my-schedule.csv\"");
  write("bad_token.csv", "0F0,0F1,0B0,0B1\n1F0,1X0,1F1,1B1\n");
  CHECK(error_of(doc("csv:bad_token.csv")).rfind(
            "test.json: parallel.schedule: " + dir + "/bad_token.csv:2:5: bad action \"1X0\": expected", 0) == 0);
  // The shape: rows against pp, stages against pp x vp, micro-batches against the plan's.
  write("three_rows.csv", "0F0,0B0\n1F0,1B0\n2F0,2B0\n");
  CHECK(error_of(doc("csv:three_rows.csv")) == "test.json: parallel.schedule: " + dir +
                                                   "/three_rows.csv: 3 rows (one per pipeline rank), but the plan "
                                                   "has 2 pipeline ranks (pp)");
  write("four_stages.csv", "0F0,2F0,2B0,0B0,0F1,2F1,2B1,0B1\n1F0,3F0,3B0,1B0,1F1,3F1,3B1,1B1\n");
  CHECK(error_of(doc("csv:four_stages.csv")) ==
        "test.json: parallel.schedule: " + dir + "/four_stages.csv: stages 0..3 (4), but the plan has 2 (pp x vp = 2 x 1)");
  CHECK(error_of(doc("csv:four_stages.csv"), {"parallel.vp=2"}) == "");
  CHECK(error_of(doc("csv:good.csv"), {"parallel.global_batch=4"}) ==
        "test.json: parallel.schedule: " + dir +
            "/good.csv: micro-batches 0..1 (2), but the plan runs 4 per pipeline (global_batch / (dp x "
            "microbatch_size))");
  // Set on the command line: the message says so.
  CHECK(error_of(doc("1f1b"), {"parallel.schedule=csv:nope.csv"}) ==
        "test.json: parallel.schedule: " + dir +
            "/nope.csv: cannot open schedule CSV file: no such file (from --set parallel.schedule=csv:nope.csv)");
  // An unknown plugin name mentions the csv: form.
  CHECK(error_of(doc("1f1c")).find("or csv:PATH") != std::string::npos);
}

}  // namespace config_csv_schedule_test
