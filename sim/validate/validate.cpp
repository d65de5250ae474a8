#include "validate/validate.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "schedule/check.hpp"

namespace trainsim::validate {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string case_path(const Case& c) { return fmt::format("cases[{}]", c.index); }
std::string case_tag(const Case& c) { return fmt::format(" (case \"{}\")", c.id); }

// The config loader names the document it was given (`origin`: the case file
// for an inline config, else the config's own file) and a path inside it.
// Rewrite that as a path inside the case file, so the message leads to the
// place to fix: cases[3].config.parallel.tp, cases[3].set[1], or the case's
// config file.
std::string relabel(const std::string& message, const CaseFile& f, const Case& c, const std::string& origin) {
  const std::string at = case_path(c);
  const std::string head = origin + ": ";
  if (starts_with(message, head)) {
    const std::string rest = message.substr(head.size());
    if (starts_with(rest, "--set ")) {
      for (std::size_t k = 0; k < c.set.size(); ++k) {
        if (starts_with(rest, "--set " + c.set[k] + ":")) {
          return fmt::format("{}: {}.set[{}]: {}{}", f.path, at, k, rest, case_tag(c));
        }
      }
      return fmt::format("{}: {}.set: {}{}", f.path, at, rest, case_tag(c));
    }
    if (c.config_file.empty()) {
      const std::string top = "(top level): ";
      if (starts_with(rest, top)) {
        return fmt::format("{}: {}.config: {}{}", f.path, at, rest.substr(top.size()), case_tag(c));
      }
      return fmt::format("{}: {}.config.{}{}", f.path, at, rest, case_tag(c));
    }
  }
  return fmt::format("{}: {}.config: {}{}", f.path, at, message, case_tag(c));
}

config::Scenario load_case(const CaseFile& f, const Case& c) {
  const std::string origin = c.config_file.empty() ? f.path : c.config_file;
  try {
    if (c.config_file.empty()) return config::load_document(c.config, f.path, f.base_dir, c.set);
    return config::load_file(c.config_file, c.set);
  } catch (const std::exception& e) {
    throw config::ConfigError(relabel(e.what(), f, c, origin));
  }
}

[[noreturn]] void fail_simulation(const CaseFile& f, const Case& c, const std::string& what) {
  throw config::ConfigError(fmt::format("{}: {}.config: {}{}", f.path, case_path(c), what, case_tag(c)));
}

}  // namespace

std::vector<std::size_t> select_cases(const CaseFile& file, const std::string& glob) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < file.cases.size(); ++i) {
    if (glob.empty() || fnmatch(glob.c_str(), file.cases[i].id.c_str(), 0) == 0) out.push_back(i);
  }
  return out;
}

std::vector<Prediction> predict(const CaseFile& file, const std::vector<std::size_t>& selected,
                                const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<config::Scenario> scenarios;
  scenarios.reserve(selected.size());
  for (std::size_t i : selected) {
    const Case& c = file.cases.at(i);
    scenarios.push_back(load_case(file, c));
    // A layer-table model (a CNN) has no transformer layer: nothing predicts its one-layer times.
    for (const auto& [metric, value] : c.measured) {
      if (scenarios.back().layer_model && kind(metric) == MetricKind::kLayerTime) {
        throw config::ConfigError(fmt::format("{}: {}.measured.{}: a layer-table model has no transformer layer "
                                              "to time{}",
                                              file.path, case_path(c), name(metric), case_tag(c)));
      }
    }
  }
  if (progress) progress(0, selected.size());

  std::vector<Prediction> out;
  out.reserve(selected.size());
  for (std::size_t k = 0; k < selected.size(); ++k) {
    const Case& c = file.cases[selected[k]];
    const config::Scenario& sc = scenarios[k];
    driver::WhatIf whatif;
    // The same messages as `trainsim run`, placed in the case file.
    try {
      whatif = driver::simulate(sc);
    } catch (const schedule::ProgramError& e) {
      fail_simulation(file, c, fmt::format("schedule \"{}\" cannot run this plan: {}", sc.plan.schedule, e.what()));
    } catch (const std::invalid_argument& e) {
      fail_simulation(file, c, e.what());
    } catch (const std::exception& e) {
      fail_simulation(file, c, fmt::format("cannot simulate this plan: {}", e.what()));
    }
    const std::string label = c.config_file.empty() ? case_path(c) + ".config" : c.config_file;
    const report::Summary s = driver::summarize(sc, whatif, label);
    Prediction p;
    p.values = metric_values(s);
    p.gpus = s.info.gpus;
    p.oom = s.oom;
    p.fidelity = s.fidelity;
    out.push_back(std::move(p));
    if (progress) progress(k + 1, selected.size());
  }
  return out;
}

