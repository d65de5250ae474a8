// `import trainsim`: the simulator from Python. Each function does what its
// command does and returns what that command's --json prints, as Python
// objects; a config, sweep or case file is a path or the same JSON as a dict.
// Errors raise the exception of the command's exit status with the
// command's one-line message: ConfigError (2), ScheduleError (3),
// OutputError (5), SimulationError (6).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/load.hpp"
#include "config/presets.hpp"
#include "driver/whatif.hpp"
#include "report/chrome_trace.hpp"
#include "report/layer_ops.hpp"
#include "report/output_file.hpp"
#include "report/summary.hpp"
#include "report/svg.hpp"
#include "schedule/check.hpp"
#include "sweep/report.hpp"
#include "sweep/runner.hpp"
#include "sweep/space.hpp"
#include "sweep/spec.hpp"
#include "validate/output.hpp"
#include "validate/validate.hpp"

namespace py = pybind11;
using namespace trainsim;

namespace {

// Errors by the command's exit status (set in PYBIND11_MODULE).
struct Raised {
  explicit Raised(std::string m) : message(std::move(m)) {}
  std::string message;
};
struct ScheduleError : Raised {
  using Raised::Raised;
};
struct OutputError : Raised {
  using Raised::Raised;
};
struct SimulationError : Raised {
  using Raised::Raised;
};

// Between JSON and Python objects, through Python's own json module.
py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}
// `where` names the value for the error a value JSON cannot hold raises
// (NaN, infinity, an object json cannot write).
nlohmann::json from_python(const py::handle& o, const std::string& where) {
  std::string text;
  try {
    text = py::cast<std::string>(py::module_::import("json").attr("dumps")(o, py::arg("allow_nan") = false));
  } catch (const py::error_already_set&) {
    throw config::ConfigError(where + ": expected a JSON value (a finite number, a string, a bool, a list or a "
                              "dict of them), got " + py::cast<std::string>(py::repr(o)));
  }
  return nlohmann::json::parse(text);
}

// A file's path, or a dict read as its JSON would be (relative paths in it
// resolve against the working directory).
struct Source {
  std::optional<std::string> path;
  nlohmann::json doc;
  std::string label() const { return path ? *path : "<dict>"; }
};
Source source_of(const py::object& o, const char* what) {
  if (py::isinstance<py::str>(o)) return {py::cast<std::string>(o), {}};
  if (py::isinstance<py::dict>(o)) return {std::nullopt, from_python(o, std::string("<dict> (") + what + ")")};
  throw py::type_error(std::string(what) + ": expected a path (str) or a dict");
}

// `set={"parallel.tp": 4}` as --set's "parallel.tp=4" (strings as written, other values as JSON).
std::vector<std::string> overrides_of(const py::object& set) {
  std::vector<std::string> out;
  if (set.is_none()) return out;
  for (const auto& [k, v] : py::cast<py::dict>(set)) {
    const std::string key = py::cast<std::string>(k);
    out.push_back(key + "=" + (py::isinstance<py::str>(v) ? py::cast<std::string>(v) : from_python(v, "set[\"" + key + "\"]").dump()));
  }
  return out;
}

py::object run_config(const py::object& config, const py::object& set, const std::optional<std::string>& trace,
               const std::optional<std::string>& svg, bool ops) {
  const Source src = source_of(config, "config");
  const std::vector<std::string> overrides = overrides_of(set);
  const config::Scenario sc = src.path ? config::load_file(*src.path, overrides)
                                       : config::load_document(src.doc, "<dict>", std::filesystem::current_path().string(),
                                                               overrides);
  if (ops && sc.layer_model) {
    throw config::ConfigError("ops: " + sc.file + " models a layer table (measured times per layer), which has no "
                              "ops to break down; expected a transformer model");
  }
  driver::Controls controls;
  controls.record_link_rates = trace.has_value();
  controls.layer_ops = ops;
  driver::WhatIf w;
  try {
    w = driver::simulate(sc, controls);
  } catch (const schedule::ProgramError& e) {
    throw ScheduleError(sc.file + ": schedule \"" + sc.plan.schedule + "\" cannot run this plan: " + e.what() +
                        config::changed_by_sets(overrides));
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(sc.file + ": " + e.what());
  } catch (const config::ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw SimulationError(sc.file + ": cannot simulate this plan: " + e.what() + config::changed_by_sets(overrides));
  }
  const report::Summary summary = driver::summarize(sc, w, src.label());
  if (trace) {
    if (const std::string why = report::write_output_file(*trace, report::chrome_trace(*w.sim, sc.cluster)); !why.empty()) {
      throw OutputError("cannot write trace to " + *trace + ": " + why);
    }
  }
  if (svg) {
    if (const std::string why = report::write_output_file(*svg, report::schedule_svg(*w.sim, summary)); !why.empty()) {
      throw OutputError("cannot write SVG to " + *svg + ": " + why);
    }
  }
  nlohmann::json out = report::to_json(summary);
  if (ops) out["layer_ops"] = report::layer_ops_json(*w.costs);
  return to_python(out);
}

