#include "report/layer_ops.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <utility>

namespace trainsim::report {

namespace {

using workload::LayerOpCost;
using workload::LayerOps;
using workload::OpTiming;

const char* kind_name(workload::OpKind k) {
  switch (k) {
    case workload::OpKind::kGemm: return "gemm";
    case workload::OpKind::kAttention: return "attention";
    case workload::OpKind::kElementwise: return "elementwise";
    case workload::OpKind::kTpCollective: return "tp-collective";
    case workload::OpKind::kCpExchange: return "cp-exchange";
    case workload::OpKind::kEpDispatch: return "ep-exchange";
  }
  return "?";
}


struct Totals {
  double forward = 0.0, input_grad = 0.0, weight_grad = 0.0, recompute = 0.0;
  double backward(const LayerOps& l) const { return input_grad + weight_grad + recompute + l.grad_add_s; }
};
Totals totals_of(const LayerOps& l) {
  Totals t;
  for (const LayerOpCost& op : l.ops) {
    t.forward += op.forward.seconds();
    t.input_grad += op.input_grad.seconds();
    t.weight_grad += op.weight_grad.seconds();
    t.recompute += workload::recompute_seconds(op);
  }
  return t;
}

// The pass whose compute the rate column reads: the forward, or the first
// pass that computes anything (named after the rate: "(I)", "(W)").
std::pair<const OpTiming*, const char*> rate_pass(const LayerOpCost& op) {
  if (op.forward.compute_s > 0.0) return {&op.forward, ""};
  if (op.input_grad.compute_s > 0.0) return {&op.input_grad, " (I)"};
  return {&op.weight_grad, " (W)"};
}

// The rate an op's compute runs at in that pass, in the unit of what bounds it.
std::string rate_text(const LayerOpCost& op, const std::string& bound) {
  const auto [t, pass] = rate_pass(op);
  if (!(t->compute_s > 0.0)) return "";
  if (bound == "tensor" && t->work_flops > 0.0) {
    return fmt::format("{:.0f} TFLOP/s{}", t->work_flops / t->compute_s / 1e12, pass);
  }
  if (bound == "memory" && t->bytes > 0.0) return fmt::format("{:.2f} TB/s{}", t->bytes / t->compute_s / 1e12, pass);
  return "";
}

std::string ms(double s) { return s > 0.0 ? fmt::format("{:.3f}", s * 1e3) : std::string("-"); }

// A row without the spaces an empty last column leaves.
std::string line(std::string text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text + "\n";
}

std::string table(const LayerOps& l, const std::string& title) {
  std::size_t width = std::string("weight gradients added").size();
  for (const LayerOpCost& op : l.ops) width = std::max(width, op.name.size());
  std::string out = fmt::format(
      "  {:<24}a micro-batch on one GPU, in ms: F forward; I and W the backward's input and weight\n"
      "  {:<24}gradients; R what recompute redoes of F in the backward; rate: the forward's FLOPs (the\n"
      "  {:<24}attention kernel's own count, causal work halved) or HBM bytes over its time, or those\n"
      "  {:<24}of the first pass that computes, (I) or (W), where the forward does not\n",
      title, "", "", "");
  out += line(fmt::format("    {:<{}}  {:>9} {:>9} {:>9} {:>9}  {:<7} {}", "op", width, "F", "I", "W", "R", "bound",
                          "rate"));
  for (const LayerOpCost& op : l.ops) {
    const std::string bound = bound_of(op);
    if (bound == "none") continue;  // takes no time here (e.g. tensor-parallel collectives with tp 1)
    out += line(fmt::format("    {:<{}}  {:>9} {:>9} {:>9} {:>9}  {:<7} {}", op.name, width,
                            ms(op.forward.seconds()), ms(op.input_grad.seconds()),
                            ms(op.weight_grad.seconds()), ms(workload::recompute_seconds(op)), bound,
                            rate_text(op, bound)));
  }
  if (l.grad_add_s > 0.0) {
    out += line(fmt::format("    {:<{}}  {:>9} {:>9} {:>9} {:>9}  {:<7}", "weight gradients added", width, "-", "-",
                            ms(l.grad_add_s), "-", "memory"));
  }
  const Totals t = totals_of(l);
  out += line(fmt::format("    {:<{}}  {:>9} {:>9} {:>9} {:>9}  forward {:.2f} ms, backward {:.2f} ms", "layer",
                          width, ms(t.forward), ms(t.input_grad), ms(t.weight_grad + l.grad_add_s), ms(t.recompute),
                          t.forward * 1e3, t.backward(l) * 1e3));
  return out;
}

nlohmann::json pass_json(const OpTiming& t) {
  return {{"seconds", t.seconds()},
          {"compute_s", t.compute_s},
          {"tp_comm_s", t.tp_comm_s},
          {"cp_comm_s", t.cp_comm_s},
          {"ep_comm_s", t.ep_comm_s},
          {"math_s", t.math_s},
          {"memory_s", t.memory_s},
          {"launch_s", t.launch_s},
          {"flops", t.work_flops},
          {"bytes", t.bytes}};
}

nlohmann::json layer_json(const LayerOps& l) {
  nlohmann::json ops = nlohmann::json::array();
  for (const LayerOpCost& op : l.ops) {
    ops.push_back({{"name", op.name},
                   {"kind", kind_name(op.kind)},
                   {"bound", bound_of(op)},
                   {"forward", pass_json(op.forward)},
                   {"input_grad", pass_json(op.input_grad)},
                   {"weight_grad", pass_json(op.weight_grad)},
                   {"recomputed_share", op.redone},
                   {"recompute_s", workload::recompute_seconds(op)}});
  }
  const Totals t = totals_of(l);
  return {{"ops", ops}, {"grad_add_s", l.grad_add_s}, {"forward_s", t.forward}, {"backward_s", t.backward(l)}};
}

}  // namespace

std::string bound_of(const LayerOpCost& op) {
  // Each part summed over the passes (the recomputed forward included): the
  // longest names the op's bound.
  auto sum = [&](double OpTiming::*part) {
    return op.forward.*part + op.redone * op.redo.*part + op.input_grad.*part + op.weight_grad.*part;
  };
  const std::array<std::pair<const char*, double>, 6> parts = {{{"tensor", sum(&OpTiming::math_s)},
                                                                 {"memory", sum(&OpTiming::memory_s)},
                                                                 {"launch", sum(&OpTiming::launch_s)},
                                                                 {"tp", sum(&OpTiming::tp_comm_s)},
                                                                 {"cp", sum(&OpTiming::cp_comm_s)},
                                                                 {"ep", sum(&OpTiming::ep_comm_s)}}};
  const auto longest = std::max_element(parts.begin(), parts.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  return longest->second > 0.0 ? longest->first : "none";
}

std::string layer_ops_text(const workload::StageCosts& costs) {
  if (costs.layer_ops.empty()) return "";
  std::string out = table(costs.layer_ops, costs.dense_layer_ops.empty() ? "one layer, op by op" : "MoE layer, op by op");
  if (!costs.dense_layer_ops.empty()) out += table(costs.dense_layer_ops, "dense layer, op by op");
  return out;
}

nlohmann::json layer_ops_json(const workload::StageCosts& costs) {
  nlohmann::json out = nlohmann::json::object();
  if (costs.layer_ops.empty()) return out;
  out["layer"] = layer_json(costs.layer_ops);
  if (!costs.dense_layer_ops.empty()) out["dense_layer"] = layer_json(costs.dense_layer_ops);
  return out;
}

}  // namespace trainsim::report
