#include "validate/cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "config/load.hpp"
#include "config/reader.hpp"
#include "config/schema.hpp"

namespace trainsim::validate {

namespace {

using nlohmann::json;

const std::vector<std::string> kTopKeys{"description", "cases", "orderings"};
constexpr double kMinMeasured = 1e-6;
constexpr double kMaxMeasured = 1e12;
const std::vector<std::string> kCaseKeys{"id", "group", "source", "config", "set", "assumptions", "measured", "notes"};
const std::vector<std::string> kOrderingKeys{"name", "metric", "increasing", "ratio", "source"};
const std::vector<std::string> kRatioKeys{"numerator", "denominator", "min", "max"};

using config::detail::show;

std::string join(const std::vector<std::string>& items) { return config::detail::join(items, ", "); }

// Fails with "FILE: PATH: WHAT", and the case's id once it is known.
struct Reader {
  std::string file;
  std::string case_id;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw config::ConfigError(fmt::format("{}: {}: {}{}", file, path.empty() ? "(top level)" : path, what,
                                          case_id.empty() ? "" : fmt::format(" (case \"{}\")", case_id)));
  }

  const json& object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "expected an object, got " + show(v));
    return v;
  }

  void check_keys(const json& obj, const std::string& path, const std::vector<std::string>& keys) const {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      const std::string shown = config::excerpt(key);
      fail(path.empty() ? shown : path + "." + shown, config::unknown_key_message(key, keys));
    }
  }

  const json& required(const json& obj, const std::string& path, const std::string& key,
                       const std::string& expected) const {
    if (!obj.contains(key)) fail(path + "." + key, "is missing (expected " + expected + ")");
    return obj[key];
  }

  std::string text(const json& v, const std::string& path) const {
    if (!v.is_string() || v.get<std::string>().empty()) fail(path, "expected non-empty text, got " + show(v));
    return v.get<std::string>();
  }

  Metric metric(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a metric name, got " + show(v));
    return metric_of(v.get<std::string>(), path);
  }

  Metric metric_of(const std::string& name, const std::string& path) const {
    if (const auto m = metric_named(name)) return *m;
    const std::optional<std::string> near = config::closest(name, metric_names());
    fail(path, fmt::format("unknown metric \"{}\"{}; supported metrics: {}", name,
                           near ? fmt::format(" (did you mean \"{}\"?)", *near) : "", join(metric_names())));
  }

  // Far beyond any real run's figure in every metric's unit (seconds, TFLOP/s,
  // GiB, ms, tokens/s), and close enough that every error, MAPE and printed
  // value stays finite and short.
  double measured(const json& v, const std::string& path) const {
    const double x = positive(v, path);
    if (x < kMinMeasured || x > kMaxMeasured) {
      fail(path, fmt::format("expected a measured value from {:g} to {:g}, got {}", kMinMeasured, kMaxMeasured, show(v)));
    }
    return x;
  }

  double positive(const json& v, const std::string& path) const {
    if (!v.is_number() || !(v.get<double>() > 0.0)) fail(path, "expected a positive number, got " + show(v));
    return v.get<double>();
  }
};

Case read_case(const json& entry, std::size_t index, const std::string& base_dir, Reader r) {
  const std::string path = fmt::format("cases[{}]", index);
  r.object(entry, path);
  Case c;
  c.index = index;
  // The id first, so that every later message can name the case.
  c.id = r.text(r.required(entry, path, "id", "a unique case id"), path + ".id");
  r.case_id = c.id;
  r.check_keys(entry, path, kCaseKeys);
  c.group = r.text(r.required(entry, path, "group", "the group its MAPE is reported in, e.g. the paper's table"),
                   path + ".group");
  c.source = r.text(r.required(entry, path, "source", "where the measurement comes from"), path + ".source");

  const json& cfg = r.required(entry, path, "config", "a config object, or the path of a config file");
  if (cfg.is_object()) {
    c.config = cfg;
  } else if (cfg.is_string() && !cfg.get<std::string>().empty()) {
    std::filesystem::path file(cfg.get<std::string>());
    if (file.is_relative() && !base_dir.empty()) file = std::filesystem::path(base_dir) / file;
    c.config_file = file.lexically_normal().string();
  } else {
    r.fail(path + ".config", "expected a config object, or the path of a config file, got " + show(cfg));
  }

  if (entry.contains("set")) {
    const json& set = entry["set"];
    if (!set.is_array()) r.fail(path + ".set", "expected a list of \"key.path=value\" overrides, got " + show(set));
    for (std::size_t k = 0; k < set.size(); ++k) {
      const std::string where = fmt::format("{}.set[{}]", path, k);
      if (!set[k].is_string() || set[k].get<std::string>().find('=') == std::string::npos) {
        r.fail(where, "expected \"key.path=value\", got " + show(set[k]));
      }
      c.set.push_back(set[k].get<std::string>());
    }
  }

  if (entry.contains("assumptions")) {
    const json& a = r.object(entry["assumptions"], path + ".assumptions");
    for (const auto& [key, why] : a.items()) {
      c.assumptions.emplace_back(key, r.text(why, path + ".assumptions." + key));
    }
  }

  const json& measured = r.object(r.required(entry, path, "measured", "an object of metric: measured value"),
                                  path + ".measured");
  // An empty "measured" is checked in parse_cases: an ordering must name the case.
  for (const auto& [key, value] : measured.items()) r.metric_of(key, path + ".measured." + key);
  for (Metric m : all_metrics()) {  // a fixed order, whatever the file's
    const std::string key(name(m));
    if (!measured.contains(key)) continue;
    const std::string where = path + ".measured." + key;
    const double v = r.measured(measured[key], where);
    if ((m == Metric::kMfu || m == Metric::kHfu) && v > 1.0) {
      r.fail(where, fmt::format("expected a fraction of peak from 0 to 1 (52% is 0.52), got {}", show(measured[key])));
    }
    c.measured.emplace_back(m, v);
  }

  if (entry.contains("notes")) c.notes = r.text(entry["notes"], path + ".notes");
  return c;
}

