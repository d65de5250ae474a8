#include "config/calibration_load.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/load.hpp"
#include "config/reader.hpp"
#include "config/schema.hpp"

namespace trainsim::config {

namespace {

using nlohmann::json;

using detail::child;
using detail::show;
std::string item(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

// Reads values at JSON paths of one profile; every failure names the file
// and the path.
class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", file_, path.empty() ? "(top level)" : path, what));
  }

  // The object at `path`, with no keys but `keys`.
  const json& object(const json& v, const std::string& path, const std::vector<std::string>& keys) const {
    if (!v.is_object()) fail(path, "expected an object, got " + show(v));
    for (const auto& [key, value] : v.items()) {
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      fail(child(path, excerpt(key)), unknown_key_message(key, keys));
    }
    return v;
  }
  const json& field(const json& obj, const std::string& path, const std::string& key, std::string_view expected) const {
    if (!obj.contains(key)) fail(child(path, key), fmt::format("is missing (expected {})", expected));
    return obj[key];
  }
  const json& list(const json& obj, const std::string& path, const std::string& key) const {
    const json& v = field(obj, path, key, "a non-empty list");
    if (!v.is_array() || v.empty()) fail(child(path, key), "expected a non-empty list, got " + show(v));
    return v;
  }
  // A finite number > 0 (NaN is written as null, which fails here too).
  double positive(const json& v, const std::string& path) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0.0)) {
      fail(path, "expected a positive number, got " + show(v));
    }
    return v.get<double>();
  }
  double positive(const json& obj, const std::string& path, const std::string& key) const {
    return positive(field(obj, path, key, "a positive number"), child(path, key));
  }
  int count(const json& obj, const std::string& path, const std::string& key) const {
    const json& v = field(obj, path, key, "a positive integer");
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1'000'000'000) {
      fail(child(path, key), "expected a positive integer, got " + show(v));
    }
    return static_cast<int>(v.get<long long>());
  }
  std::string text(const json& obj, const std::string& path, const std::string& key) const {
    const json& v = field(obj, path, key, "a string");
    if (!v.is_string()) fail(child(path, key), "expected a string, got " + show(v));
    return v.get<std::string>();
  }
  std::string text_or(const json& obj, const std::string& path, const std::string& key) const {
    return obj.contains(key) ? text(obj, path, key) : std::string();
  }
  // {"median", "min", "max"}: positive, min <= median <= max.
  hw::Measured measured(const json& obj, const std::string& path, const std::string& key) const {
    const std::string at = child(path, key);
    const json& v = object(field(obj, path, key, "an object {\"median\", \"min\", \"max\"}"), at, {"median", "min", "max"});
    hw::Measured m{positive(v, at, "median"), positive(v, at, "min"), positive(v, at, "max")};
    if (!(m.min <= m.median && m.median <= m.max)) {
      fail(at, fmt::format("expected min <= median <= max, got {} / {} / {}", m.min, m.median, m.max));
    }
    return m;
  }
  // A list of positive numbers, strictly ascending.
  std::vector<double> axis(const json& obj, const std::string& path, const std::string& key) const {
    const json& v = list(obj, path, key);
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double x = positive(v[i], item(child(path, key), i));
      if (!out.empty() && !(x > out.back())) fail(item(child(path, key), i), "sizes must ascend");
      out.push_back(x);
    }
    return out;
  }
  // A table of dims[0] x dims[1] x dims[2] positive numbers, flattened.
  std::vector<double> table(const json& obj, const std::string& path, const std::string& key,
                            const std::vector<std::pair<std::size_t, const char*>>& dims) const {
    std::vector<double> out;
    fill(field(obj, path, key, "a table"), child(path, key), dims, 0, out);
    return out;
  }
  // A list of {"bytes", <rate>} points, bytes ascending.
  std::vector<hw::SizePoint> sizes(const json& obj, const std::string& path, const std::string& key,
                                   const std::string& rate) const {
    const json& v = list(obj, path, key);
    std::vector<hw::SizePoint> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = item(child(path, key), i);
      const json& p = object(v[i], at, {"bytes", rate});
      hw::SizePoint s{positive(p, at, "bytes"), measured(p, at, rate)};
      if (!out.empty() && !(s.bytes > out.back().bytes)) fail(child(at, "bytes"), "sizes must ascend");
      out.push_back(s);
    }
    return out;
  }

 private:
  void fill(const json& v, const std::string& path, const std::vector<std::pair<std::size_t, const char*>>& dims,
            std::size_t d, std::vector<double>& out) const {
    if (d == dims.size()) {
      out.push_back(positive(v, path));
      return;
    }
    const auto [size, axis] = dims[d];
    if (!v.is_array() || v.size() != size) {
      // A table whose shape differs from its axes has a hole (or a stray value).
      fail(path, fmt::format("expected a list of {} entries, one per value of {}, got {}", size, axis,
                             v.is_array() ? fmt::format("{} entries", v.size()) : show(v)));
    }
    for (std::size_t i = 0; i < size; ++i) fill(v[i], item(path, i), dims, d + 1, out);
  }

  std::string file_;
};

