#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"

using namespace trainsim;

namespace {

// Iteration time of a small GPT 1.7B plan on 4 DGX A100 nodes in a fat tree
// (2 nodes per leaf, oversubscribed 2:1), with overrides.
double iteration_s(std::vector<std::string> overrides) {
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 4,
                "network": {"kind": "fat-tree", "nodes_per_leaf": 2, "oversubscription": 2}},
    "model": "gpt-1.7b",
    "parallel": {"tp": 2, "pp": 4, "dp": 4, "microbatch_size": 2, "global_batch": 64}
  })");
  const config::Scenario sc = config::load_document(doc, "fidelity.json", ".", overrides);
  return driver::simulate(sc).sim->timeline.makespan.to_seconds();
}

}  // namespace

TEST_CASE("symmetric and full fidelity agree within 1%") {
  // One pipeline standing for all, against every GPU simulated. Each case
  // stresses a different kind of sharing:
  const std::vector<std::vector<std::string>> cases = {
      {},                                            // defaults: data parallelism inside nodes
      {"options.collectives=flow"},                  // rings as flows
      {"cluster.node.nics_per_node=1"},              // eight GPUs' pipeline sends on one NIC
      {"cluster.node.nics_per_node=1", "options.collectives=flow"},  // and the rings' flows beside them
      {"parallel.tp=8", "parallel.dp=1", "options.collectives=flow"},  // one GPU per node per stage
      // data parallelism across nodes, contending with pipeline traffic on shared NICs:
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=16", "parallel.global_batch=128", "cluster.node.nics_per_node=2",
       "options.collectives=flow"},
  };
  for (const auto& overrides : cases) {
    std::vector<std::string> full = overrides;
    full.push_back("options.fidelity=full");
    const double symmetric = iteration_s(overrides);
    const double every_gpu = iteration_s(full);
    CAPTURE(overrides.size());
    CHECK(symmetric == doctest::Approx(every_gpu).epsilon(0.01));
  }
}

TEST_CASE("flow collectives see contention the analytic ones do not") {
  // With one NIC per node, eight tied-embedding all-reduces (one per replica
  // and tensor rank) cross the same NIC: as flows they take longer.
  const double analytic = iteration_s({"cluster.node.nics_per_node=1"});
  const double flow = iteration_s({"cluster.node.nics_per_node=1", "options.collectives=flow"});
  CHECK(flow > analytic * 1.01);
}
