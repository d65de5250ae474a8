// A what-if, fully resolved: the cluster, the model, the plan and the options.
#pragma once

#include <string>

#include "hw/cluster_spec.hpp"
#include "workload/plan.hpp"
#include "workload/transformer.hpp"

namespace trainsim::config {

struct Options {
  // Exit with an error when a GPU runs out of memory, instead of reporting it.
  bool strict_memory = false;
  // Simulate every GPU, not one per pipeline stage (see lower/simulation.hpp).
  bool full_fidelity = false;
  // Run collectives as flows on the topology, not as their analytic time.
  bool flow_collectives = false;
};

struct Scenario {
  std::string file;  // where it was read from, for messages
  hw::ClusterSpec cluster;
  workload::TransformerSpec model;
  workload::Plan plan;
  Options options;
};

}  // namespace trainsim::config