hw::CalibrationHeader read_header(const ProfileReader& r, const json& doc) {
  const std::string p = "header";
  const json& h = r.object(r.field(doc, "", p, "an object"), p,
                           {"tool", "note", "gpu_name", "gpu_count", "compute_capability", "sm_count", "sm_clock_mhz",
                            "memory_clock_mhz", "memory_gib", "l2_mib", "driver_version", "runtime_version",
                            "cublas_version", "nccl_version", "date", "mode", "warmup", "samples"});
  hw::CalibrationHeader out;
  out.tool = r.text(h, p, "tool");
  out.note = r.text_or(h, p, "note");
  out.gpu_name = r.text(h, p, "gpu_name");
  out.gpu_count = r.count(h, p, "gpu_count");
  out.compute_capability = r.text(h, p, "compute_capability");
  out.sm_count = r.count(h, p, "sm_count");
  out.sm_clock_mhz = r.positive(h, p, "sm_clock_mhz");
  out.memory_clock_mhz = r.positive(h, p, "memory_clock_mhz");
  out.memory_gib = r.positive(h, p, "memory_gib");
  out.l2_mib = r.positive(h, p, "l2_mib");
  out.driver_version = r.text(h, p, "driver_version");
  out.runtime_version = r.text(h, p, "runtime_version");
  out.cublas_version = r.text(h, p, "cublas_version");
  out.nccl_version = r.text(h, p, "nccl_version");
  out.date = r.text(h, p, "date");
  out.mode = r.text(h, p, "mode");
  if (out.mode != "full" && out.mode != "quick") r.fail(child(p, "mode"), "expected \"full\" or \"quick\", got " + show(json(out.mode)));
  out.warmup = r.count(h, p, "warmup");
  out.samples = r.count(h, p, "samples");
  return out;
}

hw::GemmGrid read_grid(const ProfileReader& r, const json& gemm, const std::string& dtype) {
  const std::string p = child("gemm", dtype);
  const json& g = r.object(gemm[dtype], p, {"m", "n", "k", "tflops", "tflops_min", "tflops_max"});
  hw::GemmGrid out;
  out.m = r.axis(g, p, "m");
  out.n = r.axis(g, p, "n");
  out.k = r.axis(g, p, "k");
  const std::vector<std::pair<std::size_t, const char*>> dims = {{out.m.size(), "m"}, {out.n.size(), "n"}, {out.k.size(), "k"}};
  out.tflops = r.table(g, p, "tflops", dims);
  out.tflops_min = r.table(g, p, "tflops_min", dims);
  out.tflops_max = r.table(g, p, "tflops_max", dims);
  for (std::size_t i = 0; i < out.tflops.size(); ++i) {
    if (!(out.tflops_min[i] <= out.tflops[i] && out.tflops[i] <= out.tflops_max[i])) {
      const std::size_t ik = i % out.k.size(), in = i / out.k.size() % out.n.size(), im = i / out.k.size() / out.n.size();
      r.fail(fmt::format("{}.tflops[{}][{}][{}]", p, im, in, ik),
             fmt::format("expected tflops_min <= tflops <= tflops_max, got {} / {} / {}", out.tflops_min[i],
                         out.tflops[i], out.tflops_max[i]));
    }
  }
  return out;
}

