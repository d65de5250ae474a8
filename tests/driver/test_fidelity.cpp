#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "hw/topology.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_fidelity_test {

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
      {"parallel.zero_stage=3", "options.collectives=flow"},          // parameter gathers beside scatters
      // data parallelism across nodes, contending with pipeline traffic on shared NICs:
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=16", "parallel.global_batch=128", "cluster.node.nics_per_node=2",
       "options.collectives=flow"},
      // and the same with the other algorithms' flows: trees, hierarchical rings
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=16", "parallel.global_batch=128", "cluster.node.nics_per_node=2",
       "options.collectives=flow", "options.collective_algorithm=tree"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=16", "parallel.global_batch=128", "cluster.node.nics_per_node=2",
       "options.collectives=flow", "options.collective_algorithm=hierarchical"},
      // tensor ranks' hierarchical rings standing for each other on shared NICs
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=8", "parallel.global_batch=64", "cluster.node.nics_per_node=2",
       "options.collectives=flow", "options.collective_algorithm=hierarchical"},
  };
  for (const auto& overrides : cases) {
    std::vector<std::string> full = overrides;
    full.push_back("options.fidelity=full");
    const double symmetric = iteration_s(overrides);
    const double every_gpu = iteration_s(full);
    CAPTURE(overrides.size());
    CHECK(symmetric == doctest::Approx(every_gpu).scale(0).epsilon(0.01));
  }
}

TEST_CASE("a forced collective algorithm reaches both collective models") {
  // Data parallelism over 16 GPUs on 2 nodes (stage 0: GPUs 0-15): the
  // gradient all-reduce runs as a ring, a tree or hierarchically, and the
  // iteration changes with it, analytic or as flows.
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=2", "parallel.dp=16",
                                         "parallel.global_batch=128"};
  for (const char* model : {"options.collectives=analytic", "options.collectives=flow"}) {
    auto with = [&](const char* algorithm) {
      std::vector<std::string> o = plan;
      o.push_back(model);
      o.push_back(std::string("options.collective_algorithm=") + algorithm);
      return iteration_s(o);
    };
    CAPTURE(model);
    const double ring = with("ring");
    CHECK(with("tree") != ring);
    CHECK(with("hierarchical") != ring);
  }
}

TEST_CASE("analytic and flow collectives both see groups sharing a NIC") {
  // With one NIC per node, eight tied-embedding all-reduces (one per replica
  // and tensor rank) cross the same NIC at once: analytic collectives give
  // each an eighth of it, flows share it, and the two agree. (Up-links not
  // oversubscribed here: the analytic model charges oversubscription as if
  // every NIC under a leaf sent at once, flows only where they do.)
  const std::vector<std::string> one_nic = {"cluster.node.nics_per_node=1", "cluster.network.oversubscription=1"};
  const double own_nics = iteration_s({"cluster.network.oversubscription=1"});
  const double analytic = iteration_s(one_nic);
  std::vector<std::string> as_flows = one_nic;
  as_flows.push_back("options.collectives=flow");
  const double flow = iteration_s(as_flows);
  CHECK(analytic > own_nics * 1.01);
  CHECK(analytic == doctest::Approx(flow).scale(0).epsilon(0.01));
}

namespace {
const char* kDefault = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";
driver::WhatIf run_default(const std::vector<std::string>& overrides) {
  return driver::simulate(config::load_file(kDefault, overrides));
}
}  // namespace