namespace {

Mape mape_of(MetricKind kind, const std::vector<Row>& rows) {
  Mape m;
  m.kind = kind;
  std::vector<double> sums;  // |error| summed per group, beside m.groups
  double total = 0.0;
  for (const Row& r : rows) {
    if (validate::kind(r.metric) != kind) continue;
    const double a = std::abs(r.error_pct);
    std::size_t g = 0;
    while (g < m.groups.size() && m.groups[g].group != r.group) ++g;
    if (g == m.groups.size()) {
      m.groups.push_back({r.group, 0, 0.0});
      sums.push_back(0.0);
    }
    ++m.groups[g].rows;
    sums[g] += a;
    ++m.rows;
    total += a;
    if (!m.worst || a > std::abs(m.worst->error_pct)) m.worst = r;
  }
  for (std::size_t g = 0; g < m.groups.size(); ++g) m.groups[g].mape_pct = sums[g] / m.groups[g].rows;
  m.overall_pct = m.rows > 0 ? total / m.rows : 0.0;
  return m;
}

}  // namespace

Result compare(const CaseFile& file, const std::vector<std::size_t>& selected,
               const std::vector<Prediction>& predictions) {
  if (predictions.size() != selected.size()) {
    throw std::invalid_argument("validate::compare: one prediction per selected case is needed");
  }
  Result res;
  res.file = &file;
  std::map<std::string, std::size_t> by_id;  // case id -> position in res.cases
  for (std::size_t k = 0; k < selected.size(); ++k) {
    const Case& c = file.cases.at(selected[k]);
    res.cases.push_back({&c, predictions[k]});
    by_id[c.id] = k;
    for (const auto& [metric, measured] : c.measured) {
      Row r;
      r.case_id = c.id;
      r.group = c.group;
      r.metric = metric;
      r.measured = measured;
      r.predicted = at(predictions[k].values, metric);
      r.error_pct = 100.0 * (r.predicted - r.measured) / r.measured;
      res.rows.push_back(r);
    }
  }
  res.performance = mape_of(MetricKind::kPerformance, res.rows);
  res.memory = mape_of(MetricKind::kMemory, res.rows);
  res.layer_time = mape_of(MetricKind::kLayerTime, res.rows);

  for (const Ordering& o : file.orderings) {
    OrderingResult out;
    out.ordering = &o;
    bool all_selected = true;
    for (const std::string& id : o.case_ids()) {
      const auto it = by_id.find(id);
      if (it == by_id.end()) {
        all_selected = false;
        break;
      }
      out.predicted.push_back(at(res.cases[it->second].prediction.values, o.metric));
    }
    if (all_selected) {
      bool pass = true;
      if (o.ratio) {
        const double den = out.predicted[1];
        out.ratio = den > 0.0 ? out.predicted[0] / den : 0.0;
        pass = den > 0.0 && (!o.ratio->min || out.ratio >= *o.ratio->min) &&
               (!o.ratio->max || out.ratio <= *o.ratio->max);
      } else {
        for (std::size_t k = 0; k + 1 < out.predicted.size(); ++k) {
          pass = pass && out.predicted[k] < out.predicted[k + 1];
        }
      }
      out.status = pass ? OrderingResult::Status::kPass : OrderingResult::Status::kFail;
      ++(pass ? res.orderings_passed : res.orderings_failed);
    } else {
      out.predicted.clear();
    }
    res.orderings.push_back(std::move(out));
  }
  return res;
}

}  // namespace trainsim::validate