void read_gemm(const ProfileReader& r, const json& doc, hw::CalibrationProfile& out) {
  const json& g =
      r.object(r.field(doc, "", "gemm", "an object"), "gemm", {"bf16", "fp16", "fp8", "model_shapes", "sustained"});
  r.field(g, "gemm", "bf16", "the BF16 grid");
  out.gemm_bf16 = read_grid(r, g, "bf16");
  if (g.contains("fp16")) out.gemm_fp16 = read_grid(r, g, "fp16");
  if (g.contains("fp8")) out.gemm_fp8 = read_grid(r, g, "fp8");
  if (g.contains("sustained")) {
    const std::string p = "gemm.sustained";
    const json& v = r.object(g["sustained"], p,
                             {"m", "n", "k", "seconds", "short_run_tflops", "burn_tflops", "duty_gemm_share", "duty_tflops"});
    hw::SustainedGemm su;
    su.size = r.positive(v, p, "m");
    for (const char* side : {"n", "k"}) {
      if (r.positive(v, p, side) != su.size) r.fail(child(p, side), "expected m = n = k (one square GEMM is burnt)");
    }
    su.seconds = r.positive(v, p, "seconds");
    su.short_run_tflops = r.positive(v, p, "short_run_tflops");
    su.burn_tflops = r.positive(v, p, "burn_tflops");
    su.duty_gemm_share = r.positive(v, p, "duty_gemm_share");
    if (su.duty_gemm_share > 1.0) r.fail(child(p, "duty_gemm_share"), "expected a share of the time, at most 1, got " + show(v["duty_gemm_share"]));
    su.duty_tflops = r.positive(v, p, "duty_tflops");
    out.gemm_sustained = su;
  }
  if (!g.contains("model_shapes")) return;
  const json& shapes = g["model_shapes"];
  if (!shapes.is_array()) r.fail("gemm.model_shapes", "expected a list, got " + show(shapes));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string at = item("gemm.model_shapes", i);
    const json& s = r.object(shapes[i], at, {"model", "op", "tp", "m", "n", "k", "tflops"});
    out.model_gemms.push_back({r.text(s, at, "model"), r.text(s, at, "op"), r.count(s, at, "tp"), r.positive(s, at, "m"),
                               r.positive(s, at, "n"), r.positive(s, at, "k"), r.measured(s, at, "tflops")});
  }
}

void read_attention(const ProfileReader& r, const json& doc, hw::CalibrationProfile& out) {
  if (!doc.contains("attention")) return;
  const std::string p = "attention";
  const json& a = r.object(doc[p], p, {"kernel", "causal", "points"});
  out.attention_kernel = r.text(a, p, "kernel");
  if (out.attention_kernel != "unfused" && out.attention_kernel != "fused") {
    r.fail(child(p, "kernel"), "expected \"unfused\" or \"fused\", got " + show(json(out.attention_kernel)));
  }
  const json& causal = r.field(a, p, "causal", "true");
  if (causal != json(true)) r.fail(child(p, "causal"), "expected true (causal attention is what the models run), got " + show(causal));
  const json& points = r.list(a, p, "points");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string at = item(child(p, "points"), i);
    const json& q = r.object(points[i], at, {"batch", "heads", "seq", "head_dim", "forward_ms", "backward_ms", "tflops"});
    out.attention.push_back({r.count(q, at, "batch"), r.count(q, at, "heads"), r.count(q, at, "seq"),
                             r.count(q, at, "head_dim"), r.measured(q, at, "forward_ms"), r.measured(q, at, "backward_ms"),
                             r.measured(q, at, "tflops")});
  }
}

// A section that may say it was not measured: {"measured": false, "reason": "..."}.
// Returns the reason, or empty when it was measured.
std::string skipped(const ProfileReader& r, const json& v, const std::string& p) {
  if (!v.is_object()) r.fail(p, "expected an object, got " + show(v));
  const json& m = r.field(v, p, "measured", "true or false");
  if (!m.is_boolean()) r.fail(child(p, "measured"), "expected true or false, got " + show(m));
  if (m.get<bool>()) return "";
  r.object(v, p, {"measured", "reason"});
  const std::string reason = r.text(v, p, "reason");
  return reason.empty() ? "not measured" : reason;
}

void read_links(const ProfileReader& r, const json& doc, hw::CalibrationProfile& out) {
  const json& p2p = r.field(doc, "", "p2p", "an object");
  out.p2p_skipped = skipped(r, p2p, "p2p");
  if (out.p2p_skipped.empty()) {
    r.object(p2p, "p2p", {"measured", "latency_us", "points"});
    out.p2p_latency_us = r.measured(p2p, "p2p", "latency_us");
    out.p2p = r.sizes(p2p, "p2p", "points", "gb_per_s");
  }
  const json& nccl = r.field(doc, "", "nccl", "an object");
  out.nccl_skipped = skipped(r, nccl, "nccl");
  if (!out.nccl_skipped.empty()) return;
  r.object(nccl, "nccl", {"measured", "ranks", "all_reduce", "all_gather", "reduce_scatter", "send_recv"});
  if (nccl.contains("send_recv")) out.nccl_send_recv = r.sizes(nccl, "nccl", "send_recv", "gb_per_s");
  out.nccl_ranks = r.count(nccl, "nccl", "ranks");
  using K = hw::CollectiveKind;
  for (K kind : {K::kAllReduce, K::kAllGather, K::kReduceScatter}) {
    const std::string key = hw::collective_name(kind);
    const std::string p = child("nccl", key);
    const json& v = r.list(nccl, "nccl", key);
    hw::CollectiveCurve curve{kind, {}};
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = item(p, i);
      const json& q = r.object(v[i], at, {"bytes", "time_us", "bus_gb_per_s"});
      hw::CollectivePoint pt{r.positive(q, at, "bytes"), r.measured(q, at, "time_us"), r.measured(q, at, "bus_gb_per_s")};
      if (!curve.points.empty() && !(pt.bytes > curve.points.back().bytes)) r.fail(child(at, "bytes"), "sizes must ascend");
      curve.points.push_back(pt);
    }
    out.nccl.push_back(std::move(curve));
  }
}

}  // namespace

