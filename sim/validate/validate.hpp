// Validation: every case of a case file run through the same what-if as
// `trainsim run`, its predictions set against the measurements, and the
// errors averaged per group and overall (MAPE), performance, memory and layer
// times apart.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "validate/cases.hpp"
#include "validate/metric.hpp"

namespace trainsim::validate {

// What the simulator says about one case.
struct Prediction {
  MetricValues values{};
  int gpus = 0;
  bool oom = false;
  std::string fidelity;
};

// The indices of the cases whose id matches a shell glob (`*`, `?`, `[...]`),
// in file order; every case for an empty glob.
std::vector<std::size_t> select_cases(const CaseFile& file, const std::string& glob);

// Loads and simulates the given cases, in order. All configs are loaded
// before any is simulated, so a bad one fails fast. Throws config::ConfigError
// with a one-line message naming the case file, the JSON path and the case
// (e.g. `cases.json: cases[3].config.parallel.tp: ... (case "x")`).
// `progress(done, total)` is called once all are loaded (done = 0) and after
// each simulation.
std::vector<Prediction> predict(const CaseFile& file, const std::vector<std::size_t>& selected,
                                const std::function<void(std::size_t, std::size_t)>& progress = {});

// One measurement against its prediction.
struct Row {
  std::string case_id;
  std::string group;
  Metric metric = Metric::kIterationTime;
  double measured = 0.0;
  double predicted = 0.0;
  double error_pct = 0.0;  // signed: 100 (predicted - measured) / measured
};

struct GroupMape {
  std::string group;
  std::size_t rows = 0;
  double mape_pct = 0.0;  // mean of |error_pct| over the group's rows
};

// The mean absolute percentage error of one kind of metric.
struct Mape {
  MetricKind kind = MetricKind::kPerformance;
  std::vector<GroupMape> groups;  // in order of first appearance in the file
  std::size_t rows = 0;
  double overall_pct = 0.0;  // mean over all rows of this kind (not over groups); 0 without rows
  std::optional<Row> worst;  // largest |error_pct|; the first such row on a tie
};

struct OrderingResult {
  enum class Status { kPass, kFail, kSkipped };
  const Ordering* ordering = nullptr;
  Status status = Status::kSkipped;  // skipped: a case it needs is not selected
  std::vector<double> predicted;     // along `increasing`, or numerator and denominator
  double ratio = 0.0;                // ratio checks: predicted numerator / denominator
};

struct CaseResult {
  const Case* spec = nullptr;
  Prediction prediction;
};

struct Result {
  const CaseFile* file = nullptr;
  std::vector<CaseResult> cases;  // the selected ones, in file order
  std::vector<Row> rows;          // case by case, metrics in all_metrics() order
  Mape performance{MetricKind::kPerformance, {}, 0, 0.0, std::nullopt};
  Mape memory{MetricKind::kMemory, {}, 0, 0.0, std::nullopt};
  Mape layer_time{MetricKind::kLayerTime, {}, 0, 0.0, std::nullopt};
  std::vector<OrderingResult> orderings;  // in file order
  std::size_t orderings_passed = 0, orderings_failed = 0;
};

// Compares predictions (one per selected case, as predict returns them) with
// the measurements and checks the orderings. Pure arithmetic: no simulation.
Result compare(const CaseFile& file, const std::vector<std::size_t>& selected,
               const std::vector<Prediction>& predictions);

}  // namespace trainsim::validate
