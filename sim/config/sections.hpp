// The section readers and the checks across sections that load.cpp joins
// into a Scenario. Internal to sim/config; each throws ConfigError through
// Context::fail, naming the file and the JSON path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/reader.hpp"
#include "config/scenario.hpp"

namespace trainsim::config::detail {

// cluster, cluster.node, cluster.node.gpu, cluster.network (read_cluster.cpp).
hw::ClusterSpec read_cluster(const json& doc, const Context& ctx);

// model as a transformer by shape, or a layer table; parallel.burst (read_model.cpp).
workload::TransformerSpec read_model(const json& doc, const Context& ctx);
bool is_layer_table(const json& doc, const std::string& path);
workload::LayerTable read_layer_table(const json& doc, const std::string& path, const Context& ctx);
workload::BurstSpec read_burst(const json& doc, const Context& ctx);

// parallel (read_plan.cpp).
workload::Plan read_plan(const json& doc, const Context& ctx);

// options; `gpus`: the cluster's GPU count, which GPU ids stay below (read_options.cpp).
Options read_options(const json& doc, int gpus, const Context& ctx);
// options.overlap_grad_reduce, overlap_param_gather, tp_comm_overlap: how the
// framework runs the plan, so they go into it (read_options.cpp).
void read_overlap(const json& doc, workload::Plan& plan, const Context& ctx);

// Checks that need more than one section: the plan against the model and
// cluster (plan_checks.cpp), of which FP8's (fp8_checks.cpp) and a MoE
// model's (moe_checks.cpp); a custom network's reach (network_reach.cpp).
void check_consistency(const Scenario& sc, const Context& ctx);
void check_fp8(const Scenario& sc, const Context& ctx);
void check_moe(const Scenario& sc, const Context& ctx);
void check_custom_network_reach(const Scenario& sc, const Context& ctx);

// `parallel.schedule: "csv:PATH"`: the schedule read from that file (relative
// to the config's folder), checked against the plan's shape; null otherwise.
// The file read is added to `files_read` (csv_schedule_read.cpp).
std::shared_ptr<const schedule::Schedule> read_csv_schedule(const workload::Plan& p, const Context& ctx,
                                                            std::vector<std::string>& files_read);

}  // namespace trainsim::config::detail
