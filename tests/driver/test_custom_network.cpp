#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_custom_network_test {

using namespace trainsim;

namespace {

// GPT 1.7B on 4 DGX A100 nodes (8 NICs of 200 Gb/s each), two nodes per leaf.
// `network` is the cluster's network object.
config::Scenario scenario(const std::string& network, std::vector<std::string> overrides = {}) {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 4},
    "model": "gpt-1.7b",
    "parallel": {"tp": 2, "pp": 4, "dp": 4, "microbatch_size": 2, "global_batch": 64}
  })");
  doc["cluster"]["network"] = nlohmann::json::parse(network);
  return config::load_document(doc, "custom.json", ".", overrides);
}

// The same fat tree as the built-in one (non-blocking: each leaf's up-link
// carries its 2 nodes x 8 NICs x 200 Gb/s = 3200 Gb/s), with the up-link's
// bandwidth as given.
std::string fat_tree_by_hand(int uplink_gbit_per_s) {
  return R"({"kind": "custom", "switches": [{"name": "leaf{n/2}"}, {"name": "spine"}], "links": [
    {"from": "node{n}.nic{i}", "to": "leaf{n/2}", "gbit_per_s": 200},
    {"from": "leaf{n/2}", "to": "spine", "gbit_per_s": )" +
         std::to_string(uplink_gbit_per_s) + "}]}";
}

const char* kFatTree = R"({"kind": "fat-tree", "nodes_per_leaf": 2})";

}  // namespace

TEST_CASE("a custom network is simulated in full, and says so") {
  const config::Scenario sc = scenario(fat_tree_by_hand(3200));
  const driver::WhatIf w = driver::simulate(sc);
  CHECK(w.sim->fell_back_to_full);
  CHECK(w.sim->gpu_of_rank.size() == 32);
  CHECK(driver::summarize(sc, w, "x").fidelity == "full (custom network)");
}

TEST_CASE("a custom network wired as a built-in one gives its times") {
  // Same cables, same bandwidths: the iteration takes as long, with analytic
  // or flow collectives.
  for (const char* collectives : {"options.collectives=analytic", "options.collectives=flow"}) {
    CAPTURE(collectives);
    const double by_hand =
        driver::simulate(scenario(fat_tree_by_hand(3200), {collectives})).sim->timeline.makespan.to_seconds();
    const double built_in = driver::simulate(scenario(kFatTree, {collectives, "options.fidelity=full"}))
                                .sim->timeline.makespan.to_seconds();
    CHECK(by_hand == doctest::Approx(built_in).scale(0).epsilon(1e-9));
  }
}

TEST_CASE("a thin cable between the leaves slows what crosses it") {
  // Pipeline stages 1 and 2 sit on different leaves; stage 0 and 3 all-reduce
  // the tied embedding across them. One 25 Gb/s cable instead of 3200 Gb/s.
  for (const char* collectives : {"options.collectives=analytic", "options.collectives=flow"}) {
    CAPTURE(collectives);
    const auto makespan = [&](int uplink) {
      return driver::simulate(scenario(fat_tree_by_hand(uplink), {collectives})).sim->timeline.makespan.to_seconds();
    };
    const double fat = makespan(3200);
    const double thin = makespan(25);
    CHECK(thin > fat * 1.01);
  }
}

}  // namespace driver_custom_network_test
