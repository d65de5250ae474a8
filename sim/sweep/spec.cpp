#include "sweep/spec.hpp"

#include <filesystem>
#include <set>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/load.hpp"
#include "config/reader.hpp"
#include "config/schema.hpp"
#include "schedule/registry.hpp"
#include "sweep/fingerprint.hpp"

namespace trainsim::sweep {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what) {
  throw config::ConfigError(fmt::format("{}: {}: {}", file, path, what));
}

using config::detail::show;

const std::vector<std::string> kTopKeys = {"description", "model",   "cluster",             "global_batch",
                                           "options",     "parallel", "allow_cross_node_tp", "axes"};
const std::vector<std::string> kAxisKeys = {"tp",          "pp",         "dp",                "cp",
                                            "vp",          "microbatch_size", "schedule",
                                            "zero_stage",  "sequence_parallel", "recompute",
                                            "fsdp_shard_size", "reshard_after_forward", "tp_comm_overlap", "ep", "etp"};

void check_keys(const json& obj, const std::vector<std::string>& known, const std::string& file,
                const std::string& path) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string shown = config::excerpt(key);
      fail(file, path.empty() ? shown : path + "." + shown, config::unknown_key_message(key, known));
    }
  }
}

// What an axis takes, for messages: one value ("a positive integer") and
// several ("positive integers"), so that each message reads as a sentence.
struct Expected {
  std::string one, many;
};

// `values` or "auto". `read` turns one JSON value into T, or returns nullopt,
// setting `why` when it has a more precise message than `expected.one`.
template <typename T, typename Read>
Axis<T> read_axis(const json& axes, const std::string& key, const std::string& file, std::vector<T> fallback,
                  const Expected& expected, Read read) {
  Axis<T> axis;
  const std::string path = "axes." + key;
  if (!axes.contains(key)) {
    axis.values = std::move(fallback);
    axis.automatic = axis.values.empty();
    return axis;
  }
  const json& v = axes[key];
  if (v.is_string() && v.get<std::string>() == "auto") {
    axis.automatic = true;
    return axis;
  }
  axis.listed = true;
  axis.scalar = !v.is_array();
  json list = v.is_array() ? v : json::array({v});
  if (list.empty()) fail(file, path, fmt::format("expected \"auto\" or a non-empty list of {}, got []", expected.many));
  std::set<T> seen;  // a lookup per value: linear in the list, not quadratic
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = v.is_array() ? fmt::format("{}[{}]", path, i) : path;
    std::string why;
    std::optional<T> value = read(list[i], why);
    if (!value) {
      if (why.empty()) {
        // Inside a list only a value fits; alone, "auto" or a list would too.
        why = v.is_array() ? fmt::format("expected {}, got {}", expected.one, show(list[i]))
                           : fmt::format("expected \"auto\", {} or a list of {}, got {}", expected.one, expected.many,
                                         show(list[i]));
      }
      fail(file, where, why);
    }
    if (!seen.insert(*value).second) fail(file, where, "listed twice: " + show(list[i]));
    axis.values.push_back(*value);
  }
  return axis;
}

// A whole number from 1 to `max`, in the config loader's words when it is not.
std::optional<int> positive_int(const json& v, int max, std::string& why) {
  if (!v.is_number()) return std::nullopt;
  why = config::positive_int_problem(v, max);
  if (!why.empty()) return std::nullopt;
  return static_cast<int>(v.get<double>());
}

}  // namespace

