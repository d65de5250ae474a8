#include "config/load.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "config/calibration_load.hpp"
#include "config/gpu_match.hpp"
#include "config/presets.hpp"
#include "config/schema.hpp"
#include "core/checked.hpp"
#include "hw/collective_runner.hpp"
#include "hw/custom_network.hpp"
#include "hw/flow_network.hpp"
#include "hw/topology.hpp"
#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::config {

namespace {

using nlohmann::json;

// Bounds on config values (see Section): far beyond any real hardware or
// model, close enough that nothing derived from them overflows.
constexpr double kMinRate = 1e-3;       // TFLOP/s, TB/s, GB/s, Gb/s
constexpr double kMaxTflops = 1e5;
constexpr double kMaxBandwidth = 1e6;   // GB/s or Gb/s
constexpr double kMaxTbPerS = 1e3;
constexpr double kMaxMemoryGb = 1e5;
constexpr double kMaxMicroseconds = 1e6;
constexpr double kMaxCudaContextMib = 1e6;  // beyond any GPU's memory; read_scenario holds it below the GPU's
constexpr int kMaxCount = 10'000'000;    // parallel degrees, nodes, batch sizes
constexpr int kMaxModelDim = 10'000'000;  // layers, hidden, heads, ffn, seq, vocab
constexpr long long kMaxGpus = 10'000'000;

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Short rendering of a value for messages.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

struct Context {
  std::string file;
  std::string base_dir;
  std::map<std::string, std::string> set_by;    // path -> the --set that wrote it
  std::map<std::string, std::string> preset_of;  // section path -> where its values came from
  std::vector<std::string> files_read;           // sections given as .json paths, as read

  // `related`: the other keys a check across keys reads (model.hidden for
  // the heads' check at model.heads), so that a --set of any of them is named.
  [[noreturn]] void fail(const std::string& path, const std::string& what,
                         const std::vector<std::string>& related = {}) const {
    std::string msg = fmt::format("{}: {}: {}", file, path.empty() ? "(top level)" : path, what);
    // Name the --set or preset the value came from, looking at the path and its parents.
    std::string origin;
    bool from_set = false;
    for (std::string p = path.substr(0, path.find('['));; p = p.substr(0, p.rfind('.'))) {
      if (auto it = set_by.find(p); it != set_by.end()) {
        origin = " (from --set " + it->second + ")";
        from_set = true;
        break;
      }
      if (auto it = preset_of.find(p); it != preset_of.end()) {
        origin = " (in " + it->second + ")";
        break;
      }
      if (p.find('.') == std::string::npos) break;
    }
    // A --set of a related key is the likelier culprit than a preset's value.
    if (!from_set) {
      for (const std::string& r : related) {
        if (const auto set = set_along(r)) {
          origin = " (from --set " + *set + ")";
          break;
        }
      }
    }
    throw ConfigError(msg + origin);
  }

  // The --set that wrote `path` or one of its parents.
  std::optional<std::string> set_along(const std::string& path) const {
    for (std::string p = path;; p = p.substr(0, p.rfind('.'))) {
      if (auto it = set_by.find(p); it != set_by.end()) return it->second;
      if (p.find('.') == std::string::npos) return std::nullopt;
    }
  }
};

}  // namespace

std::string positive_int_problem(const json& v, long long max) {
  const bool whole = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!whole || v.get<double>() < 1) return "expected a positive integer, got " + show(v);
  if (v.get<double>() > static_cast<double>(max)) return fmt::format("expected at most {}, got {}", max, show(v));
  return {};
}

namespace {

// A section given as a preset name or a file reference becomes its object.
void expand(json& doc, const std::string& path, const std::string& kind, Context& ctx) {
  // Walk to the value at `path`, stopping quietly where it does not exist.
  json* v = &doc;
  std::string walked;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object() || !v->contains(key)) return;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!v->is_string()) return;
  const std::string name = v->get<std::string>();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
    std::filesystem::path file(name);
    if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
    *v = parse_json(read_text(file.string(), kind + " file named at " + path), file.string());
    ctx.preset_of[path] = "file " + file.string();
    ctx.files_read.push_back(file.string());
    return;
  }
  const auto text = find_preset(kind, name);
  if (!text) {
    const auto known = preset_names(kind);
    const auto near = closest(name, known);
    ctx.fail(path, fmt::format("unknown {} preset \"{}\"{}; known presets: {} (or give the values inline, or a "
                               "path ending in .json)",
                               kind, excerpt(name), near ? fmt::format(" (did you mean \"{}\"?)", *near) : "", join(known, ", ")));
  }
  *v = json::parse(*text);
  ctx.preset_of[path] = kind + " preset \"" + name + "\"";
}

void expand_all(json& doc, Context& ctx) {
  expand(doc, "model", "model", ctx);
  expand(doc, "cluster.node", "node", ctx);
  expand(doc, "cluster.node.gpu", "gpu", ctx);
  expand(doc, "cluster.network", "network", ctx);
  expand(doc, "parallel.burst.background.model", "model", ctx);
}

void apply_override(json& doc, const std::string& text, Context& ctx) {
  try {
    (void)json(text).dump();  // throws on bytes that are not UTF-8
  } catch (const json::type_error&) {
    throw ConfigError(fmt::format("{}: --set {}: not valid UTF-8", ctx.file, show(json(text))));
  }
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(fmt::format("{}: --set {}: expected key.path=value", ctx.file, text));
  }
  const std::string path = text.substr(0, eq);
  const std::string raw = text.substr(eq + 1);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string section;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    const auto* keys = section_keys(section);
    if (key.empty() || keys == nullptr) {
      throw ConfigError(fmt::format("{}: --set {}: {} is not a section, so {} does not exist", ctx.file, text,
                                    section.empty() ? "(top level)" : section, path));
    }
    if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
      const auto near = closest(key, *keys);
      throw ConfigError(fmt::format("{}: --set {}: no key \"{}\" in {}{}", ctx.file, text, key,
                                    section.empty() ? "the top level" : section,
                                    near ? fmt::format(" (did you mean {}?)", child(section, *near)) : ""));
    }
    section = child(section, key);
  }
  if (nesting_depth(raw) > kMaxJsonNesting) {
    throw ConfigError(fmt::format("{}: --set {}: nested deeper than {} levels", ctx.file, path, kMaxJsonNesting));
  }
  json value;
  try {
    value = json::parse(raw);
  } catch (const json::out_of_range&) {
    throw ConfigError(fmt::format("{}: --set {}: the number is out of range", ctx.file, text));
  } catch (const json::exception&) {
    value = raw;  // a bare word, e.g. --set parallel.schedule=gpipe
  }
  json* v = &doc;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!v->is_object()) break;
    v = &(*v)[parts[i]];
    if (v->is_null()) *v = json::object();
  }
  if (!v->is_object()) {
    ctx.fail(path.substr(0, path.rfind('.')), "expected an object to --set " + path + " in, got " + show(*v));
  }
  (*v)[parts.back()] = value;
  ctx.set_by[path] = text;
  expand_all(doc, ctx);
}

