// The optimizer step on the host, as ZeRO-Offload runs it (DeepSpeed's CPU
// Adam): AdamW over FP32 parameters, gradients and both moments, on one
// thread, in parameters a second. The simulator caps an offloaded step at
// the cores a GPU's process has times this rate, besides the host's DRAM
// bandwidth (docs/calibration.md). Plain C++, no CUDA, so that tests run it.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace calibrate {

// {"adam_params_per_s": {median, min, max}, "threads": 1, "params": n}: `samples`
// timed steps over `params` parameters after one untimed step.
nlohmann::json measure_host_adam(std::size_t params, int samples);

}  // namespace calibrate
