#include "validate/output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace trainsim::validate {

namespace {

using nlohmann::json;

const char* status_name(OrderingResult::Status s) {
  switch (s) {
    case OrderingResult::Status::kPass: return "pass";
    case OrderingResult::Status::kFail: return "fail";
    case OrderingResult::Status::kSkipped: return "skipped";
  }
  return "?";
}

std::string expected_range(const Ordering::Ratio& q) {
  if (q.min && q.max) return fmt::format("expected {:g} to {:g}", *q.min, *q.max);
  if (q.min) return fmt::format("expected at least {:g}", *q.min);
  return fmt::format("expected at most {:g}", *q.max);
}

std::string mape_title(MetricKind kind) { return std::string(kind_title(kind)) + " MAPE"; }

// `width`: of the first column, title included; group names are indented by two.
void mape_text(std::string& out, const Mape& m, std::size_t width) {
  const std::string title = mape_title(m.kind);
  if (m.rows == 0) {
    out += fmt::format("{}: no measurements\n", title);
    return;
  }
  const std::size_t group_width = width - 2;
  out += fmt::format("{:<{}}  {:>5}  {:>8}\n", title, width, "rows", "MAPE");
  for (const GroupMape& g : m.groups) {
    out += fmt::format("  {:<{}}  {:>5}  {:>7.2f}%\n", g.group, group_width, g.rows, g.mape_pct);
  }
  out += fmt::format("  {:<{}}  {:>5}  {:>7.2f}%\n", "overall", group_width, m.rows, m.overall_pct);
  const Row& w = *m.worst;
  out += fmt::format("  worst: {} {}: measured {}, predicted {} ({:+.2f}%)\n", w.case_id, name(w.metric),
                     show_value(w.measured), show_value(w.predicted), w.error_pct);
}

json mape_json(const Mape& m) {
  json groups = json::array();
  for (const GroupMape& g : m.groups) groups.push_back({{"group", g.group}, {"rows", g.rows}, {"mape_pct", g.mape_pct}});
  json worst = nullptr;
  if (m.worst) {
    worst = {{"case", m.worst->case_id},
             {"metric", name(m.worst->metric)},
             {"measured", m.worst->measured},
             {"predicted", m.worst->predicted},
             {"error_pct", m.worst->error_pct}};
  }
  return {{"rows", m.rows},
          {"overall_pct", m.rows > 0 ? json(m.overall_pct) : json(nullptr)},
          {"groups", groups},
          {"worst", worst}};
}

}  // namespace

std::string show_value(double v) {
  const double a = std::abs(v);
  if (a >= 1000.0) return fmt::format("{:.0f}", v);
  if (a >= 100.0) return fmt::format("{:.1f}", v);
  if (a >= 10.0) return fmt::format("{:.2f}", v);
  if (a >= 1.0) return fmt::format("{:.3f}", v);
  if (a >= 0.01 || a == 0.0) return fmt::format("{:.4f}", v);
  return fmt::format("{:.3g}", v);
}

namespace {

// `text` in lines of at most `width` characters (a longer word stays whole),
// each after `indent`: a case file's description runs to thousands.
std::string wrapped(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t space = text.find(' ', start);
    const std::string_view word = text.substr(start, space == std::string_view::npos ? text.npos : space - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += std::string(indent) + line + "\n";
      line.clear();
    }
    if (!word.empty()) line += (line.empty() ? "" : " ") + std::string(word);
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  if (!line.empty()) out += std::string(indent) + line + "\n";
  return out;
}

}  // namespace