// Reads one section: rejects unknown keys, and reads typed values with
// messages that name the path.
class Section {
 public:
  Section(const json& doc, std::string path, const Context& ctx) : path_(std::move(path)), ctx_(ctx) {
    const json* v = &doc;
    if (!path_.empty()) {
      std::size_t start = 0;
      while (true) {
        const std::size_t dot = path_.find('.', start);
        const std::string key = path_.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!v->is_object() || !v->contains(key)) ctx.fail(path_, "is missing (expected an object)");
        v = &(*v)[key];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
    }
    if (!v->is_object()) ctx.fail(path_, "expected an object, got " + show(*v));
    obj_ = v;
    check_keys(*section_keys(path_));
  }
  // One object of a list, e.g. cluster.network.links[3], with its own keys.
  Section(const json& entry, std::string path, const std::vector<std::string>& keys, const Context& ctx)
      : path_(std::move(path)), ctx_(ctx) {
    if (!entry.is_object()) ctx.fail(path_, "expected an object, got " + show(entry));
    obj_ = &entry;
    check_keys(keys);
  }

  bool has(const std::string& key) const { return obj_->contains(key); }
  std::string path(const std::string& key) const { return child(path_, key); }

  const json& required(const std::string& key, std::string_view expected) const {
    if (!has(key)) ctx_.fail(path(key), fmt::format("is missing (expected {})", expected));
    return (*obj_)[key];
  }

  // Upper bounds keep every derived quantity (times in picoseconds, bytes)
  // far from overflow; they are orders of magnitude above any real system.
  int positive_int(const std::string& key, int max) const {
    return integer(required(key, "a positive integer"), key, max);
  }
  int positive_int_or(const std::string& key, int fallback, int max) const {
    return has(key) ? integer((*obj_)[key], key, max) : fallback;
  }
  // A number in [min, max], min > 0.
  double positive_number(const std::string& key, double min, double max) const {
    return number(required(key, "a positive number"), key, min, max);
  }
  // A number in [0, max].
  double non_negative_number(const std::string& key, double max) const {
    return number(required(key, "a number >= 0"), key, 0.0, max);
  }
  std::string string(const std::string& key) const {
    const json& v = required(key, "a string");
    if (!v.is_string()) ctx_.fail(path(key), "expected a string, got " + show(v));
    return v.get<std::string>();
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? string(key) : fallback;
  }
  // One of a few named values: `choice("kind", kFlat, {{"flat", kFlat}, ...})`.
  template <class T>
  T choice(const std::string& key, T fallback, const std::vector<std::pair<std::string, T>>& options) const {
    if (!has(key)) return fallback;
    const std::string given = string(key);
    std::string names;
    for (std::size_t i = 0; i < options.size(); ++i) {
      if (options[i].first == given) return options[i].second;
      names += (i == 0 ? "" : i + 1 == options.size() ? " or " : ", ") + ("\"" + options[i].first + "\"");
    }
    ctx_.fail(path(key), "expected " + names + ", got " + show(json(given)));
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = (*obj_)[key];
    if (!v.is_boolean()) ctx_.fail(path(key), "expected true or false, got " + show(v));
    return v.get<bool>();
  }
  // [[size, tflops], ...] with sizes ascending.
  std::vector<hw::ThroughputPoint> curve(const std::string& key) const {
    const json& v = required(key, "a list of [size, TFLOP/s] pairs");
    const std::string expected = "a non-empty list of [size, TFLOP/s] pairs with sizes ascending";
    if (!v.is_array() || v.empty()) ctx_.fail(path(key), "expected " + expected + ", got " + show(v));
    std::vector<hw::ThroughputPoint> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& p = v[i];
      const std::string where = fmt::format("{}[{}]", path(key), i);
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() || !(p[0].get<double>() > 0) ||
          !(p[1].get<double>() >= kMinRate) || p[0].get<double>() > 1e9 || p[1].get<double>() > kMaxTflops) {
        ctx_.fail(where, fmt::format("expected [size, TFLOP/s] with size in (0, 1e9] and TFLOP/s from {:g} to {:g}, got {}",
                                     kMinRate, kMaxTflops, show(p)));
      }
      if (!out.empty() && !(p[0].get<double>() > out.back().size)) ctx_.fail(where, "sizes must ascend");
      out.push_back({p[0].get<double>(), p[1].get<double>()});
    }
    return out;
  }
  // A string, or an object whose values are strings (notes such as `sources`).
  void free_text(const std::string& key) const {
    if (!has(key)) return;
    const json& v = (*obj_)[key];
    if (v.is_string()) return;
    if (!v.is_object()) ctx_.fail(path(key), "expected text, got " + show(v));
    for (const auto& [k, note] : v.items()) {
      if (!note.is_string()) ctx_.fail(path(key) + "." + k, "expected text, got " + show(note));
    }
  }

 private:
  int integer(const json& v, const std::string& key, int max) const {
    if (const std::string why = positive_int_problem(v, max); !why.empty()) ctx_.fail(path(key), why);
    return static_cast<int>(v.get<double>());
  }
  double number(const json& v, const std::string& key, double min, double max) const {
    const bool zero_ok = min == 0.0;
    if (!v.is_number() || v.get<double>() < 0.0 || (!zero_ok && v.get<double>() == 0.0)) {
      ctx_.fail(path(key), fmt::format("expected {}, got {}", zero_ok ? "a number >= 0" : "a positive number", show(v)));
    }
    const double x = v.get<double>();
    if (x < min || x > max) ctx_.fail(path(key), fmt::format("expected a number from {:g} to {:g}, got {}", min, max, show(v)));
    return x;
  }

  void check_keys(const std::vector<std::string>& keys) const {
    for (const auto& [key, value] : obj_->items()) {
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      ctx_.fail(child(path_, excerpt(key)), unknown_key_message(key, keys));
    }
  }

  std::string path_;
  const Context& ctx_;
  const json* obj_ = nullptr;
};

hw::GpuSpec read_gpu(const json& doc, const Context& ctx) {
  const Section s(doc, "cluster.node.gpu", ctx);
  hw::GpuSpec g;
  g.name = s.string_or("name", "custom GPU");
  g.peak_tflops = s.positive_number("peak_tflops", kMinRate, kMaxTflops);
  g.memory_gb = s.positive_number("memory_gb", 1e-3, kMaxMemoryGb);
  g.hbm_tb_per_s = s.positive_number("hbm_tb_per_s", kMinRate, kMaxTbPerS);
  g.hbm_achievable_tb_per_s = s.positive_number("hbm_achievable_tb_per_s", kMinRate, kMaxTbPerS);
  g.gemm_tflops = s.curve("gemm_tflops");
  g.gemm_max_tflops = s.positive_number("gemm_max_tflops", kMinRate, kMaxTflops);
  g.attention_tflops = s.curve("attention_tflops");
  g.kernel_overhead_us = s.non_negative_number("kernel_overhead_us", kMaxMicroseconds);
  s.free_text("sources");
  if (g.hbm_achievable_tb_per_s > g.hbm_tb_per_s) {
    ctx.fail(s.path("hbm_achievable_tb_per_s"), "cannot exceed hbm_tb_per_s");
  }
  // Measured throughput cannot beat the peak; a point that does is a typo.
  if (g.gemm_max_tflops > g.peak_tflops) ctx.fail(s.path("gemm_max_tflops"), "cannot exceed peak_tflops");
  for (const char* key : {"gemm_tflops", "attention_tflops"}) {
    const auto& curve = std::string(key) == "gemm_tflops" ? g.gemm_tflops : g.attention_tflops;
    for (std::size_t i = 0; i < curve.size(); ++i) {
      if (curve[i].tflops > g.peak_tflops) {
        ctx.fail(fmt::format("{}[{}]", s.path(key), i),
                 fmt::format("{} TFLOP/s exceeds peak_tflops = {}", curve[i].tflops, g.peak_tflops));
      }
    }
  }
  return g;
}

