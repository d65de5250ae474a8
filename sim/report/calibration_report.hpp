// `trainsim calibration-report`: what a calibration profile measured set
// beside the preset the simulator would use without it, so that a user sees
// what calibration changes (GEMM efficiency by shape, attention, HBM, kernel
// launch, copies, collectives).
#pragma once

#include <string>

#include "hw/calibration_profile.hpp"
#include "hw/cluster_spec.hpp"

namespace trainsim::report {

struct CalibrationBaseline {
  std::string gpu_preset;   // e.g. "A100-SXM4-80GB"
  std::string how_matched;  // "matched by the GPU's name" or "--gpu"
  std::string node_preset;  // e.g. "dgx-a100"
  hw::NodeSpec node;        // the node preset with its GPU preset, uncalibrated
};

std::string calibration_report(const hw::CalibrationProfile& profile, const CalibrationBaseline& baseline);

}  // namespace trainsim::report
