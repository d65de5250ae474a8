// A sweep file: the model, the cluster(s), the global batch and, per plan
// axis, the values to explore (or "auto"). Read once; every plan of the sweep
// is the loaded setting with its plan edited (see space.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace trainsim::sweep {

// An axis: the values the user listed, or every sensible value ("auto").
template <typename T>
struct Axis {
  bool automatic = false;
  std::vector<T> values;  // as listed (empty when automatic)
  bool listed = false;    // given in the file as values, not "auto" nor left out
  bool scalar = false;    // given as one value, not a list (for messages)
};

struct Spec {
  std::string file;
  std::string description;
  std::string fingerprint;  // of the content (sweep/fingerprint.hpp): what identifies the sweep
  // One loaded setting per cluster (plan not yet checked), and a short label
  // for each ("128 x dgx-a100"; "[i] ..." when several clusters share one).
  std::vector<config::Scenario> settings;
  std::vector<std::string> cluster_labels;
  int global_batch = 1;
  bool allow_cross_node_tp = false;
  // The sweep file fixes plan keys beside the axes (its "parallel"): some are
  // checked against the ZeRO stage, so every plan is checked whole.
  bool fixed_plan_keys = false;
  Axis<int> tp, pp, dp, cp, vp, microbatch_size, zero_stage;
  // Expert-parallel ranks (a MoE model's): left out, 1; "auto", every
  // divisor of the model's experts.
  Axis<int> ep;
  // Expert-tensor-parallel ranks: left out, 1; "auto", 1, 2, 4 ... up to a
  // node's GPUs.
  Axis<int> etp;
  Axis<std::string> schedule;
  Axis<bool> sequence_parallel;
  Axis<workload::Recompute> recompute;
  // ZeRO-3 and overlap settings. fsdp_shard_size's values: 0 for one group of
  // all the replicas, kNodeShardGroup ("auto" only) for the replicas of one node.
  Axis<int> fsdp_shard_size;
  Axis<bool> reshard_after_forward, tp_comm_overlap;
};

// fsdp_shard_size = "auto" tries plain FSDP and HSDP with a node's replicas a group.
inline constexpr int kNodeShardGroup = -1;

// Reads and checks a sweep file; any problem is a config::ConfigError whose
// message names the file and the JSON path.
Spec load_spec(const std::string& path);
Spec parse_spec(const nlohmann::json& doc, const std::string& file, const std::string& base_dir);

}  // namespace trainsim::sweep
