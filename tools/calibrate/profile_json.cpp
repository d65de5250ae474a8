#include "profile_json.hpp"

namespace calibrate {

using nlohmann::json;

json profile_json(const DeviceInfo& d) {
  json h = {{"tool", "trainsim-calibrate"},
            {"gpu_name", d.gpu_name},
            {"gpu_count", d.gpu_count},
            {"compute_capability", d.compute_capability},
            {"sm_count", d.sm_count},
            {"sm_clock_mhz", d.sm_clock_mhz},
            {"memory_clock_mhz", d.memory_clock_mhz},
            {"memory_gib", d.memory_gib},
            {"l2_mib", d.l2_mib},
            {"driver_version", d.driver_version},
            {"runtime_version", d.runtime_version},
            {"cublas_version", d.cublas_version},
            {"nccl_version", d.nccl_version},
            {"date", d.date},
            {"mode", d.quick ? "quick" : "full"},
            {"warmup", d.warmup},
            {"samples", d.samples}};
  if (!d.note.empty()) h["note"] = d.note;
  return {{"schema_version", kSchemaVersion}, {"header", h}};
}

json grid_json(const std::vector<int>& axis, const std::vector<Stat>& cells) {
  const std::size_t n = axis.size();
  json med = json::array(), lo = json::array(), hi = json::array();
  for (std::size_t a = 0; a < n; ++a) {
    json ma = json::array(), la = json::array(), ha = json::array();
    for (std::size_t b = 0; b < n; ++b) {
      json mb = json::array(), lb = json::array(), hb = json::array();
      for (std::size_t c = 0; c < n; ++c) {
        const Stat& s = cells[(a * n + b) * n + c];
        mb.push_back(s.median);
        lb.push_back(s.min);
        hb.push_back(s.max);
      }
      ma.push_back(mb);
      la.push_back(lb);
      ha.push_back(hb);
    }
    med.push_back(ma);
    lo.push_back(la);
    hi.push_back(ha);
  }
  return {{"m", axis}, {"n", axis}, {"k", axis}, {"tflops", med}, {"tflops_min", lo}, {"tflops_max", hi}};
}

json model_gemm_json(const std::string& model, const std::string& op, int tp, int m, int n, int k, const Stat& tflops) {
  return {{"model", model}, {"op", op}, {"tp", tp}, {"m", m}, {"n", n}, {"k", k}, {"tflops", to_json(tflops)}};
}

json attention_point_json(int batch, int heads, int seq, int head_dim, const Stat& f, const Stat& b, double work) {
  const double tf = work / 1e9;  // FLOP per ms -> TFLOP/s
  return {{"batch", batch},
          {"heads", heads},
          {"seq", seq},
          {"head_dim", head_dim},
          {"forward_ms", to_json(f)},
          {"backward_ms", to_json(b)},
          {"tflops", to_json(Stat{tf / (f.median + b.median), tf / (f.max + b.max), tf / (f.min + b.min)})}};
}

json attention_json(const json& points) { return {{"kernel", "unfused"}, {"causal", true}, {"points", points}}; }

json size_point_json(double bytes, const char* key, const Stat& rate) { return {{"bytes", bytes}, {key, to_json(rate)}}; }

json launch_json(const Stat& plain_us, const Stat& graph_us) {
  return {{"plain_us", to_json(plain_us)}, {"graph_us", to_json(graph_us)}};
}

json p2p_json(const Stat& latency_us, const json& points) {
  return {{"measured", true}, {"latency_us", to_json(latency_us)}, {"points", points}};
}

json collective_point_json(double bytes, const Stat& time_us, const Stat& bus_gb_per_s) {
  return {{"bytes", bytes}, {"time_us", to_json(time_us)}, {"bus_gb_per_s", to_json(bus_gb_per_s)}};
}

json sustained_json(int size, double seconds, double short_run, double burn, double duty_share, double duty) {
  return {{"m", size},          {"n", size},           {"k", size},
          {"seconds", seconds}, {"short_run_tflops", short_run}, {"burn_tflops", burn},
          {"duty_gemm_share", duty_share}, {"duty_tflops", duty}};
}

json not_measured(const std::string& reason) { return {{"measured", false}, {"reason", reason}}; }

}  // namespace calibrate