// A custom network's switches and links with their placeholders filled (see
// hw::fill_placeholders), every name checked against the switches and the
// nodes' vertices. A switch or cable that a placeholder entry gives more than
// once counts once; given again by another entry, it is an error.
hw::CustomNetwork read_custom_network(const Section& w, const hw::ClusterSpec& cluster, const Context& ctx) {
  constexpr std::size_t kMaxEntries = 1'000'000;  // switches, or links, after filling
  hw::CustomNetwork net;
  auto list_at = [&](const std::string& key) -> const json& {
    const json& v = w.required(key, "a list of objects");
    if (!v.is_array()) ctx.fail(w.path(key), "expected a list of objects, got " + show(v));
    return v;
  };
  auto fill = [&](const std::vector<std::string>& texts, const std::string& where) -> std::vector<hw::Filling> {
    try {
      return hw::fill_placeholders(texts, cluster.nodes, cluster.node.nics_per_node, kMaxEntries);
    } catch (const std::invalid_argument& e) {
      ctx.fail(where, e.what());
    }
  };
  // " (\"leaf{n/2}\" with n = 4)" for a name a placeholder made.
  auto filled_from = [](const std::string& pattern, const hw::Filling& f) -> std::string {
    std::string values;
    if (pattern.find("{n") != std::string::npos) values = fmt::format("n = {}", f.node);
    if (pattern.find("{i") != std::string::npos) values += (values.empty() ? "" : ", ") + fmt::format("i = {}", f.nic);
    return values.empty() ? "" : fmt::format(" (\"{}\" with {})", pattern, values);
  };

  std::map<std::string, std::string> switch_at;  // name -> where it is listed
  if (w.has("switches")) {
    const json& list = list_at("switches");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Section e(list[k], fmt::format("{}[{}]", w.path("switches"), k), {"name"}, ctx);
      const std::string pattern = e.string("name");
      for (const hw::Filling& f : fill({pattern}, e.path("name"))) {
        const std::string& name = f.texts[0];
        if (name.empty()) ctx.fail(e.path("name"), "expected a non-empty name");
        if (name.find("->") != std::string::npos) {
          ctx.fail(e.path("name"), fmt::format("\"{}\": a name may not hold \"->\" (link names use it)", name));
        }
        if (hw::node_vertex(name, cluster)) {
          ctx.fail(e.path("name"),
                   fmt::format("\"{}\" is the name of a node's vertex; a switch needs a name of its own", name));
        }
        if (const auto it = switch_at.find(name); it != switch_at.end()) {
          ctx.fail(e.path("name"), fmt::format("switch \"{}\"{} is already listed at {}", name, filled_from(pattern, f),
                                               it->second));
        }
        switch_at.emplace(name, e.path("name"));
        net.switches.push_back(name);
      }
      if (net.switches.size() > kMaxEntries) {
        ctx.fail(w.path("switches"), fmt::format("more than {} switches", kMaxEntries));
      }
    }
  }

  // An unknown name is named with the closest known one and what is known.
  auto unknown = [&](const std::string& name, const std::string& from) {
    std::vector<std::string> known = net.switches;
    const std::vector<std::string> nodes = hw::node_vertex_names(cluster, 64);
    known.insert(known.end(), nodes.begin(), nodes.end());
    const auto near = closest(name, known);
    const auto listed = static_cast<std::ptrdiff_t>(std::min<std::size_t>(8, net.switches.size()));
    std::vector<std::string> shown(net.switches.begin(), net.switches.begin() + listed);
    if (net.switches.size() > shown.size()) shown.push_back("...");
    return fmt::format("no switch or node vertex named \"{}\"{}{}; switches: {}; node vertices: {}", name, from,
                       near ? fmt::format(" (did you mean \"{}\"?)", *near) : "",
                       shown.empty() ? "none" : join(shown, ", "), hw::node_vertex_ranges(cluster));
  };
  std::map<std::pair<std::string, std::string>, std::string> cable_at;  // (name, name) in order -> where
  const json& list = list_at("links");
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string where = fmt::format("{}[{}]", w.path("links"), k);
    const Section e(list[k], where, {"from", "to", "gbit_per_s", "latency_us"}, ctx);
    const std::string from = e.string("from"), to = e.string("to");
    const double gbit = e.positive_number("gbit_per_s", kMinRate, kMaxBandwidth);
    const double latency = e.has("latency_us") ? e.non_negative_number("latency_us", kMaxMicroseconds) : 0.0;
    for (const hw::Filling& f : fill({from, to}, where)) {
      for (int end = 0; end < 2; ++end) {
        const std::string& name = f.texts[end];
        if (!switch_at.count(name) && !hw::node_vertex(name, cluster)) {
          ctx.fail(e.path(end == 0 ? "from" : "to"), unknown(name, filled_from(end == 0 ? from : to, f)));
        }
      }
      if (f.texts[0] == f.texts[1]) ctx.fail(where, fmt::format("a link from \"{}\" to itself", f.texts[0]));
      const auto ends = std::minmax(f.texts[0], f.texts[1]);
      const auto [it, fresh] = cable_at.emplace(std::make_pair(ends.first, ends.second), where);
      if (!fresh) {
        ctx.fail(where, fmt::format("{} and {} are already joined by {} (give one link with the bandwidth of both)",
                                    f.texts[0], f.texts[1], it->second));
      }
      net.links.push_back({f.texts[0], f.texts[1], gbit, latency});
    }
    if (net.links.size() > kMaxEntries) ctx.fail(w.path("links"), fmt::format("more than {} links", kMaxEntries));
  }
  return net;
}

