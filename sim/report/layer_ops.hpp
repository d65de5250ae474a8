// One transformer layer op by op (`trainsim run --ops`): each op's time in
// the forward, the backward's input and weight gradients and what recompute
// redoes, what bounds it (the tensor cores, memory, kernel launches, or the
// communication its stream waits for) and the rate it runs at. The rows add
// up to the summary's "one layer" figures (workload::StageCosts).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "workload/stage_costs.hpp"

namespace trainsim::report {

// What bounds an op's time over its passes: "tensor", "memory", "launch",
// "tp", "cp" or "ep" (the longest part); "none" for an op that takes no time.
std::string bound_of(const workload::LayerOpCost& op);

// The table (text), the layer's and, for a MoE model with dense layers, the
// dense layer's; empty for costs without a layer (a layer-table model).
std::string layer_ops_text(const workload::StageCosts& costs);
// The same as JSON: {"layer": {...}, "dense_layer": {...}} (the second only
// where there is one); each {"ops": [...], "grad_add_s", "forward_s", "backward_s"}.
nlohmann::json layer_ops_json(const workload::StageCosts& costs);

}  // namespace trainsim::report
