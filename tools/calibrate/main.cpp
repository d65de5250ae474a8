// trainsim-calibrate: measure this machine's GPUs and write a calibration
// profile (JSON) that `trainsim` loads with cluster.calibration. It stands
// alone: it shares no code with the simulator, only the profile's format
// (docs/calibration.md; schema version below).
#include <CLI/CLI.hpp>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "attention.hpp"
#include "check.hpp"
#include "collectives.hpp"
#include "gemm.hpp"
#include "host_step.hpp"
#include "memory.hpp"
#include "profile_json.hpp"
#include "sustained.hpp"

namespace {

using nlohmann::json;
using namespace calibrate;

struct Args {
  std::string out;
  bool quick = false;
  std::string models = TRAINSIM_MODELS_DIR;
  int warmup = 3;
  int samples = 11;
  std::string note;
};

std::string version_text(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string(v / minor_div % minor_mod);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

DeviceInfo device_info(const Args& args, int gpus) {
  cudaDeviceProp prop{};
  CAL_CHECK(cudaGetDeviceProperties(&prop, 0));
  int sm_khz = 0, mem_khz = 0, driver = 0, runtime = 0;
  CAL_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, 0));
  CAL_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0));
  CAL_CHECK(cudaDriverGetVersion(&driver));
  CAL_CHECK(cudaRuntimeGetVersion(&runtime));
  const int cublas = static_cast<int>(cublasLtGetVersion());
  DeviceInfo d;
  d.gpu_name = prop.name;
  d.gpu_count = gpus;
  d.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  d.sm_count = prop.multiProcessorCount;
  d.sm_clock_mhz = sm_khz / 1000.0;       // the peak (boost) clock the driver reports
  d.memory_clock_mhz = mem_khz / 1000.0;  // the peak memory clock
  d.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1u << 30);
  d.l2_mib = prop.l2CacheSize / 1048576.0;
  d.driver_version = version_text(driver, 1000, 10, 100);
  d.runtime_version = version_text(runtime, 1000, 10, 100);
  d.cublas_version = version_text(cublas, 10000, 100, 100) + "." + std::to_string(cublas % 100);
  d.nccl_version = nccl_version();
  d.date = utc_now();
  d.quick = args.quick;
  d.warmup = args.warmup;
  d.samples = args.samples;
  d.note = args.note;
  return d;
}

std::vector<int> grid_axis(bool quick) {
  std::vector<int> axis;
  for (int x = 64; x <= 16384; x *= quick ? 4 : 2) axis.push_back(x);
  return axis;
}

struct ModelShape {
  std::string model, op;
  int tp, m, n, k;
};

// The forward GEMMs of every transformer in `dir` at one sequence per
// micro-batch, as the simulator forms them (sim/workload/transformer.cpp):
// QKV, attention output, MLP (gated for Llama), logits; each shape once.
std::vector<ModelShape> model_shapes(const std::string& dir, bool quick) {
  std::vector<ModelShape> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::fprintf(stderr, "  model shapes: no folder %s; none measured\n", dir.c_str());
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& f : files) {
    json m;
    try {
      std::ifstream in(f);
      m = json::parse(in);
    } catch (const json::exception&) {
      continue;
    }
    const std::string arch = m.value("arch", "gpt");
    if (arch == "layers") continue;
    // A file without the dense shape's integers (a layer table, a mixture of
    // experts without a dense MLP) gives the shapes it has, never an abort.
    auto whole = [&](const char* key) { return m.contains(key) && m[key].is_number_integer() ? m[key].get<int>() : 0; };
    const int h = whole("hidden"), heads = whole("heads"), seq = whole("seq"), vocab = whole("vocab");
    if (h <= 0 || heads <= 0 || seq <= 0 || vocab <= 0) continue;
    const int ffn = whole("ffn");  // 0: no dense MLP (a mixture of experts); its MLP shapes are left out
    const int kv = m.contains("kv_heads") ? whole("kv_heads") : heads;
    // Multi-head latent attention projects through low-rank matrices, not one QKV GEMM.
    const bool plain_attention = m.value("attention", std::string("mha")) != "mla" && kv > 0;
    for (int tp : quick ? std::vector<int>{8} : std::vector<int>{1, 8}) {
      const int d = whole("head_dim") > 0 ? whole("head_dim") : h / heads;  // Qwen3: 64 heads of 128 on h 4096
      if (heads % tp || (plain_attention && kv % tp) || ffn % tp || d <= 0) continue;
      std::vector<std::tuple<std::string, int, int>> ops;
      if (plain_attention) ops.emplace_back("qkv_proj", (heads + 2 * kv) * d / tp, h);
      ops.emplace_back("attention_out_proj", h, heads * d / tp);
      if (ffn > 0) {
        ops.emplace_back(arch == "llama" ? "mlp_gate_up" : "mlp_up", (arch == "llama" ? 2 : 1) * ffn / tp, h);
        ops.emplace_back("mlp_down", h, ffn / tp);
      }
      if (vocab % tp == 0) ops.emplace_back("logits", vocab / tp, h);
      for (const auto& [op, n, k] : ops) {
        if (seen.insert({seq, n, k}).second) out.push_back({f.stem().string(), op, tp, seq, n, k});
      }
    }
  }
  return out;
}

