// Reading a calibration profile (the JSON tools/calibrate writes). Every
// value is checked; a problem is a ConfigError whose one-line message names
// the profile's file and the JSON path, e.g.
//   profile.json: gemm.bf16.tflops[3][2][1]: expected a positive number, got -1
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "config/error.hpp"
#include "hw/calibration_profile.hpp"

namespace trainsim::config {

// The schema version this simulator reads; a profile of another is refused.
inline constexpr int kCalibrationSchemaVersion = 1;

std::shared_ptr<const hw::CalibrationProfile> load_calibration_profile(const std::string& path);

// The same for a document in memory; `file` names it in messages.
std::shared_ptr<const hw::CalibrationProfile> read_calibration_profile(const nlohmann::json& doc,
                                                                       const std::string& file);

// The node as simulated with `profile`: the profile attached to its GPU
// (GEMM throughput), and the scalars it measured in place of the preset's:
// HBM streaming bandwidth, kernel launch overhead, NVLink point-to-point
// bandwidth and latency (when two GPUs were measured) and NCCL's bus
// bandwidth inside a node (when NCCL ran over the node's GPU count).
hw::NodeSpec calibrated(hw::NodeSpec node, std::shared_ptr<const hw::CalibrationProfile> profile);

}  // namespace trainsim::config
