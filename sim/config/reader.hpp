// The typed reading of a config's sections, shared by the section readers
// (read_cluster.cpp, read_model.cpp, read_plan.cpp, read_options.cpp) and the
// checks across sections (plan_checks.cpp): the Context every message comes
// from (the file, the JSON path, the --set or preset a value came from), and
// Section, which reads one object's keys within bounds and names the path of
// any problem. Internal to sim/config.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"
#include "hw/gpu_spec.hpp"

namespace trainsim::config::detail {

using nlohmann::json;

// Bounds on config values (see Section): far beyond any real hardware or
// model, close enough that nothing derived from them overflows.
inline constexpr double kMinRate = 1e-3;       // TFLOP/s, TB/s, GB/s, Gb/s
inline constexpr double kMaxTflops = 1e5;
inline constexpr double kMaxBandwidth = 1e6;   // GB/s or Gb/s
inline constexpr double kMaxTbPerS = 1e3;
inline constexpr double kMaxMemoryGb = 1e5;
inline constexpr double kMaxMicroseconds = 1e6;
inline constexpr double kMaxCudaContextMib = 1e6;  // beyond any GPU's memory; read_scenario holds it below the GPU's
inline constexpr int kMaxCount = 10'000'000;    // parallel degrees, nodes, batch sizes
inline constexpr int kMaxModelDim = 10'000'000;  // layers, hidden, heads, ffn, seq, vocab
inline constexpr long long kMaxGpus = 10'000'000;

inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

inline std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Short rendering of a value for messages.
inline std::string show(const json& v) {
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
  // An integer in [0, max], where 0 means none: `zero_means` says what, in
  // the message for anything else.
  int count_or_zero(const std::string& key, int max, std::string_view zero_means) const {
    const json& v = required(key, "a positive integer, or 0");
    if (v.is_number() && v.get<double>() == 0.0) return 0;
    if (!positive_int_problem(v, max).empty()) {
      ctx_.fail(path(key), fmt::format("expected 0 ({}) or an integer from 1 to {}, got {}", zero_means, max, show(v)));
    }
    return static_cast<int>(v.get<double>());
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

}  // namespace trainsim::config::detail