std::shared_ptr<const hw::CalibrationProfile> read_calibration_profile(const json& doc, const std::string& file) {
  const ProfileReader r(file);
  r.object(doc, "", {"schema_version", "header", "gemm", "attention", "hbm", "launch", "host_copy", "host_step", "p2p",
                     "nccl"});
  const json& version = r.field(doc, "", "schema_version", "an integer");
  if (!version.is_number_integer() || version.get<long long>() != kCalibrationSchemaVersion) {
    r.fail("schema_version", fmt::format("this trainsim reads calibration profiles of schema version {}, got {}",
                                         kCalibrationSchemaVersion, show(version)));
  }
  auto out = std::make_shared<hw::CalibrationProfile>();
  out->file = file;
  out->header = read_header(r, doc);
  out->header.schema_version = kCalibrationSchemaVersion;
  read_gemm(r, doc, *out);
  read_attention(r, doc, *out);
  {
    const json& h = r.object(r.field(doc, "", "hbm", "an object"), "hbm", {"copy", "triad"});
    out->hbm_copy = r.sizes(h, "hbm", "copy", "tb_per_s");
    out->hbm_triad = r.sizes(h, "hbm", "triad", "tb_per_s");
  }
  {
    const json& l = r.object(r.field(doc, "", "launch", "an object"), "launch", {"plain_us", "graph_us"});
    out->launch_us = r.measured(l, "launch", "plain_us");
    out->graph_launch_us = r.measured(l, "launch", "graph_us");
  }
  {
    const json& c = r.object(r.field(doc, "", "host_copy", "an object"), "host_copy", {"h2d", "d2h"});
    out->h2d = r.sizes(c, "host_copy", "h2d", "gb_per_s");
    out->d2h = r.sizes(c, "host_copy", "d2h", "gb_per_s");
  }
  if (doc.contains("host_step")) {
    const json& h = r.object(doc["host_step"], "host_step", {"adam_params_per_s", "threads", "params"});
    out->host_adam_params_per_s = r.measured(h, "host_step", "adam_params_per_s");
    if (r.count(h, "host_step", "threads") != 1) {
      r.fail("host_step.threads",
             "expected 1: the rate is one thread's, which trainsim scales by a process's cores, got " +
                 show(h["threads"]));
    }
    r.count(h, "host_step", "params");
  }
  read_links(r, doc, *out);
  return out;
}

std::shared_ptr<const hw::CalibrationProfile> load_calibration_profile(const std::string& path) {
  return read_calibration_profile(parse_json(read_text(path, "calibration profile"), path), path);
}

hw::NodeSpec calibrated(hw::NodeSpec node, std::shared_ptr<const hw::CalibrationProfile> profile) {
  if (!profile) return node;
  const hw::CalibrationProfile& p = *profile;
  const hw::NodeSpec preset = node;
  node.gpu.hbm_achievable_tb_per_s = p.hbm_tb_per_s();
  // The grid is short-run; the burn that a run's held share starts from
  // (workload/duty_clock.hpp) is measured on this GPU when the profile has
  // it, else the preset's.
  if (const auto share = p.sustained_fraction()) node.gpu.sustained_tensor_fraction = *share;
  node.gpu.kernel_overhead_us = p.launch_us.median;
  if (p.host_adam_params_per_s) node.host_adam_params_per_s_per_core = p.host_adam_params_per_s->median;
  if (p.p2p_skipped.empty()) {
    node.nvlink_gb_per_s = p.p2p.back().rate.median;
    node.nvlink_latency_us = p.p2p_latency_us.median;
  }
  // NCCL's bus bandwidth depends on the ranks: only a run over the whole node
  // stands for the node's collectives.
  if (p.nccl_skipped.empty() && p.nccl_ranks == node.gpus_per_node) node.nvlink_bus_gb_per_s = p.nccl_bus_gb_per_s();
  // Pipeline sends inside a node: NCCL's send/recv at the largest size, never
  // above the link it crosses.
  node.nvlink_sendrecv_gb_per_s = hw::calibrated_sendrecv_gb_per_s(p, preset);
  node.gpu.calibration = std::move(profile);
  return node;
}

}  // namespace trainsim::config
