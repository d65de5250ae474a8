#include "sweep/spec.hpp"

#include <filesystem>
#include <fmt/format.h>

#include "config/load.hpp"
#include "schedule/registry.hpp"

namespace trainsim::sweep {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what) {
  throw config::ConfigError(fmt::format("{}: {}: {}", file, path, what));
}

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

const std::vector<std::string> kTopKeys = {"description", "model",         "cluster", "global_batch",
                                           "options",     "allow_cross_node_tp", "axes"};
const std::vector<std::string> kAxisKeys = {"tp",          "pp",         "dp",
                                            "vp",          "microbatch_size", "schedule",
                                            "zero_stage",  "sequence_parallel", "recompute"};

void check_keys(const json& obj, const std::vector<std::string>& known, const std::string& file,
                const std::string& path) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(file, path.empty() ? key : path + "." + key, "unknown key; known keys here: " + list);
    }
  }
}

// `values` or "auto"; `read` turns one JSON value into T or returns nullopt.
template <typename T, typename Read>
Axis<T> read_axis(const json& axes, const std::string& key, const std::string& file, std::vector<T> fallback,
                  const std::string& expected, Read read) {
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
  if (list.empty()) fail(file, path, "expected \"auto\" or a non-empty list of " + expected + ", got []");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = v.is_array() ? fmt::format("{}[{}]", path, i) : path;
    std::optional<T> value = read(list[i]);
    if (!value) fail(file, where, "expected \"auto\" or " + expected + ", got " + show(list[i]));
    if (std::find(axis.values.begin(), axis.values.end(), *value) != axis.values.end()) {
      fail(file, where, "listed twice: " + show(list[i]));
    }
    axis.values.push_back(*value);
  }
  return axis;
}

std::optional<int> int_in(const json& v, int lo, int hi) {
  if (!v.is_number_integer()) return std::nullopt;
  const long long x = v.get<long long>();
  if (x < lo || x > hi) return std::nullopt;
  return static_cast<int>(x);
}

}  // namespace

std::string recompute_name(workload::Recompute r) {
  return r == workload::Recompute::kFull ? "full" : r == workload::Recompute::kSelective ? "selective" : "none";
}

Spec parse_spec(const json& doc, const std::string& file, const std::string& base_dir) {
  if (!doc.is_object()) fail(file, "(top level)", "expected a JSON object with model, cluster, global_batch and axes");
  check_keys(doc, kTopKeys, file, "");
  Spec spec;
  spec.file = file;
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail(file, "description", "expected a string, got " + show(doc["description"]));
    spec.description = doc["description"].get<std::string>();
  }
  for (const char* key : {"model", "cluster", "global_batch"}) {
    if (!doc.contains(key)) fail(file, key, "is missing");
  }
  const auto gb = int_in(doc["global_batch"], 1, 1'000'000'000);
  if (!gb) fail(file, "global_batch", "expected a positive integer, got " + show(doc["global_batch"]));
  spec.global_batch = *gb;
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
  const std::size_t count = list ? clusters.size() : 1;
  for (std::size_t i = 0; i < count; ++i) {
    json config = json::object();
    config["cluster"] = list ? clusters[i] : clusters;
    config["model"] = doc["model"];
    config["parallel"] = json{{"global_batch", spec.global_batch}};
    if (doc.contains("options")) config["options"] = doc["options"];
    try {
      spec.settings.push_back(config::load_setting(config, file, base_dir));
    } catch (const config::ConfigError& e) {
      std::string msg = e.what();
      const std::string prefix = file + ": cluster";
      if (list && msg.rfind(prefix, 0) == 0) msg.insert(prefix.size(), fmt::format("[{}]", i));
      throw config::ConfigError(msg);
    }
    if (spec.settings.back().layer_model) fail(file, "model", "a sweep needs a transformer model, not a layer table");
    const auto& c = spec.settings.back().cluster;
    spec.cluster_labels.push_back(fmt::format("{}x{}", c.nodes, c.node.name));
  }
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t k = 0; k < count; ++k) {
      if (k != i && spec.cluster_labels[k] == spec.cluster_labels[i]) {
        for (std::size_t n = 0; n < count; ++n) spec.cluster_labels[n] = fmt::format("c{}:{}", n, spec.cluster_labels[n]);
        i = count;
        break;
      }
    }
  }

  static const json kEmpty = json::object();
  const json& axes = doc.contains("axes") ? doc["axes"] : kEmpty;
  if (!axes.is_object()) fail(file, "axes", "expected an object, got " + show(axes));
  check_keys(axes, kAxisKeys, file, "axes");
  constexpr int kMax = 10'000'000;
  auto positive = [](const json& v) { return int_in(v, 1, kMax); };
  const std::string pos = "a positive integer or a list of them";
  spec.tp = read_axis<int>(axes, "tp", file, {}, pos, positive);
  spec.pp = read_axis<int>(axes, "pp", file, {}, pos, positive);
  spec.dp = read_axis<int>(axes, "dp", file, {}, pos, positive);
  spec.vp = read_axis<int>(axes, "vp", file, {1}, pos, positive);
  spec.microbatch_size = read_axis<int>(axes, "microbatch_size", file, {1}, pos, positive);
  spec.zero_stage = read_axis<int>(axes, "zero_stage", file, {0}, "0, 1, 2 or 3 (or a list of them)",
                                   [](const json& v) { return int_in(v, 0, 3); });
  std::string names;
  for (const auto& s : schedule::all_schedules()) names += (names.empty() ? "" : ", ") + std::string(s->name());
  spec.schedule = read_axis<std::string>(axes, "schedule", file, {"1f1b"}, "a schedule name (" + names + ")",
                                         [](const json& v) -> std::optional<std::string> {
                                           if (!v.is_string()) return std::nullopt;
                                           const std::string name = v.get<std::string>();
                                           if (schedule::find_schedule(name) == nullptr) return std::nullopt;
                                           return name;
                                         });
  spec.sequence_parallel = read_axis<bool>(axes, "sequence_parallel", file, {false}, "true or false (or a list)",
                                           [](const json& v) -> std::optional<bool> {
                                             if (!v.is_boolean()) return std::nullopt;
                                             return v.get<bool>();
                                           });
  spec.recompute = read_axis<workload::Recompute>(
      axes, "recompute", file, {workload::Recompute::kNone}, "\"none\", \"selective\" or \"full\" (or a list)",
      [](const json& v) -> std::optional<workload::Recompute> {
        if (!v.is_string()) return std::nullopt;
        const std::string s = v.get<std::string>();
        if (s == "none") return workload::Recompute::kNone;
        if (s == "selective") return workload::Recompute::kSelective;
        if (s == "full") return workload::Recompute::kFull;
        return std::nullopt;
      });
  return spec;
}

Spec load_spec(const std::string& path) {
  const std::string text = config::read_text(path, "sweep file");
  return parse_spec(config::parse_json(text, path), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace trainsim::sweep
