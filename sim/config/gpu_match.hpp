// Which GPU a calibration profile was measured on, against the GPUs the
// simulator knows: a profile's header.gpu_name is the driver's device name
// ("NVIDIA H200"), a GPU preset's or config's name is ours ("H200-SXM-141GB").
// run, sweep, validate and calibration-report decide by the same rule.
#pragma once

#include <string>

namespace trainsim::config {

// Whether the device `device` is the GPU named `gpu_name`: the same name (case
// aside, with or without "NVIDIA "), or the name's model, its first word
// holding a digit ("H200" of "H200-SXM-141GB"), is a word of the device name.
bool same_gpu(const std::string& device, const std::string& gpu_name);

// The one GPU preset `device` is, by same_gpu; of several, the one sharing
// the most words with the device name; empty if none, or if several tie.
std::string gpu_preset_for(const std::string& device);

}  // namespace trainsim::config