TEST_CASE("a straggler slows the whole iteration, and only in full fidelity") {
  // GPU 2 (pipeline rank 1, tensor rank 0) at 80% speed: its tensor peer GPU 3
  // waits for it after every action, and the pipeline waits for both.
  const driver::WhatIf even_run = run_default({"options.fidelity=full"});
  const driver::WhatIf slow_run =
      run_default({"options.fidelity=full", R"(options.gpu_speed=[{"gpu": 2, "factor": 0.8}])"});
  const double even = even_run.sim->timeline.makespan.to_seconds();
  const double slow = slow_run.sim->timeline.makespan.to_seconds();
  CHECK(slow > even);
  // Rank 1 computes 16 x (F + B), its tensor-parallel all-reduces inside;
  // slowed by 1/0.8 but for those, it cannot finish sooner than that.
  const auto costs = run_default({}).costs->stages[1];
  const double comm = (costs.tp_comm_forward + costs.tp_comm_backward).to_seconds();
  CHECK(comm > 0.0);
  CHECK(slow >= 16 * (((costs.forward + costs.backward()).to_seconds() - comm) / 0.8 + comm));
  // Each of GPU 2's compute tasks: its compute at 0.8 of the speed, the
  // communication timed inside it as it was (the collective runs at the
  // group's pace, not the GPU's).
  const lower::Simulation& a = *even_run.sim;
  const lower::Simulation& b = *slow_run.sim;
  REQUIRE(a.graph.size() == b.graph.size());
  int checked = 0;
  for (core::TaskId id = 0; id < a.graph.size(); ++id) {
    const lower::TaskInfo& ti = a.info[id];
    if (ti.kind != lower::TaskKind::kCompute || a.gpu_of_rank[static_cast<std::size_t>(ti.rank)] != 2) continue;
    const double inside = ti.comm == lower::TaskInfo::kNoComm ? 0.0 : a.comm_inside[ti.comm].tp_s;
    const double d = a.graph.task(id).duration.to_seconds();
    CHECK(b.graph.task(id).duration.to_seconds() == doctest::Approx((d - inside) / 0.8 + inside).epsilon(1e-9));
    checked += inside > 0.0 ? 1 : 0;
  }
  CHECK(checked > 0);
  CHECK_THROWS_AS(run_default({R"(options.gpu_speed=[{"gpu": 2, "factor": 0.8}])"}), std::invalid_argument);
}

TEST_CASE("a failed link is routed around; with no way around, the error names it") {
  // GPU 2's NVLink port fails: its sends to GPU 4 go out through its NIC instead.
  const driver::WhatIf w =
      run_default({"options.fidelity=full", R"(options.links=[{"link": "gpu2<->node0.nvswitch", "failed": true}])"});
  const auto& nic = w.sim->network.bytes_carried();
  double through_nics = 0.0;
  for (hw::LinkId l = 0; l < nic.size(); ++l) {
    if (w.sim->topology->link_class(l) == hw::LinkClass::kNic) through_nics += nic[l];
  }
  CHECK(through_nics > 0.0);
  // With one NIC per node cut as well, GPU 2 has no way out at all.
  try {
    run_default({"options.fidelity=full", R"(options.links=[{"link": "gpu2<->node0.nvswitch", "failed": true},
                                                          {"link": "gpu2<->node0.nic2", "failed": true}])"});
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("no route in the topology from GPU 0 to GPU 2") != std::string::npos);
    CHECK(std::string(e.what()).find("gpu2<->node0.nic2") != std::string::npos);
  }
}

TEST_CASE("a degraded link slows what crosses it") {
  // Halve GPU 2's NVLink out-port: its activation and gradient sends take longer.
  const double even = run_default({"options.fidelity=full"}).sim->timeline.makespan.to_seconds();
  const double degraded =
      run_default({"options.fidelity=full", R"(options.links=[{"link": "gpu2->node0.nvswitch", "bandwidth_factor": 0.01}])"})
          .sim->timeline.makespan.to_seconds();
  CHECK(degraded > even);
}

TEST_CASE("a placement one pipeline cannot stand for is simulated in full") {
  // 12 replicas of 1 GPU each per stage on 8-GPU nodes: stage 0 covers node 0
  // and half of node 1, so replicas meet different NICs and leaves. Asked for
  // symmetric fidelity, the simulator simulates every GPU and says so.
  const std::vector<std::string> plan = {
      "cluster.nodes=3", "parallel.tp=1", "parallel.pp=2", "parallel.dp=12", "parallel.global_batch=24",
      "parallel.microbatch_size=1", R"(cluster.network={"kind": "fat-tree", "nodes_per_leaf": 2, "oversubscription": 3})",
      "cluster.node.nics_per_node=1", "options.collectives=flow"};
  const config::Scenario sc = config::load_file(kDefault, plan);
  const driver::WhatIf w = driver::simulate(sc);
  CHECK(w.sim->fell_back_to_full);
  CHECK(w.sim->gpu_of_rank.size() == 24);
  CHECK(driver::summarize(sc, w, "x").fidelity == "full (placement not uniform)");
  std::vector<std::string> full = plan;
  full.push_back("options.fidelity=full");
  CHECK(w.sim->timeline.makespan == run_default(full).sim->timeline.makespan);
}

