// The calibration profile's JSON, piece by piece (schema version 1; docs/calibration.md,
// "Calibration", lists every key). The measuring code hands its figures to
// these functions, so the format lives in one place, and tests check that
// what they write is what trainsim reads, without a GPU.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stats.hpp"

namespace calibrate {

inline constexpr int kSchemaVersion = 1;  // sim/config/calibration_load.hpp reads this version

struct DeviceInfo {
  std::string gpu_name;
  int gpu_count = 0;
  std::string compute_capability;
  int sm_count = 0;
  double sm_clock_mhz = 0.0;
  double memory_clock_mhz = 0.0;
  double memory_gib = 0.0;
  double l2_mib = 0.0;
  std::string driver_version, runtime_version, cublas_version, nccl_version;
  std::string date;  // UTC, ISO 8601
  bool quick = false;
  int warmup = 0;
  int samples = 0;
  std::string note;  // empty: none
};

// {"schema_version", "header"}; the sections are added to it.
nlohmann::json profile_json(const DeviceInfo& device);

// A GEMM grid over the same axis for m, n and k; `cells` in TFLOP/s,
// [i_m][i_n][i_k] order (k fastest).
nlohmann::json grid_json(const std::vector<int>& axis, const std::vector<Stat>& cells);

nlohmann::json model_gemm_json(const std::string& model, const std::string& op, int tp, int m, int n, int k,
                               const Stat& tflops);

// `work` is the FLOPs of forward + backward as FlashAttention-2 counts causal
// work; the TFLOP/s are work over forward + backward time.
nlohmann::json attention_point_json(int batch, int heads, int seq, int head_dim, const Stat& forward_ms,
                                    const Stat& backward_ms, double work);
nlohmann::json attention_json(const nlohmann::json& points);

// {"bytes", <key>: stat}: HBM ("tb_per_s") and copies ("gb_per_s").
nlohmann::json size_point_json(double bytes, const char* key, const Stat& rate);

nlohmann::json launch_json(const Stat& plain_us, const Stat& graph_us);

nlohmann::json p2p_json(const Stat& latency_us, const nlohmann::json& points);
nlohmann::json collective_point_json(double bytes, const Stat& time_us, const Stat& bus_gb_per_s);

// gemm.sustained: m = n = k = `size` BF16 GEMMs for `seconds` each run; the
// best window (short-run), the settled throughput back to back (burn) and
// with GEMMs `duty_share` of the time (duty), TFLOP/s.
nlohmann::json sustained_json(int size, double seconds, double short_run, double burn, double duty_share, double duty);

// A section that was not measured, and why (p2p, nccl).
nlohmann::json not_measured(const std::string& reason);

}  // namespace calibrate
