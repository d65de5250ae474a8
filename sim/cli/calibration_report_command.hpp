// `trainsim calibration-report PROFILE`: a calibration profile's figures
// against the presets the simulator uses without it.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct CalibrationReportArgs {
  std::string profile;
  std::string gpu;   // GPU preset; empty: matched by the profile's GPU name
  std::string node;  // node preset; empty: the first whose GPU is that preset
};

CLI::App* add_calibration_report_command(CLI::App& app, CalibrationReportArgs& args);
int calibration_report_command(const CalibrationReportArgs& args);

}  // namespace trainsim::cli