Spec parse_spec(const json& doc, const std::string& file, const std::string& base_dir) {
  if (!doc.is_object()) fail(file, "(top level)", "expected a JSON object with model, cluster, global_batch and axes");
  check_keys(doc, kTopKeys, file, "");
  Spec spec;
  spec.file = file;
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail(file, "description", "expected a string, got " + show(doc["description"]));
    spec.description = doc["description"].get<std::string>();
  }
  // A run config given to `sweep` by mistake: its batch sits in parallel, and it has no axes.
  if (!doc.contains("axes") && !doc.contains("global_batch") && doc.contains("parallel") && doc["parallel"].is_object() &&
      doc["parallel"].contains("global_batch")) {
    fail(file, "axes", "is missing: this looks like a run config (parallel.global_batch, no axes); expected a sweep "
                       "file with model, cluster, global_batch and axes, or run this file with `trainsim run`");
  }
  for (const char* key : {"model", "cluster", "global_batch"}) {
    if (!doc.contains(key)) {
      fail(file, key,
           std::string("is missing; expected ") +
               (std::string_view(key) == "global_batch" ? "the global batch in samples, an integer >= 1, at the top level"
                : std::string_view(key) == "model"      ? "a model preset name, object or file"
                                                        : "a cluster object (node, nodes, network) or a list of them"));
    }
  }
  // The bound of the config's parallel.global_batch.
  if (const std::string why = config::positive_int_problem(doc["global_batch"], 1'000'000'000); !why.empty()) {
    fail(file, "global_batch", why);
  }
  spec.global_batch = static_cast<int>(doc["global_batch"].get<double>());
  if (doc.contains("allow_cross_node_tp")) {
    if (!doc["allow_cross_node_tp"].is_boolean()) {
      fail(file, "allow_cross_node_tp", "expected true or false, got " + show(doc["allow_cross_node_tp"]));
    }
    spec.allow_cross_node_tp = doc["allow_cross_node_tp"].get<bool>();
  }

  // Each cluster is read as a config with a placeholder plan; the config
  // loader names the key ("cluster.nodes"), made "cluster[i].nodes" for a list.
  const json& clusters = doc["cluster"];
  const bool list = clusters.is_array();
  if (list && clusters.empty()) fail(file, "cluster", "expected a cluster object or a non-empty list of them, got []");
  // Each cluster is read with its own copy of the model: a bound keeps a
  // file of many clusters and a long model from multiplying into hours.
  constexpr std::size_t kMaxClusters = 256;
  if (list && clusters.size() > kMaxClusters) {
    fail(file, "cluster", fmt::format("expected at most {} clusters, got {}", kMaxClusters, clusters.size()));
  }
  const std::size_t count = list ? clusters.size() : 1;
  for (std::size_t i = 0; i < count; ++i) {
    json config = json::object();
    config["cluster"] = list ? clusters[i] : clusters;
    config["model"] = doc["model"];
    config["parallel"] = json{{"global_batch", spec.global_batch}};
    // Plan keys that are not axes, the same in every plan (precision,
    // fp8_recipe, cp_algorithm, attention, grad_dtype, ...).
    if (doc.contains("parallel")) {
      const json& fixed = doc["parallel"];
      if (!fixed.is_object()) fail(file, "parallel", "expected an object of plan keys, got " + show(fixed));
      spec.fixed_plan_keys = !fixed.empty();
      if (fixed.contains("distributed_optimizer")) {
        fail(file, "parallel.distributed_optimizer", "is ZeRO stage 1 in a sweep: list 1 under axes.zero_stage");
      }
      for (const auto& [key, value] : fixed.items()) {
        if (key == "global_batch" ||
            std::find(kAxisKeys.begin(), kAxisKeys.end(), key) != kAxisKeys.end()) {
          fail(file, "parallel." + config::excerpt(key),
               key == "global_batch" ? "is given at the top level (global_batch)"
                                     : "is an axis: give its value or values under axes." + key);
        }
        // How context parallelism runs is read once cp is an axis value > 1: below.
        if (key != "cp_algorithm" && key != "cp_merge") config["parallel"][key] = value;
      }
    }
    if (doc.contains("options")) config["options"] = doc["options"];
    // ZeRO-3's knobs are read under zero_stage 3; each plan's own stage (an
    // axis) meets them in its checks (space.cpp).
    bool zero3_knobs = false;
    for (const std::string& knob : config::zero3_plan_keys()) zero3_knobs = zero3_knobs || config["parallel"].contains(knob);
    if (zero3_knobs) config["parallel"]["zero_stage"] = 3;
    try {
      spec.settings.push_back(config::load_setting(config, file, base_dir));
      if (zero3_knobs) spec.settings.back().plan.zero_stage = workload::Plan{}.zero_stage;
    } catch (const config::ConfigError& e) {
      std::string msg = e.what();
      const std::string prefix = file + ": cluster";
      if (list && msg.rfind(prefix, 0) == 0) msg.insert(prefix.size(), fmt::format("[{}]", i));
      throw config::ConfigError(msg);
    }
    if (spec.settings.back().layer_model) fail(file, "model", "a sweep needs a transformer model, not a layer table");
    if (doc.contains("parallel") && doc["parallel"].contains("cp_algorithm")) {
      const json& a = doc["parallel"]["cp_algorithm"];
      const auto algorithm = a.is_string() ? workload::cp_algorithm_named(a.get<std::string>()) : std::nullopt;
      if (!algorithm) {
        fail(file, "parallel.cp_algorithm", "expected \"ring\", \"all-gather\" or \"all-to-all\", got " + show(a));
      }
      spec.settings.back().plan.cp_algorithm = *algorithm;
    }
    if (doc.contains("parallel") && doc["parallel"].contains("cp_merge")) {
      const json& m = doc["parallel"]["cp_merge"];
      const std::string name = m.is_string() ? m.get<std::string>() : std::string();
      if (name != "fused" && name != "pytorch") {
        fail(file, "parallel.cp_merge", "expected \"fused\" or \"pytorch\", got " + show(m));
      }
      spec.settings.back().plan.cp_merge = name == "pytorch" ? workload::CpMerge::kPyTorch : workload::CpMerge::kFused;
    }
    const auto& c = spec.settings.back().cluster;
    spec.cluster_labels.push_back(fmt::format("{}x{}", c.nodes, c.node.name));
  }
  // Two clusters alike in label: every label gets its index.
  const std::set<std::string> distinct(spec.cluster_labels.begin(), spec.cluster_labels.end());
  if (distinct.size() < count) {
    for (std::size_t n = 0; n < count; ++n) spec.cluster_labels[n] = fmt::format("c{}:{}", n, spec.cluster_labels[n]);
  }

  static const json kEmpty = json::object();
  const json& axes = doc.contains("axes") ? doc["axes"] : kEmpty;
  if (!axes.is_object()) fail(file, "axes", "expected an object, got " + show(axes));
  check_keys(axes, kAxisKeys, file, "axes");
  constexpr int kMax = 10'000'000;  // the config's bound on parallel degrees and sizes
  auto positive = [](const json& v, std::string& why) { return positive_int(v, kMax, why); };
  const Expected pos{"a positive integer", "positive integers"};
  spec.tp = read_axis<int>(axes, "tp", file, {}, pos, positive);
  spec.pp = read_axis<int>(axes, "pp", file, {}, pos, positive);
  spec.dp = read_axis<int>(axes, "dp", file, {}, pos, positive);
  spec.cp = read_axis<int>(axes, "cp", file, {1}, pos, positive);
  spec.ep = read_axis<int>(axes, "ep", file, {1}, pos, positive);
  spec.etp = read_axis<int>(axes, "etp", file, {1}, pos, positive);
  spec.vp = read_axis<int>(axes, "vp", file, {1}, pos, positive);
  spec.microbatch_size = read_axis<int>(axes, "microbatch_size", file, {1}, pos, positive);
  spec.zero_stage = read_axis<int>(axes, "zero_stage", file, {0}, {"a ZeRO stage (0, 1, 2 or 3)", "ZeRO stages"},
                                   [](const json& v, std::string&) -> std::optional<int> {
                                     if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 3) {
                                       return std::nullopt;
                                     }
                                     return v.get<int>();
                                   });
  const std::vector<std::string>& known = schedule::schedule_names();
  const std::string names = fmt::format("{}", fmt::join(known, ", "));
  spec.schedule = read_axis<std::string>(axes, "schedule", file, {"1f1b"},
                                         {"a schedule name (" + names + ")", "schedule names"},
                                         [&](const json& v, std::string& why) -> std::optional<std::string> {
                                           if (!v.is_string()) return std::nullopt;
                                           const std::string name = v.get<std::string>();
                                           if (schedule::find_schedule(name) != nullptr) return name;
                                           // A near miss gets its suggestion; other strings the list.
                                           if (const auto near = config::closest(name, known)) {
                                             why = fmt::format("no schedule named {} (did you mean \"{}\"?); "
                                                               "expected one of {}",
                                                               show(v), *near, names);
                                           }
                                           return std::nullopt;
                                         });
  spec.sequence_parallel = read_axis<bool>(axes, "sequence_parallel", file, {false}, {"a boolean (true or false)", "booleans"},
                                           [](const json& v, std::string&) -> std::optional<bool> {
                                             if (!v.is_boolean()) return std::nullopt;
                                             return v.get<bool>();
                                           });
  spec.recompute = read_axis<workload::Recompute>(
      axes, "recompute", file, {workload::Recompute::kNone},
      {"a recompute mode (\"none\", \"selective\", \"full\" or \"selective-op\")", "recompute modes"},
      [](const json& v, std::string&) -> std::optional<workload::Recompute> {
        if (!v.is_string()) return std::nullopt;
        return workload::recompute_named(v.get<std::string>());
      });
  spec.fsdp_shard_size = read_axis<int>(axes, "fsdp_shard_size", file, {0}, pos, positive);
  const Expected boolean{"a boolean (true or false)", "booleans"};
  auto read_bool = [](const json& v, std::string&) -> std::optional<bool> {
    if (!v.is_boolean()) return std::nullopt;
    return v.get<bool>();
  };
  spec.reshard_after_forward = read_axis<bool>(axes, "reshard_after_forward", file, {true}, boolean, read_bool);
  spec.tp_comm_overlap = read_axis<bool>(axes, "tp_comm_overlap", file, {false}, boolean, read_bool);
  spec.fingerprint = fingerprint(canonical_sweep(doc, file, base_dir));
  return spec;
}

Spec load_spec(const std::string& path) {
  const std::string text = config::read_text(path, "sweep file");
  return parse_spec(config::parse_json(text, path), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace trainsim::sweep