hw::ClusterSpec read_cluster(const json& doc, const Context& ctx) {
  const Section c(doc, "cluster", ctx);
  const Section n(doc, "cluster.node", ctx);
  hw::ClusterSpec cluster;
  cluster.nodes = c.positive_int("nodes", kMaxCount);
  hw::NodeSpec& node = cluster.node;
  node.name = n.string_or("name", "custom node");
  node.gpu = read_gpu(doc, ctx);
  node.gpus_per_node = n.positive_int("gpus_per_node", 1024);
  node.nvlink_gb_per_s = n.positive_number("nvlink_gb_per_s", kMinRate, kMaxBandwidth);
  node.nvlink_latency_us = n.non_negative_number("nvlink_latency_us", kMaxMicroseconds);
  node.nvlink_bus_gb_per_s = n.positive_number("nvlink_bus_gb_per_s", kMinRate, kMaxBandwidth);
  if (n.has("nvlink_sendrecv_gb_per_s")) {
    node.nvlink_sendrecv_gb_per_s = n.positive_number("nvlink_sendrecv_gb_per_s", kMinRate, kMaxBandwidth);
    if (node.nvlink_sendrecv_gb_per_s > node.nvlink_gb_per_s) {
      ctx.fail(n.path("nvlink_sendrecv_gb_per_s"),
               fmt::format("{} GB/s is above the NVLink line rate nvlink_gb_per_s ({} GB/s); expected at most that "
                           "(when lowering nvlink_gb_per_s, lower this too)",
                           node.nvlink_sendrecv_gb_per_s, node.nvlink_gb_per_s));
    }
  }
  node.nics_per_node = n.positive_int("nics_per_node", 1024);
  node.nic_gbit_per_s = n.positive_number("nic_gbit_per_s", kMinRate, kMaxBandwidth);
  node.nic_bus_gb_per_s = n.positive_number("nic_bus_gb_per_s", kMinRate, kMaxBandwidth);
  node.nic_latency_us = n.non_negative_number("nic_latency_us", kMaxMicroseconds);
  n.free_text("sources");
  const long long gpus = static_cast<long long>(cluster.nodes) * node.gpus_per_node;
  if (gpus > kMaxGpus) {
    ctx.fail("cluster.nodes", fmt::format("{} nodes x {} GPUs = {} GPUs, more than the {} supported", cluster.nodes,
                                          node.gpus_per_node, gpus, kMaxGpus));
  }
  if (doc["cluster"].contains("network")) {
    const Section w(doc, "cluster.network", ctx);
    hw::NetworkSpec& net = cluster.network;
    net.kind = w.choice<hw::NetworkKind>("kind", hw::NetworkKind::kFlat,
                                         {{"flat", hw::NetworkKind::kFlat},
                                          {"fat-tree", hw::NetworkKind::kFatTree},
                                          {"rail", hw::NetworkKind::kRail},
                                          {"custom", hw::NetworkKind::kCustom}});
    if (net.kind == hw::NetworkKind::kCustom) {
      for (const char* key : {"nodes_per_leaf", "oversubscription", "switch_latency_us"}) {
        if (w.has(key)) {
          ctx.fail(w.path(key), "not used by a custom network (each of its links gives its own gbit_per_s and "
                                "latency_us)");
        }
      }
      net.custom = read_custom_network(w, cluster, ctx);
    } else {
      for (const char* key : {"switches", "links"}) {
        if (w.has(key)) ctx.fail(w.path(key), "only read when cluster.network.kind is \"custom\"");
      }
    }
    net.nodes_per_leaf = w.positive_int_or("nodes_per_leaf", 1, kMaxCount);
    net.oversubscription = w.has("oversubscription") ? w.positive_number("oversubscription", 1.0, 1e3) : 1.0;
    net.switch_latency_us = w.has("switch_latency_us") ? w.non_negative_number("switch_latency_us", kMaxMicroseconds) : 0.0;
    w.string_or("name", "");
    w.free_text("sources");
  }
  if (c.has("calibration")) {
    // A profile tools/calibrate wrote, relative to the config's folder; its
    // own errors name the profile's file and JSON path.
    std::filesystem::path file(c.string("calibration"));
    if (file.empty()) ctx.fail(c.path("calibration"), "expected the path of a calibration profile (JSON)");
    if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) ctx.fail(c.path("calibration"), "no such file: " + file.string());
    const auto profile = load_calibration_profile(file.string());
    // Another GPU's measurements would time this cluster as that GPU, silently.
    if (!same_gpu(profile->header.gpu_name, node.gpu.name)) {
      ctx.fail(c.path("calibration"),
               fmt::format("the profile {} was measured on {} (header.gpu_name), but the cluster's GPU is {} "
                           "(cluster.node.gpu.name); expected a profile of that GPU (if it is the same chip under "
                           "another name, set cluster.node.gpu.name to \"{}\")",
                           file.string(), profile->header.gpu_name, node.gpu.name, profile->header.gpu_name),
               {"cluster.node.gpu.name"});
    }
    cluster.node = calibrated(cluster.node, profile);
  }
  return cluster;
}

workload::TransformerSpec read_model(const json& doc, const Context& ctx) {
  const Section s(doc, "model", ctx);
  workload::TransformerSpec m;
  m.name = s.string_or("name", "custom model");
  m.arch = s.choice<workload::Arch>("arch", workload::Arch::kGpt,
                                     {{"gpt", workload::Arch::kGpt},
                                      {"llama", workload::Arch::kLlama},
                                      {"layers", workload::Arch::kGpt}});  // "layers": read_layer_table
  m.layers = s.positive_int("layers", kMaxModelDim);
  m.hidden = s.positive_int("hidden", kMaxModelDim);
  m.heads = s.positive_int("heads", kMaxModelDim);
  m.kv_heads = s.positive_int_or("kv_heads", m.heads, kMaxModelDim);
  m.ffn = s.positive_int("ffn", kMaxModelDim);
  m.seq = s.positive_int("seq", kMaxModelDim);
  m.vocab = s.positive_int("vocab", kMaxModelDim);
  s.free_text("source");
  if (m.hidden % m.heads != 0) {
    ctx.fail(s.path("heads"), fmt::format("model.hidden = {} must divide evenly into {} heads", m.hidden, m.heads),
             {"model.hidden"});
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    ctx.fail(s.path("kv_heads"), fmt::format("expected a divisor of model.heads = {}, got {}", m.heads, m.kv_heads),
             {"model.heads"});
  }
  return m;
}

// ---- Layer-table models and burst parallelism (workload/layer_table.hpp,
// workload/burst_spec.hpp) ----

bool is_layer_table(const json& doc, const std::string& path) {
  const json* v = &doc;
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object() || !v->contains(key)) return false;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v->is_object() && v->contains("arch") && (*v)["arch"] == "layers";
}

