// `parallel.schedule: "csv:PATH"`: a schedule read from a CSV file and
// checked against the plan's shape.
#include "config/sections.hpp"

#include <filesystem>

#include "schedule/csv.hpp"

namespace trainsim::config::detail {

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

}  // namespace trainsim::config::detail
