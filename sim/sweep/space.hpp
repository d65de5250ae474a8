// The plan space of a sweep: every combination of the axes' values, checked
// the way a config is (GPU count, divisibility, tp inside a node, the
// schedule's consent to the shape). Valid plans come out in a canonical order
// (cluster, tp, pp, dp, vp, micro-batch size, schedule, ZeRO, sequence
// parallel, recompute, each axis in its listed order); invalid ones are only
// counted, by reason.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "sweep/spec.hpp"

namespace trainsim::sweep {

struct Candidate {
  std::size_t index = 0;  // position in the canonical order
  int cluster = 0;        // index into Spec::settings
  workload::Plan plan;
  std::string key;  // canonical text of the plan: the ranking's tie-break
};

struct Space {
  std::vector<Candidate> plans;
  std::map<std::string, long long> invalid;  // reason -> plans refused for it
  long long combinations = 0;                // valid + invalid
};

// Throws config::ConfigError when a listed axis value is used by no valid
// plan (naming axes.<axis>[i] and why), or when no plan at all is valid.
Space enumerate(const Spec& spec);

// "tp=8 pp=16 dp=8 vp=1 mbs=1 1f1b zero=1 sp=off rc=none", prefixed with the
// cluster's label when the sweep has several.
std::string plan_key(const std::string& cluster_label, const workload::Plan& plan);

}  // namespace trainsim::sweep