workload::LayerTable read_layer_table(const json& doc, const std::string& path, const Context& ctx) {
  const Section s(doc, path, ctx);
  workload::LayerTable t;
  t.name = s.string_or("name", "custom model");
  s.choice<int>("arch", 0, {{"layers", 0}});
  s.free_text("source");
  for (const char* key : {"hidden", "heads", "kv_heads", "ffn", "seq", "vocab"}) {
    if (s.has(key)) ctx.fail(s.path(key), "not a key of a layer-table model (arch \"layers\"); remove it");
  }
  t.input_bytes_per_sample = s.positive_number("input_bytes_per_sample", 1.0, 1e12);
  const std::string expected =
      "a non-empty list of layers {name, flops_per_sample, params, output_bytes_per_sample[, gemms]}";
  const json& list = s.required("layers", expected);
  if (!list.is_array() || list.empty()) ctx.fail(s.path("layers"), "expected " + expected + ", got " + show(list));
  constexpr std::size_t kMaxLayers = 10'000;
  if (list.size() > kMaxLayers) {
    ctx.fail(s.path("layers"), fmt::format("expected at most {} layers, got {}", kMaxLayers, list.size()));
  }
  const std::vector<std::string> known = {"name", "flops_per_sample", "params", "output_bytes_per_sample", "gemms"};
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", s.path("layers"), i);
    const json& e = list[i];
    if (!e.is_object()) {
      ctx.fail(where, "expected a layer {name, flops_per_sample, params, output_bytes_per_sample}, got " + show(e));
    }
    for (const auto& [k, v] : e.items()) {
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      ctx.fail(where + "." + excerpt(k), unknown_key_message(k, known));
    }
    // A number in [min, max] (min 0 allows zero).
    auto number = [&](const std::string& key, double min, double max) {
      if (!e.contains(key)) {
        ctx.fail(where + "." + key, fmt::format("is missing (expected a number from {:g} to {:g})", min, max));
      }
      const json& v = e[key];
      if (!v.is_number() || !(v.get<double>() >= min) || v.get<double>() > max || (min > 0.0 && v.get<double>() == 0.0)) {
        ctx.fail(where + "." + key, fmt::format("expected a number from {:g} to {:g}, got {}", min, max, show(v)));
      }
      return v.get<double>();
    };
    workload::Layer l;
    if (!e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty()) {
      ctx.fail(where + ".name", "expected the layer's name (a non-empty string)");
    }
    l.name = e["name"].get<std::string>();
    l.flops_per_sample = number("flops_per_sample", 0.0, 1e15);
    l.params = number("params", 0.0, 1e13);
    l.output_bytes_per_sample = number("output_bytes_per_sample", 1.0, 1e12);
    if (e.contains("gemms")) {
      const json& g = e["gemms"];
      if (!g.is_array()) ctx.fail(where + ".gemms", "expected a list of [m_per_sample, n, k], got " + show(g));
      double flops = 0.0;
      for (std::size_t j = 0; j < g.size(); ++j) {
        const json& x = g[j];
        const bool ok = x.is_array() && x.size() == 3 &&
                        std::all_of(x.begin(), x.end(), [](const json& d) {
                          return d.is_number() && d.get<double>() >= 1.0 && d.get<double>() <= 1e9;
                        });
        if (!ok) {
          ctx.fail(fmt::format("{}.gemms[{}]", where, j), "expected [m_per_sample, n, k], each from 1 to 1e9, got " + show(x));
        }
        l.gemms.push_back({x[0].get<double>(), x[1].get<double>(), x[2].get<double>()});
        flops += l.gemms.back().flops_per_sample();
      }
      if (flops > l.flops_per_sample * (1.0 + 1e-9)) {
        ctx.fail(where + ".gemms", fmt::format("the GEMMs' FLOPs (2 m n k, summed: {:g}) exceed flops_per_sample = {:g}",
                                               flops, l.flops_per_sample));
      }
    }
    t.layers.push_back(std::move(l));
  }
  return t;
}

workload::BurstSpec read_burst(const json& doc, const Context& ctx) {
  workload::BurstSpec b;
  if (!doc.contains("parallel") || !doc["parallel"].is_object() || !doc["parallel"].contains("burst")) return b;
  const Section s(doc, "parallel.burst", ctx);
  if (s.has("amplification_limit")) b.amplification_limit = s.positive_number("amplification_limit", 1.0, 1e6);
  if (s.has("layer_gpus")) {
    const json& v = s.required("layer_gpus", "a list of GPU counts, one per layer");
    if (!v.is_array()) ctx.fail(s.path("layer_gpus"), "expected a list of GPU counts, one per layer, got " + show(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<long long>() < 1 || v[i].get<long long>() > kMaxGpus) {
        ctx.fail(fmt::format("{}[{}]", s.path("layer_gpus"), i), "expected a positive integer, got " + show(v[i]));
      }
      b.layer_gpus.push_back(v[i].get<int>());
    }
  }
  if (s.has("interference")) b.interference = s.non_negative_number("interference", 10.0);
  if (s.has("background")) {
    const Section bg(doc, "parallel.burst.background", ctx);
    const std::string path = bg.path("model");
    bg.required("model", "a layer-table model: a preset name such as \"resnet-50\", an object or a .json file");
    if (!is_layer_table(doc, path)) ctx.fail(path, "expected a layer-table model (arch \"layers\"), such as \"resnet-50\"");
    workload::BurstBackground background;
    background.model = read_layer_table(doc, path, ctx);
    background.batch = bg.positive_int("batch", kMaxCount);
    b.background = std::move(background);
  } else if (s.has("interference")) {
    ctx.fail(s.path("interference"), "applies only with parallel.burst.background (the job it slows the foreground for)");
  }
  return b;
}