py::object run_sweep(const py::object& file, int jobs, const std::optional<int>& top) {
  const Source src = source_of(file, "sweep");
  const sweep::Spec spec = src.path ? sweep::load_spec(*src.path)
                                    : sweep::parse_spec(src.doc, "<dict>", std::filesystem::current_path().string());
  sweep::Space space = sweep::enumerate(spec);
  sweep::RunOptions options;
  options.jobs = std::max(1, jobs);
  if (top) options.prune_top = std::max(1, *top);
  const std::size_t valid = space.plans.size();
  sweep::Outcome outcome;
  {
    py::gil_scoped_release free;  // the plans run on threads of their own
    outcome = sweep::run(spec, space.plans, options);
  }
  sweep::Report report;
  report.sweep = src.label();
  report.sweep_hash = spec.fingerprint;
  report.combinations = space.combinations;
  report.valid_plans = static_cast<long long>(valid);
  report.invalid = space.invalid;
  report.pruned = static_cast<long long>(outcome.pruned);
  report.not_run = static_cast<long long>(outcome.not_run);
  report.results = std::move(outcome.results);
  nlohmann::json results = sweep::to_json(report)["results"];
  if (top && results.size() > static_cast<std::size_t>(*top)) results.erase(results.begin() + *top, results.end());
  return to_python(results);
}

py::object run_validation(const py::object& cases) {
  const Source src = source_of(cases, "cases");
  const validate::CaseFile file = src.path ? validate::load_cases(*src.path)
                                           : validate::parse_cases(src.doc, "<dict>",
                                                                   std::filesystem::current_path().string());
  const std::vector<std::size_t> selected = validate::select_cases(file, "*");
  const std::vector<validate::Prediction> predictions = validate::predict(file, selected, nullptr);
  return to_python(validate::to_json(validate::compare(file, selected, predictions)));
}

py::dict presets() {
  py::dict out;
  for (const char* kind : {"gpu", "node", "network", "model"}) out[kind] = config::preset_names(kind);
  return out;
}

}  // namespace

PYBIND11_MODULE(trainsim, m) {
  spdlog::set_level(spdlog::level::warn);  // as the command line's default: warnings, not progress
  m.doc() = "trainsim: simulate distributed training of a transformer on a GPU cluster. run() simulates a config, "
            "sweep() ranks the plans of a sweep file, validate() sets a case file's predictions beside their "
            "measurements; each returns what the command's --json prints.";
  static py::exception<config::ConfigError> config_error(m, "ConfigError");
  static py::exception<ScheduleError> schedule_error(m, "ScheduleError");
  static py::exception<OutputError> output_error(m, "OutputError");
  static py::exception<SimulationError> simulation_error(m, "SimulationError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config::ConfigError& e) {
      config_error(e.what());
    } catch (const ScheduleError& e) {
      schedule_error(e.message.c_str());
    } catch (const OutputError& e) {
      output_error(e.message.c_str());
    } catch (const SimulationError& e) {
      simulation_error(e.message.c_str());
    }
  });
  m.def("run", &run_config, py::arg("config"), py::arg("set") = py::none(), py::arg("trace") = py::none(),
        py::arg("svg") = py::none(), py::arg("ops") = false,
        "Simulate one iteration of a config (a path, or a dict of the same JSON); set: {\"key.path\": value} as "
        "--set; trace, svg: files to write; ops: also break one layer down op by op (the key layer_ops). Returns "
        "the summary `trainsim run --json` prints (with --ops when ops is true).");
  m.def("sweep", &run_sweep, py::arg("sweep"), py::arg("jobs") = 2, py::arg("top") = py::none(),
        "Simulate every valid plan of a sweep file (a path or a dict) on `jobs` threads; top: keep the best K "
        "(pruning the rest). Returns the ranked results, one dict a plan (pandas.DataFrame(...) takes them).");
  m.def("validate", &run_validation, py::arg("cases"),
        "Run a validation case file (a path or a dict): what `trainsim validate --json` prints.");
  m.def("presets", &presets, "The built-in presets' names by kind: gpu, node, network, model.");
}