std::string to_text(const Result& r, bool verbose) {
  std::string out;
  out += fmt::format("trainsim validate: {} — {} case{}, {} measurement{}\n", r.file->path, r.cases.size(),
                     r.cases.size() == 1 ? "" : "s", r.rows.size(), r.rows.size() == 1 ? "" : "s");
  // The description's first sentence: the rest (sources, rules) stays in the file and in --json.
  if (!r.file->description.empty()) {
    const std::string& d = r.file->description;
    // A sentence ends at ". " before a capital ("e.g. the" goes on).
    std::size_t end = d.find(". ");
    while (end != std::string::npos && !(end + 2 < d.size() && std::isupper(static_cast<unsigned char>(d[end + 2])))) {
      end = d.find(". ", end + 1);
    }
    const bool more = end != std::string::npos && d.find_first_not_of(' ', end + 1) != std::string::npos;
    out += wrapped(more ? d.substr(0, end + 1) + " (more in the file's description)" : d, 98, "  ");
  }
  out += "\n";

  // The table: one row per measurement.
  std::size_t case_width = 4, metric_width = 6;
  for (const Row& row : r.rows) {
    case_width = std::max(case_width, row.case_id.size());
    metric_width = std::max(metric_width, name(row.metric).size());
  }
  out += fmt::format("  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>8}\n", "case", case_width, "metric", metric_width,
                     "measured", "predicted", "error");
  std::size_t next = 0;  // compare() lists the rows case by case
  for (const CaseResult& c : r.cases) {
    for (std::size_t k = 0; k < c.spec->measured.size(); ++k) {
      const Row& row = r.rows.at(next++);
      // A measured run fitted; a prediction that does not is worth seeing on every row.
      out += fmt::format("  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>+7.1f}%{}\n", row.case_id, case_width,
                         name(row.metric), metric_width, show_value(row.measured), show_value(row.predicted),
                         row.error_pct, c.prediction.oom ? "  (out of memory)" : "");
    }
  }
  out += "\n";

  // One first column for every table, wide enough for the titles and every group.
  std::size_t width = 0;
  for (const Mape* m : {&r.performance, &r.memory, &r.layer_time}) {
    width = std::max(width, mape_title(m->kind).size());
    for (const GroupMape& g : m->groups) width = std::max(width, g.group.size() + 2);
  }
  mape_text(out, r.performance, width);
  mape_text(out, r.memory, width);
  mape_text(out, r.layer_time, width);

  if (!r.orderings.empty()) {
    const std::size_t skipped = r.orderings.size() - r.orderings_passed - r.orderings_failed;
    out += fmt::format("\norderings: {} pass, {} fail{}\n", r.orderings_passed, r.orderings_failed,
                       skipped ? fmt::format(", {} skipped", skipped) : "");
    for (const OrderingResult& o : r.orderings) {
      const Ordering& spec = *o.ordering;
      const char* status = o.status == OrderingResult::Status::kPass   ? "PASS"
                           : o.status == OrderingResult::Status::kFail ? "FAIL"
                                                                       : "SKIP";
      out += fmt::format("  {}  {}{}\n", status, spec.name, spec.source.empty() ? "" : " [" + spec.source + "]");
      std::string detail;
      if (o.status == OrderingResult::Status::kSkipped) {
        detail = "a case it compares is not selected";
      } else if (spec.ratio) {
        detail = fmt::format("{}: {} / {} = {}, {}", name(spec.metric), spec.ratio->numerator,
                             spec.ratio->denominator, show_value(o.ratio), expected_range(*spec.ratio));
      } else {
        detail = fmt::format("{} increasing: ", name(spec.metric));
        for (std::size_t k = 0; k < spec.increasing.size(); ++k) {
          if (k > 0) detail += o.predicted[k - 1] < o.predicted[k] ? " < " : " >= ";
          detail += fmt::format("{} {}", spec.increasing[k], show_value(o.predicted[k]));
        }
      }
      out += fmt::format("        {}\n", detail);
    }
  }

  if (verbose) {
    out += "\ncases\n";
    for (const CaseResult& c : r.cases) {
      const Case& s = *c.spec;
      out += fmt::format("  {}  [{}; {}] {} GPUs, {} fidelity\n", s.id, s.group, s.source, c.prediction.gpus,
                         c.prediction.fidelity);
      if (!s.config_file.empty()) out += fmt::format("    config: {}\n", s.config_file);
      for (const std::string& set : s.set) out += fmt::format("    --set {}\n", set);
      for (const auto& [key, why] : s.assumptions) out += fmt::format("    assumed {}: {}\n", key, why);
      if (!s.notes.empty()) out += fmt::format("    notes: {}\n", s.notes);
    }
  }
  return out;
}

json to_json(const Result& r) {
  json cases = json::array();
  for (const CaseResult& c : r.cases) {
    const Case& s = *c.spec;
    json predicted = json::object();
    for (Metric m : all_metrics()) predicted[std::string(name(m))] = at(c.prediction.values, m);
    json measured = json::object();
    for (const auto& [m, v] : s.measured) measured[std::string(name(m))] = v;
    json assumptions = json::object();
    for (const auto& [key, why] : s.assumptions) assumptions[key] = why;
    cases.push_back({{"id", s.id},
                     {"group", s.group},
                     {"source", s.source},
                     {"config", s.config_file.empty() ? json(nullptr) : json(s.config_file)},
                     {"set", s.set},
                     {"assumptions", assumptions},
                     {"notes", s.notes},
                     {"gpus", c.prediction.gpus},
                     {"fidelity", c.prediction.fidelity},
                     {"oom", c.prediction.oom},
                     {"measured", measured},
                     {"predicted", predicted}});
  }
  json rows = json::array();
  for (const Row& row : r.rows) {
    rows.push_back({{"case", row.case_id},
                    {"group", row.group},
                    {"metric", name(row.metric)},
                    {"kind", kind_name(kind(row.metric))},
                    {"measured", row.measured},
                    {"predicted", row.predicted},
                    {"error_pct", row.error_pct}});
  }
  json orderings = json::array();
  for (const OrderingResult& o : r.orderings) {
    const Ordering& spec = *o.ordering;
    json j = {{"name", spec.name},
              {"metric", name(spec.metric)},
              {"source", spec.source},
              {"status", status_name(o.status)},
              {"cases", spec.case_ids()},
              {"predicted", o.predicted}};
    if (spec.ratio) {
      j["kind"] = "ratio";
      j["ratio"] = o.status == OrderingResult::Status::kSkipped ? json(nullptr) : json(o.ratio);
      j["min"] = spec.ratio->min ? json(*spec.ratio->min) : json(nullptr);
      j["max"] = spec.ratio->max ? json(*spec.ratio->max) : json(nullptr);
    } else {
      j["kind"] = "increasing";
    }
    orderings.push_back(j);
  }
  return {{"file", r.file->path},
          {"description", r.file->description},
          {"cases", cases},
          {"rows", rows},
          {"mape",
           {{"performance", mape_json(r.performance)},
            {"memory", mape_json(r.memory)},
            {"layer_time", mape_json(r.layer_time)}}},
          {"orderings", orderings},
          {"orderings_passed", r.orderings_passed},
          {"orderings_failed", r.orderings_failed}};
}

}  // namespace trainsim::validate