// The grid of `dtype` over `axis` for m, n and k; null when cuBLASLt has no
// algorithm for one of its shapes.
json measure_grid(GemmRunner& runner, Dtype dtype, const std::vector<int>& axis, const Settings& s) {
  std::vector<Stat> cells;
  for (int m : axis) {
    for (int n : axis) {
      for (int k : axis) {
        const auto ms = runner.time(dtype, m, n, k, s);
        if (!ms) {
          std::fprintf(stderr, "  gemm %s: no cuBLASLt algorithm for m=%d n=%d k=%d\n", dtype_name(dtype), m, n, k);
          return nullptr;
        }
        cells.push_back(rate(*ms, 2.0 * m * n * static_cast<double>(k) / 1e9));  // TFLOP/s
      }
    }
  }
  return grid_json(axis, cells);
}

class Progress {
 public:
  explicit Progress(int sections) : sections_(sections) {}
  void begin(const std::string& what) {
    what_ = what;
    start_ = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[%d/%d] %s ...\n", ++at_, sections_, what.c_str());
  }
  void end() const {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "[%d/%d] %s: %.1f s\n", at_, sections_, what_.c_str(), s);
  }

 private:
  int sections_, at_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{
      "trainsim-calibrate: measure this machine's GPUs (GEMM, attention, HBM, kernel launch, host and peer copies,\n"
      "NCCL collectives) and write one calibration profile for trainsim's cluster.calibration."};
  app.add_option("--out", args.out, "Write the profile (JSON) to this file")->required();
  app.add_flag("--quick", args.quick, "Coarse grids and fewer sizes: a few minutes less, the same format");
  app.add_option("--models", args.models, "Folder of model JSON files whose GEMM shapes to measure")
      ->capture_default_str();
  app.add_option("--warmup", args.warmup, "Warm-up calls before each measurement")->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--samples", args.samples, "Timed samples per measurement (median, min and max are kept)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--note", args.note, "Free text for the profile's header (e.g. the machine's name)");
  app.footer("GPU 0 is measured; peer-to-peer and NCCL use every visible GPU (CUDA_VISIBLE_DEVICES).\n"
             "Exit status: 0 the profile was written; 1 a usage error, a CUDA/cuBLAS/NCCL failure (named with\n"
             "file:line) or an unwritable output file.");
  CLI11_PARSE(app, argc, argv);
  {
    // Find out now, not after minutes of measuring, that the profile cannot
    // be written; leave no empty file behind.
    std::error_code ec;
    const bool existed = std::filesystem::exists(args.out, ec);
    const bool writable = static_cast<bool>(std::ofstream(args.out, std::ios::app));
    if (!existed) std::filesystem::remove(args.out, ec);
    if (!writable) {
      std::fprintf(stderr, "trainsim-calibrate: cannot write %s\n", args.out.c_str());
      return 1;
    }
  }

  int gpus = 0;
  CAL_CHECK(cudaGetDeviceCount(&gpus));
  CAL_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CAL_CHECK(cudaStreamCreate(&stream));
  Settings s;
  s.warmup = args.warmup;
  s.samples = args.samples;
  s.sample_ms = args.quick ? 0.5 : 1.0;

  json profile = profile_json(device_info(args, gpus));
  std::fprintf(stderr, "trainsim-calibrate: %s, %d GPU(s) visible, %s mode\n",
               profile["header"]["gpu_name"].get<std::string>().c_str(), gpus, args.quick ? "quick" : "full");
  int major = 0, minor = 0;
  CAL_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CAL_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  // cuBLASLt's FP8 GEMMs need compute capability 8.9 (Ada) or newer (cuBLAS API
  // reference, cublasLtMatmul's FP8 type combinations).
  const bool fp8 = major * 10 + minor >= 89;
  Progress progress(fp8 ? 11 : 10);

  // GEMMs: operands big enough for the grid's largest and the model shapes
  // that fit in 80% of free memory.
  const std::vector<int> axis = grid_axis(args.quick);
  const std::vector<ModelShape> shapes = model_shapes(args.models, args.quick);
  std::size_t need = static_cast<std::size_t>(axis.back()) * axis.back();
  for (const ModelShape& m : shapes) {
    need = std::max({need, static_cast<std::size_t>(m.m) * m.k, static_cast<std::size_t>(m.k) * m.n,
                     static_cast<std::size_t>(m.m) * m.n});
  }
  std::size_t free_bytes = 0, total = 0;
  CAL_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const std::size_t fits = free_bytes / 10 * 8 / 6;  // three operands of 2 bytes a value
  json gemm = json::object();
  {
    GemmRunner runner(std::min(need, fits), stream);
    for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
      if (d == Dtype::kFp8 && !fp8) {
        std::fprintf(stderr, "  gemm fp8: compute capability %d.%d has no FP8 tensor cores; skipped\n", major, minor);
        continue;
      }
      progress.begin(std::string("GEMM ") + dtype_name(d) + ", " + std::to_string(axis.size() * axis.size() * axis.size()) +
                     " shapes");
      json grid = measure_grid(runner, d, axis, s);
      if (!grid.is_null()) {
        gemm[dtype_name(d)] = grid;
      } else if (d != Dtype::kFp8) {
        std::fprintf(stderr, "trainsim-calibrate: the %s grid is incomplete; no profile written\n", dtype_name(d));
        return 1;
      }
      progress.end();
    }
    progress.begin("GEMM bf16 at " + std::to_string(shapes.size()) + " model shapes");
    json list = json::array();
    for (const ModelShape& m : shapes) {
      const std::size_t largest = std::max({static_cast<std::size_t>(m.m) * m.k, static_cast<std::size_t>(m.k) * m.n,
                                            static_cast<std::size_t>(m.m) * m.n});
      if (largest > runner.max_elements()) continue;  // does not fit this GPU's memory
      const auto ms = runner.time(Dtype::kBf16, m.m, m.n, m.k, s);
      if (!ms) continue;
      list.push_back(model_gemm_json(m.model, m.op, m.tp, m.m, m.n, m.k, rate(*ms, 2.0 * m.m * m.n * static_cast<double>(m.k) / 1e9)));
    }
    gemm["model_shapes"] = list;
    progress.end();
    const double seconds = args.quick ? 5.0 : 20.0;
    progress.begin("GEMM bf16 sustained: " + std::to_string(static_cast<int>(seconds)) +
                   " s back to back, then as 2/3 of the time");
    json sustained = measure_sustained(runner, seconds, stream);
    if (!sustained.is_null()) gemm["sustained"] = sustained;
    progress.end();
  }
  profile["gemm"] = gemm;

  progress.begin("attention (unfused, causal, forward + backward)");
  json points = json::array();
  const std::vector<int> seqs = args.quick ? std::vector<int>{1024, 4096} : std::vector<int>{512, 1024, 2048, 4096, 8192};
  const std::vector<int> dims = args.quick ? std::vector<int>{128} : std::vector<int>{64, 128};
  for (int d : dims) {
    for (int seq : seqs) {
      // 16k tokens a batch and hidden 2048, as FlashAttention-2's benchmarks.
      json p = measure_attention({16384 / seq, 2048 / d, seq, d}, s, stream);
      if (!p.is_null()) points.push_back(p);
    }
  }
  // A GPU too small for every shape leaves the (optional) section out.
  if (!points.empty()) profile["attention"] = attention_json(points);
  progress.end();

  progress.begin("HBM copy and triad");
  profile["hbm"] = measure_hbm({1u << 20, std::size_t{4} << 30, args.quick ? 4 : 2}, s, stream);
  progress.end();

  progress.begin("kernel launch, plain and CUDA graph");
  profile["launch"] = measure_launch(s, stream);
  progress.end();

  const Sweep copies{64u << 10, 1u << 30, args.quick ? 16 : 4};
  progress.begin("host<->device and peer-to-peer copies");
  profile["host_copy"] = measure_host_copy(copies, s, stream);
  profile["p2p"] = measure_p2p(copies, s, gpus);
  progress.end();

  // 256 MiB of FP32 state (16 B a parameter), far beyond the caches.
  progress.begin("host AdamW step, one thread");
  profile["host_step"] = measure_host_adam(args.quick ? std::size_t{1} << 22 : std::size_t{1} << 24, s.samples);
  progress.end();

  progress.begin("NCCL all-reduce, all-gather, reduce-scatter");
  profile["nccl"] = measure_nccl({1u << 10, 1u << 30, args.quick ? 16 : 4}, s, gpus);
  progress.end();
  CAL_CHECK(cudaStreamDestroy(stream));

  // Whole or not at all: a full disk leaves no cut-short profile, and an
  // earlier profile at that path stays as it was.
  const std::string partial = args.out + ".partial." + std::to_string(getpid());  // this run's own
  std::ofstream out(partial, std::ios::binary);
  out << profile.dump(2) << "\n";
  out.close();
  std::error_code ec;
  if (out) std::filesystem::rename(partial, args.out, ec);
  if (!out || ec) {
    std::filesystem::remove(partial, ec);
    std::fprintf(stderr, "trainsim-calibrate: cannot write %s\n", args.out.c_str());
    return 1;
  }
  std::fprintf(stderr, "trainsim-calibrate: wrote %s\n", args.out.c_str());
  return 0;
}
