// options: fidelity, collectives, stragglers, link faults, interference,
// pipeline sends, CUDA context.
#include "config/sections.hpp"

#include <functional>
#include <map>

#include "hw/collective.hpp"

namespace trainsim::config::detail {

// `gpus`: the cluster's GPU count, which GPU ids stay below.
Options read_options(const json& doc, int gpus, const Context& ctx) {
  Options o;
  if (!doc.contains("options")) return o;
  const Section s(doc, "options", ctx);
  o.strict_memory = s.boolean_or("strict_memory", false);
  o.full_fidelity = s.choice<bool>("fidelity", false, {{"symmetric", false}, {"full", true}});
  // Lists of small objects: each entry's keys are checked here.
  auto entries = [&](const std::string& key, const std::vector<std::string>& known,
                     const std::function<void(const std::string& where, const json& entry)>& read) {
    if (!s.has(key)) return;
    const json& list = s.required(key, "a list");
    if (!list.is_array()) ctx.fail(s.path(key), "expected a list of objects, got " + show(list));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = fmt::format("{}[{}]", s.path(key), i);
      const json& e = list[i];
      if (!e.is_object()) ctx.fail(where, "expected an object, got " + show(e));
      for (const auto& [k, v] : e.items()) {
        if (std::find(known.begin(), known.end(), k) != known.end()) continue;
        ctx.fail(where + "." + excerpt(k), unknown_key_message(k, known));
      }
      read(where, e);
    }
  };
  std::map<int, std::string> speed_given;  // GPU -> where its factor is
  entries("gpu_speed", {"gpu", "factor"}, [&](const std::string& where, const json& e) {
    if (!e.contains("gpu") || !e["gpu"].is_number_integer() || e["gpu"].get<long long>() < 0 ||
        e["gpu"].get<long long>() >= gpus) {
      ctx.fail(where + ".gpu", fmt::format("expected a GPU id from 0 to {} (the cluster has {} GPUs), got {}", gpus - 1,
                                           gpus, e.contains("gpu") ? show(e["gpu"]) : "nothing"),
               {"cluster.nodes", "cluster.node.gpus_per_node"});
    }
    const auto [it, fresh] = speed_given.emplace(e["gpu"].get<int>(), where);
    if (!fresh) ctx.fail(where + ".gpu", fmt::format("GPU {} is listed twice (first at {})", it->first, it->second));
    if (!e.contains("factor") || !e["factor"].is_number() || !(e["factor"].get<double>() >= 0.01) ||
        e["factor"].get<double>() > 100.0) {
      ctx.fail(where + ".factor", "expected a speed factor from 0.01 to 100 (0.8 for a GPU at 80% speed)");
    }
    o.gpu_speed.push_back({e["gpu"].get<int>(), e["factor"].get<double>()});
  });
  entries("links", {"link", "bandwidth_factor", "failed"}, [&](const std::string& where, const json& e) {
    if (!e.contains("link") || !e["link"].is_string()) {
      ctx.fail(where + ".link", "expected a link name such as \"gpu0->node0.nic0\" (or \"a<->b\" for both ways)");
    }
    Options::LinkFault f;
    f.where = where;
    f.link = e["link"].get<std::string>();
    if (e.contains("failed")) {
      if (!e["failed"].is_boolean()) ctx.fail(where + ".failed", "expected true or false, got " + show(e["failed"]));
      f.failed = e["failed"].get<bool>();
    }
    if (e.contains("bandwidth_factor")) {
      const json& b = e["bandwidth_factor"];
      if (!b.is_number() || !(b.get<double>() >= 0.001) || b.get<double>() > 1.0) {
        ctx.fail(where + ".bandwidth_factor", "expected a number from 0.001 to 1, got " + show(b));
      }
      f.bandwidth_factor = b.get<double>();
    }
    if (!f.failed && !e.contains("bandwidth_factor")) {
      ctx.fail(where, "expected \"bandwidth_factor\" (a degraded link) or \"failed\": true");
    }
    if (f.failed && e.contains("bandwidth_factor")) {
      ctx.fail(where + ".bandwidth_factor", "a failed link carries nothing; expected \"bandwidth_factor\" (a degraded "
                                            "link) or \"failed\": true, not both");
    }
    o.links.push_back(f);
  });
  if (s.has("comm_slowdown")) {
    o.comm_slowdown = s.non_negative_number("comm_slowdown", 10.0);
    o.comm_slowdown_given = true;
  }
  o.flow_collectives = s.choice<bool>("collectives", false, {{"analytic", false}, {"flow", true}});
  using A = hw::CollectiveAlgorithm;
  o.collective_algorithm = s.choice<A>("collective_algorithm", A::kAuto,
                                       {{"auto", A::kAuto}, {"ring", A::kRing}, {"tree", A::kTree},
                                        {"hierarchical", A::kHierarchical}});
  o.blocking_sends = s.choice<bool>("pipeline_sends", false, {{"overlapped", false}, {"blocking", true}});
  if (s.has("cuda_context_mib")) o.cuda_context_bytes = s.non_negative_number("cuda_context_mib", kMaxCudaContextMib) * 1048576.0;
  return o;
}

void read_overlap(const json& doc, workload::Plan& plan, const Context& ctx) {
  if (!doc.contains("options")) return;
  const Section s(doc, "options", ctx);
  plan.overlap.grad_reduce = s.boolean_or("overlap_grad_reduce", workload::Overlap{}.grad_reduce);
  plan.overlap.param_gather = s.boolean_or("overlap_param_gather", workload::Overlap{}.param_gather);
  // true (both passes, Transformer Engine), "forward" (PyTorch's async TP)
  // or false.
  if (s.has("tp_comm_overlap")) {
    const json& v = s.required("tp_comm_overlap", "true, false or \"forward\"");
    if (v.is_string() && v.get<std::string>() == "forward") {
      plan.overlap.tp_comm = true;
      plan.overlap.tp_comm_backward = false;
    } else if (v.is_boolean()) {
      plan.overlap.tp_comm = v.get<bool>();
    } else {
      ctx.fail(s.path("tp_comm_overlap"), "expected true, false or \"forward\", got " + show(v));
    }
  }
  if (s.has("moe_imbalance")) plan.moe_imbalance = s.positive_number("moe_imbalance", 1.0, 1e6);
  plan.overlap.moe_a2a = s.boolean_or("moe_a2a_overlap", workload::Overlap{}.moe_a2a);
}

}  // namespace trainsim::config::detail