TEST_CASE("HSDP shard groups laid out unlike on the nodes are simulated in full") {
  // GPT 1.7B over 3 nodes of 8, dp 24, ZeRO-3 in shard groups of 6: group 0
  // lies in node 0, group 1 spans nodes 0 and 1, so one pipeline cannot
  // stand for the others, in either collective mode. Groups of 8 (a node
  // each) can.
  for (const char* collectives : {"analytic", "flow"}) {
    CAPTURE(collectives);
    std::vector<std::string> plan = {"cluster.nodes=3",        "parallel.tp=1",          "parallel.pp=1",
                                     "parallel.dp=24",         "parallel.global_batch=24", "parallel.microbatch_size=1",
                                     "parallel.zero_stage=3",  "parallel.fsdp_shard_size=6",
                                     std::string("options.collectives=") + collectives};
    const config::Scenario sc = config::load_file(kDefault, plan);
    const driver::WhatIf w = driver::simulate(sc);
    CHECK(driver::summarize(sc, w, "x").fidelity == "full (shard groups laid out unlike)");
    std::vector<std::string> full = plan;
    full.push_back("options.fidelity=full");
    CHECK(w.sim->timeline.makespan == run_default(full).sim->timeline.makespan);
    plan[7] = "parallel.fsdp_shard_size=8";
    CHECK_FALSE(run_default(plan).sim->fell_back_to_full);
  }
}

TEST_CASE("full fidelity is reported as full, also where one pipeline is every GPU") {
  // tp 1, dp 1 on one node's 8 GPUs, pp 8: the one pipeline is the cluster.
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=8", "parallel.dp=1"};
  const config::Scenario asked_full = config::load_file(kDefault, [&] {
    auto p = plan;
    p.push_back("options.fidelity=full");
    return p;
  }());
  const driver::WhatIf full = driver::simulate(asked_full);
  CHECK(driver::summarize(asked_full, full, "x").fidelity == "full");
  const config::Scenario asked_symmetric = config::load_file(kDefault, plan);
  const driver::WhatIf symmetric = driver::simulate(asked_symmetric);
  CHECK(driver::summarize(asked_symmetric, symmetric, "x").fidelity == "symmetric");
  CHECK(full.sim->timeline.makespan == symmetric.sim->timeline.makespan);
}

TEST_CASE("a link name that is no link's suggests the nearest, in the form given") {
  // A typo one letter off (nvswitchx) gets the link it meant; a two-way name
  // the two-way form; a name near none an example of the form.
  auto error_of = [](const std::string& link) {
    try {
      run_default({"options.fidelity=full", R"(options.links=[{"link": ")" + link + R"(", "failed": true}])"});
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("gpu2->node0.nvswitchx") ==
        "options.links[0].link: no link named \"gpu2->node0.nvswitchx\" among the nodes in use (did you mean "
        "\"gpu2->node0.nvswitch\"?)");
  CHECK(error_of("gpu2<->node0.nvswich") ==
        "options.links[0].link: no link named \"gpu2<->node0.nvswich\" among the nodes in use (did you mean "
        "\"gpu2<->node0.nvswitch\"?)");
  CHECK(error_of("zzzz").find("(names look like \"") != std::string::npos);
}

TEST_CASE("two entries for one link are refused, naming both") {
  // gpu2->node0.nvswitch given degraded, then failed (as part of gpu2<->...):
  // which would hold depended on the order. Either direction alone is fine.
  try {
    run_default({"options.fidelity=full",
                 R"(options.links=[{"link": "gpu2->node0.nvswitch", "bandwidth_factor": 0.5},
                                   {"link": "gpu2<->node0.nvswitch", "failed": true}])"});
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "options.links[1].link: gpu2->node0.nvswitch is already given at options.links[0] "
                                   "(one entry per link)");
  }
  CHECK(run_default({"options.fidelity=full", R"(options.links=[{"link": "gpu2->node0.nvswitch", "bandwidth_factor": 0.5},
                                                               {"link": "node0.nvswitch->gpu2", "failed": true}])"})
            .sim->timeline.makespan > core::Time::zero());
}

}  // namespace driver_fidelity_test
