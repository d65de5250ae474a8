// Inputs made to break the reader: counts whose product wraps, objects with
// a hundred thousand keys, keys of megabytes, numbers past a double, loops of
// symbolic links. Each gets a one-line message, quickly.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_hostile_input_test {

using namespace trainsim::config;
using nlohmann::json;

namespace {

std::string error_of(const json& doc) { return testing::load_error(doc); }

// One GPU (one node of one GPU) and a model whose 24 layers divide the pp below.
json one_gpu() {
  return json::parse(R"({
    "cluster": {"nodes": 1, "node": {"gpu": "A100-SXM4-80GB", "gpus_per_node": 1, "nvlink_gb_per_s": 300,
                "nvlink_latency_us": 1, "nvlink_bus_gb_per_s": 200, "nics_per_node": 1, "nic_gbit_per_s": 200,
                "nic_bus_gb_per_s": 20, "nic_latency_us": 5}},
    "model": "gpt-1.7b",
    "parallel": {"tp": 1, "pp": 1, "dp": 1, "global_batch": 1}
  })");
}

}  // namespace

TEST_CASE("a product of parallel degrees that would wrap is no GPU count") {
  // 4508801 x 1073283 x 7623851 is 3.7e19; in 64-bit two's complement it
  // wraps to exactly 1, which a wrapping check took for the one GPU.
  json d = one_gpu();
  d["parallel"]["tp"] = 4508801;
  d["parallel"]["pp"] = 1073283;
  d["parallel"]["dp"] = 7623851;
  CHECK(error_of(d) ==
        "test.json: parallel: tp x pp x dp = 4508801 x 1073283 x 7623851 = about 3.7e+19, but the cluster has 1 GPUs "
        "(cluster.nodes = 1 x cluster.node.gpus_per_node = 1)");
}

TEST_CASE("pp x vp x micro-batches is bounded without wrapping") {
  // 24 layers on 8 GPUs as pp 8 x dp 1: vp 3 gives 24 stages; 1e9 samples of
  // 1 make 1e9 micro-batches, and 8 x 3 x 1e9 = 2.4e10 passes the bound.
  json d = json::parse(R"({"cluster": {"node": "dgx-a100", "nodes": 1}, "model": "gpt-1.7b",
                          "parallel": {"tp": 1, "pp": 8, "dp": 1, "vp": 3, "global_batch": 1000000000,
                                       "schedule": "interleaved-1f1b"}})");
  CHECK(error_of(d).rfind("test.json: parallel: pp x vp x micro-batches = 8 x 3 x 1000000000 = 24000000000 is more "
                          "than the 2500000 the simulator takes",
                          0) == 0);
}

TEST_CASE("a collective group past what the simulator holds is refused at once") {
  // 10,000,000 single-GPU nodes in one data-parallel group: before any costing.
  json d = one_gpu();
  d["cluster"]["nodes"] = 10000000;
  d["parallel"]["dp"] = 10000000;
  d["parallel"]["global_batch"] = 10000000;
  CHECK(error_of(d) == "test.json: parallel.dp: 10000000 ranks in one collective group, more than the 4194303 the "
                       "simulator takes");
}

TEST_CASE("an object of 100,000 keys is read in linear time") {
  // The duplicate-key check once compared each key with every earlier one:
  // 10^5 keys made 5 x 10^9 comparisons. The result is asserted, not the time.
  std::string text = "{";
  for (int i = 0; i < 100000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  const json parsed = parse_json(text + "}", "keys.json");
  CHECK(parsed.size() == 100000);
  CHECK(parsed["k99999"] == 99999);
  // The same with the first key again at the end: named by its path.
  try {
    parse_json(text + ",\"k0\":1}", "keys.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "keys.json: k0: duplicate key (each key may appear once in an object)");
  }
  // And as a config: the first unknown key is named, the rest never compared.
  std::string config = R"({"cluster": {"node": "dgx-a100", "nodes": 1, )";
  for (int i = 0; i < 100000; ++i) config += "\"x" + std::to_string(i) + "\": 1, ";
  config += R"("network": "selene-fat-tree"}, "model": "gpt-1.7b", "parallel": {"global_batch": 8}})";
  CHECK(error_of(parse_json(config, "test.json")).rfind("test.json: cluster.x0: unknown key", 0) == 0);
}

TEST_CASE("a key of 20 MB is cut short in the message, and costs no edit distance") {
  // Edit distance against every known key would take 20 MB x the name's
  // length each; the difference in length rules each out first.
  json d = one_gpu();
  const std::string key(20 << 20, 'q');
  d["parallel"][key] = 1;
  const std::string message = error_of(d);
  CHECK(message.rfind("test.json: parallel.qqqq", 0) == 0);
  CHECK(message.size() < 1000);
  CHECK(message.find(std::string(61, 'q')) == std::string::npos);  // at most 60 bytes of it
  CHECK(message.find("...: unknown key; known keys here: tp, pp, dp") != std::string::npos);
}

TEST_CASE("a loop of symbolic links is named as one") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "trainsim_test_symlink_loop";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink(dir / "b.json", dir / "a.json");
  fs::create_symlink(dir / "a.json", dir / "b.json");
  fs::create_symlink(dir / "gone.json", dir / "dangling.json");
  auto error = [](const fs::path& p) {
    try {
      load_file(p.string());
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(dir / "a.json") == (dir / "a.json").string() + ": cannot open config file: a loop of symbolic links");
  CHECK(error(dir / "dangling.json") ==
        (dir / "dangling.json").string() + ": cannot open config file: a symbolic link to a file that does not exist");
  CHECK(error(dir / "none.json") == (dir / "none.json").string() + ": cannot open config file: no such file");
  fs::remove_all(dir);
}

TEST_CASE("the empty key is a key: a repeat of it is named") {
  try {
    parse_json(R"({"a": {"": 1, "": 2}})", "x.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "x.json: a.\"\": duplicate key (each key may appear once in an object)");
  }
}

}  // namespace config_hostile_input_test