Ordering read_ordering(const json& entry, std::size_t index, const CaseFile& file, const Reader& r) {
  const std::string path = fmt::format("orderings[{}]", index);
  r.object(entry, path);
  r.check_keys(entry, path, kOrderingKeys);
  Ordering o;
  o.index = index;
  o.name = r.text(r.required(entry, path, "name", "a name for the check"), path + ".name");
  o.metric = r.metric(r.required(entry, path, "metric", "a metric name"), path + ".metric");
  if (entry.contains("source")) o.source = r.text(entry["source"], path + ".source");

  auto case_id = [&](const json& v, const std::string& where) {
    const std::string id = r.text(v, where);
    if (file.find(id) == nullptr) r.fail(where, fmt::format("no case with id \"{}\" in this file", id));
    return id;
  };
  const bool increasing = entry.contains("increasing"), ratio = entry.contains("ratio");
  if (increasing == ratio) r.fail(path, "expected exactly one of \"increasing\" (a list of case ids) or \"ratio\"");
  if (increasing) {
    const json& list = entry["increasing"];
    if (!list.is_array() || list.size() < 2) {
      r.fail(path + ".increasing", "expected a list of at least two case ids, got " + show(list));
    }
    for (std::size_t k = 0; k < list.size(); ++k) {
      o.increasing.push_back(case_id(list[k], fmt::format("{}.increasing[{}]", path, k)));
    }
  } else {
    const std::string where = path + ".ratio";
    const json& q = r.object(entry["ratio"], where);
    r.check_keys(q, where, kRatioKeys);
    Ordering::Ratio ra;
    ra.numerator = case_id(r.required(q, where, "numerator", "a case id"), where + ".numerator");
    ra.denominator = case_id(r.required(q, where, "denominator", "a case id"), where + ".denominator");
    if (q.contains("min")) ra.min = r.positive(q["min"], where + ".min");
    if (q.contains("max")) ra.max = r.positive(q["max"], where + ".max");
    if (!ra.min && !ra.max) r.fail(where, "expected \"min\", \"max\" or both");
    if (ra.min && ra.max && *ra.min > *ra.max) {
      r.fail(where, fmt::format("min {:g} is larger than max {:g}", *ra.min, *ra.max));
    }
    o.ratio = ra;
  }
  return o;
}

}  // namespace

std::vector<std::string> Ordering::case_ids() const {
  if (ratio) return {ratio->numerator, ratio->denominator};
  return increasing;
}

const Case* CaseFile::find(const std::string& id) const {
  if (!index_of_id.empty()) {
    const auto it = index_of_id.find(id);
    return it == index_of_id.end() ? nullptr : &cases[it->second];
  }
  for (const Case& c : cases) {  // a CaseFile made by hand, without the index
    if (c.id == id) return &c;
  }
  return nullptr;
}

CaseFile parse_cases(const json& doc, const std::string& path, const std::string& base_dir) {
  const Reader r{path, {}};
  if (!doc.is_object()) r.fail("", "expected a JSON object with \"cases\" (and optionally \"orderings\")");
  r.check_keys(doc, "", kTopKeys);
  CaseFile f;
  f.path = path;
  f.base_dir = base_dir;
  if (doc.contains("description")) f.description = r.text(doc["description"], "description");
  if (!doc.contains("cases")) r.fail("cases", "is missing (expected a list of cases)");
  const json& cases = doc["cases"];
  if (!cases.is_array() || cases.empty()) r.fail("cases", "expected a non-empty list of cases, got " + show(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Case c = read_case(cases[i], i, base_dir, r);
    if (!f.index_of_id.emplace(c.id, f.cases.size()).second) {
      r.fail(fmt::format("cases[{}].id", i), fmt::format("duplicate case id \"{}\" (ids must be unique)", c.id));
    }
    f.cases.push_back(std::move(c));
  }
  if (doc.contains("orderings")) {
    const json& orderings = doc["orderings"];
    if (!orderings.is_array()) r.fail("orderings", "expected a list of ordering checks, got " + show(orderings));
    for (std::size_t i = 0; i < orderings.size(); ++i) f.orderings.push_back(read_ordering(orderings[i], i, f, r));
  }
  // A case with nothing measured is there for an ordering (a published claim
  // with no per-run figure); otherwise it checks nothing.
  std::set<std::string> named_by_ordering;
  for (const Ordering& o : f.orderings) {
    for (std::string& id : o.case_ids()) named_by_ordering.insert(std::move(id));
  }
  for (const Case& c : f.cases) {
    if (!c.measured.empty()) continue;
    if (named_by_ordering.count(c.id) == 0) {
      r.fail(fmt::format("cases[{}].measured", c.index),
             "expected at least one measured metric, or an ordering that names case \"" + c.id +
                 "\"; supported metrics: " + join(metric_names()));
    }
  }
  return f;
}

CaseFile load_cases(const std::string& path) {
  const std::string text = config::read_text(path, "case file");
  return parse_cases(config::parse_json(text, path), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace trainsim::validate