// A layer-table model runs data-parallel on every GPU, or under the burst
// schedule; the pipeline and transformer settings do not apply to it.
void check_layer_plan(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const int gpus = sc.cluster.gpus();
  const bool burst = p.schedule == "burst";
  const std::string why = "does not apply to a layer-table model (it runs data-parallel, or with parallel.schedule = \"burst\")";
  if (p.tp != 1) ctx.fail("parallel.tp", why);
  if (p.pp != 1) ctx.fail("parallel.pp", why);
  if (p.vp != 1) ctx.fail("parallel.vp", why);
  if (p.microbatch_size != 1) ctx.fail("parallel.microbatch_size", why + "; each GPU runs its samples as one batch");
  if (p.twobp_concat) ctx.fail("parallel.twobp_concat", why);
  if (p.recompute != workload::Recompute::kNone) ctx.fail("parallel.recompute", why);
  if (p.sequence_parallel) ctx.fail("parallel.sequence_parallel", why);
  if (p.zero_stage != 0) ctx.fail("parallel.zero_stage", why);
  if (!p.stage_layers.empty()) ctx.fail("parallel.stage_layers", why);
  if (p.grad_bucket_mib != workload::Plan{}.grad_bucket_mib) {
    ctx.fail("parallel.grad_bucket_mib", why + "; each layer's gradients are one all-reduce");
  }
  if (p.grad_accumulation != workload::Plan{}.grad_accumulation) ctx.fail("parallel.grad_accumulation", why);
  if (p.precision != workload::Plan{}.precision) ctx.fail("parallel.precision", why);
  if (p.grad_dtype != workload::Plan{}.grad_dtype) ctx.fail("parallel.grad_dtype", why);
  if (p.send_split != workload::Plan{}.send_split) ctx.fail("parallel.pipeline_send_split", why);
  if (sc.options.comm_slowdown > 0.0) {
    ctx.fail("options.comm_slowdown", "not modelled for a layer-table model (parallel.burst.interference slows the "
                                      "foreground for a background job)");
  }
  if (burst && p.dp != 1 && p.dp != gpus) {
    ctx.fail("parallel.dp", fmt::format("the burst schedule gives each layer its GPUs among all {}: expected {} or "
                                        "none, got {}", gpus, gpus, p.dp));
  }
  if (!burst && p.dp != gpus) {
    ctx.fail("parallel.dp", fmt::format("a layer-table model runs data-parallel on every GPU: expected {} "
                                        "(cluster.nodes = {} x gpus_per_node = {}), got {}",
                                        gpus, sc.cluster.nodes, sc.cluster.node.gpus_per_node, p.dp));
  }
  if (p.global_batch < (burst ? 1 : gpus)) {
    ctx.fail("parallel.global_batch", fmt::format("{} samples leave GPUs without any under data parallelism over {} "
                                                  "GPUs (the burst schedule can use fewer)", p.global_batch, gpus));
  }
  const auto& layers = sc.layer_model->layers;
  // Tasks grow with layers x GPUs; keep the graph to a size that simulates in seconds.
  constexpr long long kMaxLayerGpus = 2'500'000;
  if (static_cast<long long>(layers.size()) * gpus > kMaxLayerGpus) {
    ctx.fail("model.layers", fmt::format("{} layers x {} GPUs is more than the {} the simulator takes", layers.size(),
                                         gpus, kMaxLayerGpus));
  }
  const auto& given = sc.burst.layer_gpus;
  if (!given.empty()) {
    if (given.size() != layers.size()) {
      ctx.fail("parallel.burst.layer_gpus", fmt::format("expected one GPU count per layer ({} layers), got {}",
                                                        layers.size(), given.size()));
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (gpus % given[i] != 0 || given[i] > p.global_batch) {
        ctx.fail(fmt::format("parallel.burst.layer_gpus[{}]", i),
                 fmt::format("expected a divisor of the cluster's {} GPUs up to parallel.global_batch = {} (layer "
                             "\"{}\"), got {}", gpus, p.global_batch, layers[i].name, given[i]));
      }
    }
  }
}

workload::Plan read_plan(const json& doc, const Context& ctx) {
  const Section s(doc, "parallel", ctx);
  workload::Plan p;
  p.tp = s.positive_int_or("tp", 1, kMaxCount);
  p.pp = s.positive_int_or("pp", 1, kMaxCount);
  p.dp = s.positive_int_or("dp", 1, kMaxCount);
  p.vp = s.positive_int_or("vp", 1, kMaxCount);
  p.microbatch_size = s.positive_int_or("microbatch_size", 1, kMaxCount);
  p.global_batch = s.positive_int("global_batch", 1'000'000'000);
  p.schedule = s.string_or("schedule", "1f1b");
  p.twobp_concat = s.boolean_or("twobp_concat", false);
  p.recompute = s.choice<workload::Recompute>("recompute", workload::Recompute::kNone,
                                               {{"none", workload::Recompute::kNone},
                                                {"selective", workload::Recompute::kSelective},
                                                {"full", workload::Recompute::kFull}});
  p.sequence_parallel = s.boolean_or("sequence_parallel", false);
  p.attention = s.choice<workload::Attention>("attention", workload::Attention::kFlash,
                                               {{"flash", workload::Attention::kFlash},
                                                {"unfused", workload::Attention::kUnfused}});
  if (s.has("zero_stage")) {
    const json& z = s.required("zero_stage", "0, 1, 2 or 3");
    if (!z.is_number_integer() || z.get<long long>() < 0 || z.get<long long>() > 3) {
      ctx.fail(s.path("zero_stage"), "expected 0, 1, 2 or 3, got " + show(z));
    }
    p.zero_stage = z.get<int>();
  }
  if (s.has("grad_bucket_mib")) p.grad_bucket_mib = s.positive_number("grad_bucket_mib", 1.0, 1e6);
  p.grad_accumulation = s.choice<workload::GradAccumulation>("grad_accumulation", workload::GradAccumulation::kFused,
                                                             {{"fused", workload::GradAccumulation::kFused},
                                                              {"add", workload::GradAccumulation::kAdd},
                                                              {"cast-add", workload::GradAccumulation::kCastAdd}});
  p.precision = s.choice<workload::Precision>("precision", workload::Precision::kBf16,
                                              {{"bf16", workload::Precision::kBf16},
                                               {"fp16", workload::Precision::kFp16}});
  // The gradients are the weights' 16-bit type unless said otherwise.
  const auto sixteen = p.precision == workload::Precision::kFp16 ? workload::GradDtype::kFp16 : workload::GradDtype::kBf16;
  p.grad_dtype = s.choice<workload::GradDtype>("grad_dtype", sixteen,
                                               {{"bf16", workload::GradDtype::kBf16},
                                                {"fp16", workload::GradDtype::kFp16},
                                                {"fp32", workload::GradDtype::kFp32}});

  p.send_split = s.choice<workload::PipelineSendSplit>("pipeline_send_split", workload::PipelineSendSplit::kScatterGather,
                                                       {{"scatter-gather", workload::PipelineSendSplit::kScatterGather},
                                                        {"full", workload::PipelineSendSplit::kFull}});
  if (s.has("stage_layers")) {
    const json& v = s.required("stage_layers", "a list of layer counts, one per stage");
    if (!v.is_array()) ctx.fail(s.path("stage_layers"), "expected a list of layer counts, one per stage, got " + show(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      // The first stage holds the embedding and the last the output head, so
      // they have work with no layers (Megatron-LM forks pad the layers so
      // that these virtual stages hold none); every other stage needs one.
      const bool end = i == 0 || i + 1 == v.size();
      const long long least = end ? 0 : 1;
      if (!v[i].is_number_integer() || v[i].get<long long>() < least || v[i].get<long long>() > kMaxModelDim) {
        ctx.fail(fmt::format("{}[{}]", s.path("stage_layers"), i),
                 end ? "expected a whole number of layers, 0 or more (the first and last stages hold the embedding "
                       "and the output head), got " + show(v[i])
                     : "expected a positive integer (only the first and last stages may hold no layers), got " +
                           show(v[i]));
      }
      p.stage_layers.push_back(v[i].get<int>());
    }
  }
  // "burst" is no pipeline schedule: it gives each layer its own GPUs (lower/burst.hpp).
  if (p.schedule != "burst" && !schedule::is_csv_name(p.schedule) && schedule::find_schedule(p.schedule) == nullptr) {
    std::vector<std::string> names;
    for (const auto& sch : schedule::all_schedules()) names.emplace_back(sch->name());
    names.emplace_back("burst");
    const auto near = closest(p.schedule, names);
    ctx.fail(s.path("schedule"), fmt::format("unknown schedule \"{}\"{}; known: {} (see `trainsim schedules`)",
                                             excerpt(p.schedule), near ? fmt::format(" (did you mean \"{}\"?)", *near) : "",
                                             join(names, ", ") + ", or csv:PATH"));
  }
  return p;
}

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
    o.links.push_back(f);
  });
  if (s.has("comm_slowdown")) o.comm_slowdown = s.non_negative_number("comm_slowdown", 10.0);
  o.flow_collectives = s.choice<bool>("collectives", false, {{"analytic", false}, {"flow", true}});
  using A = hw::CollectiveAlgorithm;
  o.collective_algorithm = s.choice<A>("collective_algorithm", A::kAuto,
                                       {{"auto", A::kAuto}, {"ring", A::kRing}, {"tree", A::kTree},
                                        {"hierarchical", A::kHierarchical}});
  o.blocking_sends = s.choice<bool>("pipeline_sends", false, {{"overlapped", false}, {"blocking", true}});
  if (s.has("cuda_context_mib")) o.cuda_context_bytes = s.non_negative_number("cuda_context_mib", kMaxCudaContextMib) * 1048576.0;
  return o;
}

