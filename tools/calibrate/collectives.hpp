// NCCL all-reduce, all-gather and reduce-scatter over every visible GPU (one
// process driving them all), by size: time and bus bandwidth as nccl-tests
// defines it; and send/recv from GPU 0 to GPU 1, by size, in GB/s. Built only when NCCL is found (TRAINSIM_CALIBRATE_NCCL); without
// it, or with one GPU, the profile says why NCCL was not measured.
#pragma once

#include <nlohmann/json.hpp>

#include "memory.hpp"

namespace calibrate {

nlohmann::json measure_nccl(const Sweep& sizes, const Settings& s, int gpus);
// "2.27.7", or "not built with NCCL".
std::string nccl_version();

}  // namespace calibrate
