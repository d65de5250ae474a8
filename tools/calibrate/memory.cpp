#include "memory.hpp"

#include <cstdio>

#include "check.hpp"
#include "kernels.hpp"
#include "profile_json.hpp"

namespace calibrate {

namespace {

std::vector<std::size_t> sizes_of(const Sweep& w) {
  std::vector<std::size_t> out;
  for (std::size_t b = w.min_bytes; b <= w.max_bytes; b *= static_cast<std::size_t>(w.step)) out.push_back(b);
  return out;
}

// GB/s (1e9 bytes) of moving `bytes` in `ms`, per sample.
Stat gb_per_s(const std::vector<double>& ms, double bytes) { return rate(ms, bytes / 1e6); }

}  // namespace

nlohmann::json measure_hbm(const Sweep& w, const Settings& s, cudaStream_t stream) {
  std::size_t free_bytes = 0, total = 0;
  CAL_CHECK(cudaMemGetInfo(&free_bytes, &total));
  nlohmann::json copy = nlohmann::json::array(), triad = nlohmann::json::array();
  for (std::size_t bytes : sizes_of(w)) {
    if (3 * bytes > free_bytes / 10 * 9) {
      std::fprintf(stderr, "  hbm: %zu MiB arrays do not fit; stopping there\n", bytes >> 20);
      break;
    }
    void *a = nullptr, *b = nullptr, *c = nullptr;
    CAL_CHECK(cudaMalloc(&a, bytes));
    CAL_CHECK(cudaMalloc(&b, bytes));
    CAL_CHECK(cudaMalloc(&c, bytes));
    CAL_CHECK(cudaMemsetAsync(a, 0, bytes, stream));
    CAL_CHECK(cudaMemsetAsync(b, 0, bytes, stream));
    CAL_CHECK(cudaMemsetAsync(c, 0, bytes, stream));
    const std::size_t n = bytes / 16;  // float4s
    // Copy reads one array and writes one; triad reads two and writes one.
    const auto tc = time_ms([&] { stream_copy(a, b, n, stream); }, stream, s);
    const auto tt = time_ms([&] { stream_triad(a, b, c, n, stream); }, stream, s);
    // TB/s = bytes / (ms x 1e-3) / 1e12
    copy.push_back(size_point_json(static_cast<double>(bytes), "tb_per_s", rate(tc, 2.0 * bytes / 1e9)));
    triad.push_back(size_point_json(static_cast<double>(bytes), "tb_per_s", rate(tt, 3.0 * bytes / 1e9)));
    CAL_CHECK(cudaFree(a));
    CAL_CHECK(cudaFree(b));
    CAL_CHECK(cudaFree(c));
  }
  return {{"copy", copy}, {"triad", triad}};
}

nlohmann::json measure_launch(const Settings& s, cudaStream_t stream) {
  constexpr int kKernels = 1000;
  // Back to back on one stream: the GPU waits on the host's launches, so the
  // time per kernel is what each launch costs.
  Settings once = s;
  once.sample_ms = 0.0;  // each sample is the 1000 launches, once
  const auto plain = time_ms([&] {
    for (int i = 0; i < kKernels; ++i) empty_kernel(stream);
  }, stream, once);
  // The same 1000 kernels captured in a CUDA graph and launched as one.
  cudaStream_t capture = nullptr;
  CAL_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  CAL_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kKernels; ++i) empty_kernel(capture);
  CAL_CHECK(cudaStreamEndCapture(capture, &graph));
  cudaGraphExec_t exec = nullptr;
  CAL_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const auto graphed = time_ms([&] { CAL_CHECK(cudaGraphLaunch(exec, stream)); }, stream, once);
  CAL_CHECK(cudaGraphExecDestroy(exec));
  CAL_CHECK(cudaGraphDestroy(graph));
  CAL_CHECK(cudaStreamDestroy(capture));
  // us per kernel = ms per 1000 kernels
  auto per_kernel = [](std::vector<double> ms) {
    for (double& x : ms) x = x * 1e3 / kKernels;
    return summarize(ms);
  };
  return launch_json(per_kernel(plain), per_kernel(graphed));
}

nlohmann::json measure_host_copy(const Sweep& w, const Settings& s, cudaStream_t stream) {
  void* host = nullptr;
  void* device = nullptr;
  CAL_CHECK(cudaMallocHost(&host, w.max_bytes));
  CAL_CHECK(cudaMalloc(&device, w.max_bytes));
  nlohmann::json h2d = nlohmann::json::array(), d2h = nlohmann::json::array();
  for (std::size_t bytes : sizes_of(w)) {
    const auto up = time_ms([&] { CAL_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream)); },
                            stream, s);
    const auto down = time_ms([&] { CAL_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream)); },
                              stream, s);
    h2d.push_back(size_point_json(static_cast<double>(bytes), "gb_per_s", gb_per_s(up, static_cast<double>(bytes))));
    d2h.push_back(size_point_json(static_cast<double>(bytes), "gb_per_s", gb_per_s(down, static_cast<double>(bytes))));
  }
  CAL_CHECK(cudaFreeHost(host));
  CAL_CHECK(cudaFree(device));
  return {{"h2d", h2d}, {"d2h", d2h}};
}

nlohmann::json measure_p2p(const Sweep& w, const Settings& s, int gpus) {
  if (gpus < 2) return not_measured("one GPU visible");
  int reach = 0;
  CAL_CHECK(cudaDeviceCanAccessPeer(&reach, 0, 1));
  if (!reach) return not_measured("GPU 0 cannot access GPU 1 directly");
  void *src = nullptr, *dst = nullptr;
  CAL_CHECK(cudaSetDevice(1));
  CAL_CHECK(cudaDeviceEnablePeerAccess(0, 0));
  CAL_CHECK(cudaMalloc(&dst, w.max_bytes));
  CAL_CHECK(cudaSetDevice(0));
  CAL_CHECK(cudaDeviceEnablePeerAccess(1, 0));
  CAL_CHECK(cudaMalloc(&src, w.max_bytes));
  cudaStream_t stream = nullptr;
  CAL_CHECK(cudaStreamCreate(&stream));
  auto copy = [&](std::size_t bytes) {
    return [=] { CAL_CHECK(cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, stream)); };
  };
  // Latency: the time of a 4-byte copy, back to back.
  std::vector<double> lat = time_ms(copy(4), stream, s);
  for (double& x : lat) x *= 1e3;  // ms -> us
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t bytes : sizes_of(w)) {
    const double b = static_cast<double>(bytes);
    points.push_back(size_point_json(b, "gb_per_s", gb_per_s(time_ms(copy(bytes), stream, s), b)));
  }
  CAL_CHECK(cudaStreamDestroy(stream));
  CAL_CHECK(cudaFree(src));
  CAL_CHECK(cudaSetDevice(1));
  CAL_CHECK(cudaFree(dst));
  CAL_CHECK(cudaSetDevice(0));
  return p2p_json(summarize(lat), points);
}

}  // namespace calibrate