// Checks that need more than one section.
void check_consistency(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const auto& m = sc.model;
  const int gpus = sc.cluster.gpus();
  if (sc.layer_model) {
    check_layer_plan(sc, ctx);
    return;
  }
  if (p.schedule == "burst") {
    ctx.fail("parallel.schedule", "\"burst\" needs a layer-table model (model.arch = \"layers\"; presets vgg-16, resnet-50)");
  }
  // Gradients in the other 16-bit type than the weights' (a layer-table
  // model refuses both keys above instead).
  const bool fp16 = p.precision == workload::Precision::kFp16;
  if (p.grad_dtype == (fp16 ? workload::GradDtype::kBf16 : workload::GradDtype::kFp16)) {
    ctx.fail("parallel.grad_dtype", fmt::format("{} gradients under {} precision; expected \"{}\" or \"fp32\" (or set "
                                                "parallel.precision)",
                                                fp16 ? "bf16" : "fp16", fp16 ? "fp16" : "bf16", fp16 ? "fp16" : "bf16"));
  }
  if (core::checked_product({p.tp, p.pp, p.dp}) != gpus) {
    ctx.fail("parallel", fmt::format("tp x pp x dp = {} x {} x {} = {}, but the cluster has {} GPUs "
                                     "(cluster.nodes = {} x cluster.node.gpus_per_node = {})",
                                     p.tp, p.pp, p.dp, core::product_text({p.tp, p.pp, p.dp}), gpus,
                                     sc.cluster.nodes, sc.cluster.node.gpus_per_node),
             {"parallel.tp", "parallel.pp", "parallel.dp", "cluster.nodes", "cluster.node.gpus_per_node"});
  }
  // A data- or tensor-parallel group is one collective; refused here, before
  // any costing touches a group that size.
  for (const auto& [key, size] : {std::pair<const char*, int>{"parallel.dp", p.dp}, {"parallel.tp", p.tp}}) {
    if (static_cast<std::size_t>(size) > hw::kMaxCollectiveRanks) {
      ctx.fail(key, fmt::format("{} ranks in one collective group, more than the {} the simulator takes", size,
                                hw::kMaxCollectiveRanks));
    }
  }
  if (!p.stage_layers.empty()) {
    long long sum = 0;
    for (int l : p.stage_layers) sum += l;
    if (static_cast<long long>(p.stage_layers.size()) != static_cast<long long>(p.pp) * p.vp || sum != m.layers) {
      ctx.fail("parallel.stage_layers", fmt::format("expected pp x vp = {} x {} = {} entries adding up to "
                                                    "model.layers = {}, got {} adding up to {}",
                                                    p.pp, p.vp, static_cast<long long>(p.pp) * p.vp, m.layers,
                                                    p.stage_layers.size(), sum),
               {"parallel.pp", "parallel.vp", "model.layers"});
    }
  } else if (m.layers % (static_cast<long long>(p.pp) * p.vp) != 0) {
    ctx.fail(p.vp > 1 ? "parallel.vp" : "parallel.pp",
             p.vp > 1 ? fmt::format("model.layers = {} does not divide into pp x vp = {} x {} = {} stages (or give "
                                    "parallel.stage_layers)",
                                    m.layers, p.pp, p.vp, static_cast<long long>(p.pp) * p.vp)
                      : fmt::format("model.layers = {} does not divide into pp = {} stages (or give "
                                    "parallel.stage_layers)",
                                    m.layers, p.pp),
             {"model.layers", "parallel.pp", "parallel.vp"});
  }
  if (m.heads % p.tp != 0) {
    ctx.fail("parallel.tp", fmt::format("model.heads = {} does not divide across tp = {} ranks", m.heads, p.tp),
             {"model.heads"});
  }
  if (m.kv_heads % p.tp != 0) {
    ctx.fail("parallel.tp",
             fmt::format("model.kv_heads = {} does not divide across tp = {} ranks", m.kv_heads, p.tp),
             {"model.kv_heads", "model.heads"});
  }
  if (m.ffn % p.tp != 0) {
    ctx.fail("parallel.tp", fmt::format("model.ffn = {} does not divide across tp = {} ranks", m.ffn, p.tp),
             {"model.ffn"});
  }
  const long long per_step = static_cast<long long>(p.dp) * p.microbatch_size;
  if (p.global_batch % per_step != 0) {
    ctx.fail("parallel.global_batch",
             fmt::format("{} is not a multiple of dp x microbatch_size = {} x {} = {}", p.global_batch, p.dp,
                         p.microbatch_size, per_step),
             {"parallel.dp", "parallel.microbatch_size"});
  }
  // Each (stage, micro-batch) becomes a few tasks; keep the task graph to a
  // size that simulates in seconds and fits in memory.
  constexpr long long kMaxStageMicrobatches = 2'500'000;
  const long long microbatches = p.global_batch / per_step;
  const auto work = core::checked_product({p.pp, p.vp, microbatches});
  if (!work || *work > kMaxStageMicrobatches) {
    ctx.fail("parallel", fmt::format("pp x vp x micro-batches = {} x {} x {} = {} is more than the {} the simulator "
                                     "takes (raise parallel.microbatch_size or lower parallel.global_batch)",
                                     p.pp, p.vp, microbatches, core::product_text({p.pp, p.vp, microbatches}),
                                     kMaxStageMicrobatches),
             {"parallel.pp", "parallel.vp", "parallel.global_batch", "parallel.dp", "parallel.microbatch_size"});
  }
}

