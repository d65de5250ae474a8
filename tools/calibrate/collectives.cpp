#include "collectives.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "check.hpp"
#include "profile_json.hpp"

#ifdef TRAINSIM_CALIBRATE_NCCL
#include <nccl.h>

namespace calibrate {
namespace {
void check_nccl(ncclResult_t e, const char* call, const char* file, int line) {
  if (e != ncclSuccess) die(file, line, call, ncclGetErrorString(e));
}
}  // namespace
}  // namespace calibrate
#define CAL_NCCL(call) ::calibrate::check_nccl((call), #call, __FILE__, __LINE__)
#endif

namespace calibrate {

#ifdef TRAINSIM_CALIBRATE_NCCL

std::string nccl_version() {
  int v = 0;
  CAL_NCCL(ncclGetVersion(&v));
  // NCCL 2.9 and later: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

nlohmann::json measure_nccl(const Sweep& w, const Settings& s, int gpus) {
  if (gpus < 2) return not_measured("one GPU visible");
  std::vector<ncclComm_t> comms(gpus);
  std::vector<int> devices(gpus);
  for (int d = 0; d < gpus; ++d) devices[d] = d;
  CAL_NCCL(ncclCommInitAll(comms.data(), gpus, devices.data()));
  std::vector<cudaStream_t> streams(gpus);
  std::vector<void*> send(gpus), recv(gpus);
  std::vector<cudaEvent_t> start(gpus), stop(gpus);
  for (int d = 0; d < gpus; ++d) {
    CAL_CHECK(cudaSetDevice(d));
    CAL_CHECK(cudaStreamCreate(&streams[d]));
    CAL_CHECK(cudaMalloc(&send[d], w.max_bytes));
    CAL_CHECK(cudaMalloc(&recv[d], w.max_bytes));
    CAL_CHECK(cudaMemset(send[d], 0, w.max_bytes));
    CAL_CHECK(cudaEventCreate(&start[d]));
    CAL_CHECK(cudaEventCreate(&stop[d]));
  }
  // Per sample: a few calls of `once` between events on the streams of the
  // first `ranks` GPUs; the slowest GPU's time per call counts, in ms.
  auto sample_ms = [&](const auto& once, std::size_t bytes, int ranks) {
    for (int i = 0; i < s.warmup; ++i) once();
    const int reps = bytes <= (1u << 20) ? 20 : 2;
    std::vector<double> ms;
    for (int k = 0; k < s.samples; ++k) {
      for (int d = 0; d < ranks; ++d) {
        CAL_CHECK(cudaSetDevice(d));
        CAL_CHECK(cudaEventRecord(start[d], streams[d]));
      }
      for (int r = 0; r < reps; ++r) once();
      double slowest = 0.0;
      for (int d = 0; d < ranks; ++d) {
        CAL_CHECK(cudaSetDevice(d));
        CAL_CHECK(cudaEventRecord(stop[d], streams[d]));
      }
      for (int d = 0; d < ranks; ++d) {
        CAL_CHECK(cudaEventSynchronize(stop[d]));
        float e = 0.0f;
        CAL_CHECK(cudaEventElapsedTime(&e, start[d], stop[d]));
        slowest = std::max(slowest, static_cast<double>(e) / reps);
      }
      ms.push_back(slowest);
    }
    return ms;
  };
  const double n = gpus;
  nlohmann::json out = {{"measured", true}, {"ranks", gpus}};
  // `bytes` is what the simulator calls a collective's size: the buffer each
  // rank contributes (all-reduce, reduce-scatter) or receives in all
  // (all-gather). Bus bandwidth = bytes / time x the factor nccl-tests uses.
  const std::pair<const char*, double> kinds[] = {
      {"all_reduce", 2.0 * (n - 1) / n}, {"all_gather", (n - 1) / n}, {"reduce_scatter", (n - 1) / n}};
  for (const auto& [kind, factor] : kinds) {
    const std::string name = kind;
    nlohmann::json points = nlohmann::json::array();
    for (std::size_t bytes = w.min_bytes; bytes <= w.max_bytes; bytes *= static_cast<std::size_t>(w.step)) {
      const std::size_t count = bytes / 4;  // floats, as nccl-tests defaults to
      const std::size_t shard = std::max<std::size_t>(1, count / gpus);
      auto once = [&] {
        CAL_NCCL(ncclGroupStart());
        for (int d = 0; d < gpus; ++d) {
          if (name == "all_reduce") {
            CAL_NCCL(ncclAllReduce(send[d], recv[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
          } else if (name == "all_gather") {
            CAL_NCCL(ncclAllGather(send[d], recv[d], shard, ncclFloat, comms[d], streams[d]));
          } else {
            CAL_NCCL(ncclReduceScatter(send[d], recv[d], shard, ncclFloat, ncclSum, comms[d], streams[d]));
          }
        }
        CAL_NCCL(ncclGroupEnd());
      };
      const std::vector<double> ms = sample_ms(once, bytes, gpus);
      std::vector<double> us = ms;
      for (double& x : us) x *= 1e3;
      const double moved = 4.0 * static_cast<double>(name == "all_reduce" ? count : shard * gpus);
      // GB/s = bytes / (ms x 1e-3) / 1e9
      points.push_back(collective_point_json(moved, summarize(us), rate(ms, moved * factor / 1e6)));
    }
    out[name] = points;
  }
  // Point to point, GPU 0 to GPU 1, as a pipeline sends an activation: one
  // ncclSend and its ncclRecv in a group. NCCL runs these on fewer channels
  // than a collective; the simulator caps sends inside a node at this rate.
  nlohmann::json send_recv = nlohmann::json::array();
  for (std::size_t bytes = w.min_bytes; bytes <= w.max_bytes; bytes *= static_cast<std::size_t>(w.step)) {
    auto once = [&] {
      CAL_NCCL(ncclGroupStart());
      CAL_NCCL(ncclSend(send[0], bytes, ncclChar, 1, comms[0], streams[0]));
      CAL_NCCL(ncclRecv(recv[1], bytes, ncclChar, 0, comms[1], streams[1]));
      CAL_NCCL(ncclGroupEnd());
    };
    const double b = static_cast<double>(bytes);
    send_recv.push_back(size_point_json(b, "gb_per_s", rate(sample_ms(once, bytes, 2), b / 1e6)));
  }
  out["send_recv"] = send_recv;
  for (int d = 0; d < gpus; ++d) {
    CAL_CHECK(cudaSetDevice(d));
    CAL_CHECK(cudaEventDestroy(start[d]));
    CAL_CHECK(cudaEventDestroy(stop[d]));
    CAL_CHECK(cudaFree(send[d]));
    CAL_CHECK(cudaFree(recv[d]));
    CAL_CHECK(cudaStreamDestroy(streams[d]));
    CAL_NCCL(ncclCommDestroy(comms[d]));
  }
  CAL_CHECK(cudaSetDevice(0));
  return out;
}

#else

std::string nccl_version() { return "not built with NCCL"; }

nlohmann::json measure_nccl(const Sweep&, const Settings&, int) {
  return not_measured("trainsim-calibrate was built without NCCL (nccl.h or libnccl not found)");
}

#endif

}  // namespace calibrate