// A custom network may leave GPUs apart. Every pair that exchanges data needs
// a path: pipeline neighbours, tensor- and data-parallel peers (any two of a
// group: a collective's ring may put them side by side), and the first and
// last stages, which all-reduce a tied embedding.
void check_custom_network_reach(const Scenario& sc, const Context& ctx) {
  const hw::ClusterSpec& cluster = sc.cluster;
  if (cluster.network.kind != hw::NetworkKind::kCustom) return;
  hw::FlowNetwork scratch;
  const hw::Topology topology(cluster, scratch);
  const hw::GpuReach reach(topology);
  const workload::Plan& p = sc.plan;
  // `why` makes the reason only when a message needs it.
  auto need = [&](int a, int b, const auto& why) {
    if (reach.connected(a, b)) return;
    const hw::NodeSpec& n = cluster.node;
    auto nic = [&](int gpu) {
      return fmt::format("node{}.nic{}", cluster.node_of(gpu), (gpu % n.gpus_per_node) * n.nics_per_node / n.gpus_per_node);
    };
    ctx.fail("cluster.network.links", fmt::format("GPU {} and GPU {} must talk ({}) but no path of links joins them "
                                                  "(GPU {} uses {}, GPU {} uses {})",
                                                  a, b, why(), a, nic(a), b, nic(b)));
  };
  for (int s = 0; s < p.pp; ++s) {
    for (int d = 0; d < p.dp; ++d) {
      for (int t = 0; t < p.tp; ++t) {
        const int gpu = p.gpu_of(s, d, t);
        if (s + 1 < p.pp) {
          need(gpu, p.gpu_of(s + 1, d, t), [&] { return fmt::format("pipeline neighbours: stages {} and {}", s, s + 1); });
        }
        for (int u = t + 1; u < p.tp; ++u) {
          need(gpu, p.gpu_of(s, d, u), [&] { return fmt::format("tensor-parallel peers in stage {}", s); });
        }
        for (int e = d + 1; e < p.dp; ++e) {
          need(gpu, p.gpu_of(s, e, t), [&] { return fmt::format("data-parallel peers in stage {}", s); });
        }
      }
    }
  }
  const int last = p.stages() - 1;
  if (sc.model.arch == workload::Arch::kGpt && p.rank_of_stage(0) != p.rank_of_stage(last)) {
    for (int d = 0; d < p.dp; ++d) {
      for (int t = 0; t < p.tp; ++t) {
        need(p.gpu_of(0, d, t), p.gpu_of(p.rank_of_stage(last), d, t),
             [] { return std::string("first and last stages: they all-reduce the tied embedding"); });
      }
    }
  }
  if (p.vp > 1 && p.pp > 1 && p.placement() == schedule::Placement::kLooped) {
    // Looped stages: the last rank's chunk feeds the first rank's next chunk.
    for (int d = 0; d < p.dp; ++d) {
      for (int t = 0; t < p.tp; ++t) {
        need(p.gpu_of(p.pp - 1, d, t), p.gpu_of(0, d, t),
             [] { return std::string("looped pipeline: the last rank sends to the first"); });
      }
    }
  }
}

// `parallel.schedule: "csv:PATH"`: the schedule read from that file (relative
// to the config's folder), checked against the plan's shape; null otherwise.
// The file read is added to `files_read`.
std::shared_ptr<const schedule::Schedule> read_csv_schedule(const workload::Plan& p, const Context& ctx,
                                                            std::vector<std::string>& files_read) {
  if (!schedule::is_csv_name(p.schedule)) return nullptr;
  const std::string key = "parallel.schedule";
  std::filesystem::path file(p.schedule.substr(schedule::kCsvPrefix.size()));
  if (file.empty()) ctx.fail(key, "expected a file name after \"csv:\", e.g. \"csv:my-schedule.csv\"");
  if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
  std::string text;
  try {
    text = read_text(file.string(), "schedule CSV file");
    files_read.push_back(file.string());
  } catch (const ConfigError& e) {
    ctx.fail(key, e.what());
  }
  schedule::Program program;
  try {
    program = schedule::parse_csv(text);
    schedule::check_fits(program,
                         schedule::Shape::placed(schedule::implied_placement(program), p.pp, p.vp, p.microbatches()));
  } catch (const schedule::CsvError& e) {
    ctx.fail(key, file.string() + ":" + e.what());
  } catch (const std::invalid_argument& e) {
    ctx.fail(key, file.string() + ": " + e.what());
  }
  return std::make_shared<schedule::CsvSchedule>(p.schedule, std::move(program));
}

}  // namespace

namespace {

Scenario read_scenario(json doc, const std::string& file, const std::string& base_dir,
                       const std::vector<std::string>& overrides, bool check) {
  Context ctx{file, base_dir, {}, {}, {}};
  if (!doc.is_object()) ctx.fail("", "expected a JSON object with sections cluster, model, parallel, options");
  expand_all(doc, ctx);
  for (const std::string& o : overrides) apply_override(doc, o, ctx);
  {
    const Section top(doc, "", ctx);
    top.free_text("description");
  }
  Scenario sc;
  sc.file = file;
  sc.cluster = read_cluster(doc, ctx);
  if (is_layer_table(doc, "model")) {
    sc.layer_model = read_layer_table(doc, "model", ctx);
    sc.model.name = sc.layer_model->name;
  } else {
    sc.model = read_model(doc, ctx);
  }
  sc.plan = read_plan(doc, ctx);
  sc.burst = read_burst(doc, ctx);
  if (sc.plan.schedule != "burst" && doc["parallel"].contains("burst")) {
    ctx.fail("parallel.burst", "applies only with parallel.schedule = \"burst\"");
  }
  sc.options = read_options(doc, sc.cluster.gpus(), ctx);
  // Needs the cluster and the options only: checked for a sweep's clusters too.
  if (sc.options.cuda_context_bytes >= sc.cluster.node.gpu.memory_bytes()) {
    ctx.fail("options.cuda_context_mib",
             fmt::format("{:.0f} MiB leaves no memory for tensors on the {} ({:g} GB)", sc.options.cuda_context_bytes / 1048576.0,
                         sc.cluster.node.gpu.name, sc.cluster.node.gpu.memory_gb),
             {"cluster.node.gpu.memory_gb"});
  }
  sc.input_files = ctx.files_read;
  if (const hw::CalibrationProfile* profile = sc.cluster.node.gpu.calibration.get()) {
    sc.input_files.push_back(profile->file);
  }
  if (!check) return sc;
  check_consistency(sc, ctx);
  sc.csv_schedule = read_csv_schedule(sc.plan, ctx, sc.input_files);
  if (sc.csv_schedule) sc.plan.csv_placement = sc.csv_schedule->placement();
  check_custom_network_reach(sc, ctx);
  return sc;
}

}  // namespace

Scenario load_document(nlohmann::json doc, const std::string& file, const std::string& base_dir,
                       const std::vector<std::string>& overrides) {
  return read_scenario(std::move(doc), file, base_dir, overrides, true);
}

Scenario load_setting(nlohmann::json doc, const std::string& file, const std::string& base_dir) {
  return read_scenario(std::move(doc), file, base_dir, {}, false);
}

json expand_references(json doc, const std::string& file, const std::string& base_dir) {
  Context ctx{file, base_dir, {}, {}, {}};
  if (doc.is_object()) expand_all(doc, ctx);
  return doc;
}

void check_plan(const Scenario& sc) {
  const Context ctx{sc.file, "", {}, {}, {}};
  check_consistency(sc, ctx);
  check_custom_network_reach(sc, ctx);
}

Scenario load_file(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_text(path, "config file");
  const std::string base = std::filesystem::path(path).parent_path().string();
  return load_document(parse_json(text, path), path, base, overrides);
}

}  // namespace trainsim::config
