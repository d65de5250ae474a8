#include "report/chrome_trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "schedule/action.hpp"

namespace trainsim::report {

namespace {

// Thread ids within a node's process: a block of kThreadsPerGpu per GPU.
constexpr int kThreadsPerGpu = 64;
constexpr int kComputeThread = 0;
constexpr int kCommThread = 1;
constexpr int kFirstSendLane = 2;

// Microseconds with the full picosecond precision, so output is exact.
std::string us(core::Time t) {
  const std::int64_t ps = t.ps();
  return fmt::format("{}.{:06}", ps / 1000000, ps % 1000000);
}

std::string task_name(const lower::TaskInfo& ti) {
  switch (ti.kind) {
    case lower::TaskKind::kCompute:
      return fmt::format("{} mb{} s{}", schedule::op_letter(ti.action.op), ti.action.microbatch, ti.action.stage);
    case lower::TaskKind::kTransfer:
      return fmt::format("send {} mb{} s{}->s{}", ti.gradient ? "grad" : "act", ti.action.microbatch,
                         ti.action.stage, ti.gradient ? ti.action.stage - 1 : ti.action.stage + 1);
    case lower::TaskKind::kGradAllReduce: return "grad all-reduce (dp)";
    case lower::TaskKind::kOptimizer: return "optimizer step";
  }
  return "?";
}

const char* category(lower::TaskKind k) {
  switch (k) {
    case lower::TaskKind::kCompute: return "compute";
    case lower::TaskKind::kTransfer: return "p2p";
    case lower::TaskKind::kGradAllReduce: return "collective";
    case lower::TaskKind::kOptimizer: return "optimizer";
  }
  return "other";
}

}  // namespace

std::string chrome_trace(const lower::Simulation& sim, const hw::ClusterSpec& cluster) {
  const int per_node = cluster.node.gpus_per_node;
  auto pid_of_rank = [&](int r) { return cluster.node_of(sim.gpu_of_rank[r]); };
  auto tid_base = [&](int r) { return (sim.gpu_of_rank[r] % per_node) * kThreadsPerGpu; };

  // Send lanes: a transfer takes the lowest lane of its sender that is free
  // when it starts, so slices on one thread never overlap.
  std::vector<core::TaskId> transfers;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    if (sim.info[id].kind == lower::TaskKind::kTransfer) transfers.push_back(id);
  }
  std::stable_sort(transfers.begin(), transfers.end(), [&](core::TaskId a, core::TaskId b) {
    return sim.timeline.start[a] < sim.timeline.start[b];
  });
  std::vector<int> lane_of(sim.graph.size(), 0);
  std::vector<std::vector<core::Time>> lane_free(sim.gpu_of_rank.size());
  for (core::TaskId id : transfers) {
    auto& lanes = lane_free[sim.info[id].rank];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > sim.timeline.start[id]) ++lane;
    if (lane == lanes.size()) lanes.push_back(core::Time::zero());
    lanes[lane] = sim.timeline.end[id];
    lane_of[id] = static_cast<int>(std::min<std::size_t>(lane, kThreadsPerGpu - kFirstSendLane - 1));
  }

  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };

  // Names for processes (nodes) and threads (streams).
  std::set<int> nodes;
  for (std::size_t r = 0; r < sim.gpu_of_rank.size(); ++r) nodes.insert(pid_of_rank(static_cast<int>(r)));
  for (int n : nodes) {
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"node {}"}}}})", n, n));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", n, n));
  }
  for (std::size_t r = 0; r < sim.gpu_of_rank.size(); ++r) {
    const int ri = static_cast<int>(r);
    const int pid = pid_of_rank(ri), base = tid_base(ri), gpu = sim.gpu_of_rank[r];
    auto thread = [&](int tid, const std::string& name) {
      emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})", pid, tid,
                       name));
      emit(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       pid, tid, tid));
    };
    thread(base + kComputeThread, fmt::format("GPU {} compute (pipeline rank {})", gpu, r));
    thread(base + kCommThread, fmt::format("GPU {} comm", gpu));
    for (std::size_t lane = 0; lane < lane_free[r].size(); ++lane) {
      thread(base + kFirstSendLane + static_cast<int>(lane), fmt::format("GPU {} send {}", gpu, lane));
    }
  }

  // Slices.
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    const core::Time start = sim.timeline.start[id], end = sim.timeline.end[id];
    int tid = tid_base(ti.rank);
    if (ti.kind == lower::TaskKind::kGradAllReduce) tid += kCommThread;
    if (ti.kind == lower::TaskKind::kTransfer) tid += kFirstSendLane + lane_of[id];
    std::string args;
    if (ti.kind == lower::TaskKind::kCompute) {
      args = fmt::format(R"("stage":{},"microbatch":{},"rank":{})", ti.action.stage, ti.action.microbatch, ti.rank);
    } else if (ti.kind == lower::TaskKind::kTransfer) {
      args = fmt::format(R"("bytes":{:.0f},"from_rank":{},"to_rank":{})", sim.graph.task(id).amount, ti.rank,
                         ti.peer);
    } else {
      args = fmt::format(R"("rank":{})", ti.rank);
    }
    emit(fmt::format(R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     task_name(ti), category(ti.kind), pid_of_rank(ti.rank), tid, us(start), us(end - start), args));
  }

  // Flow arrows: from each transfer to the compute action it feeds.
  std::uint64_t flow_id = 0;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    if (sim.info[id].kind != lower::TaskKind::kTransfer) continue;
    sim.graph.for_each_successor(id, [&](core::TaskId to) {
      const lower::TaskInfo& from_info = sim.info[id];
      const lower::TaskInfo& to_info = sim.info[to];
      ++flow_id;
      emit(fmt::format(R"({{"ph":"s","name":"{}","cat":"p2p","id":{},"pid":{},"tid":{},"ts":{}}})",
                       task_name(from_info), flow_id, pid_of_rank(from_info.rank),
                       tid_base(from_info.rank) + kFirstSendLane + lane_of[id], us(sim.timeline.start[id])));
      emit(fmt::format(R"({{"ph":"f","bp":"e","name":"{}","cat":"p2p","id":{},"pid":{},"tid":{},"ts":{}}})",
                       task_name(from_info), flow_id, pid_of_rank(to_info.rank), tid_base(to_info.rank) + kComputeThread,
                       us(sim.timeline.start[to])));
    });
  }

  // Memory in use per GPU.
  for (std::size_t r = 0; r < sim.memory.pools().size(); ++r) {
    const hw::MemoryPool& pool = sim.memory.pools()[r];
    for (const hw::MemorySample& sample : pool.timeline()) {
      emit(fmt::format(R"({{"ph":"C","name":"{} memory","pid":{},"ts":{},"args":{{"GiB":{:.6f}}}}})", pool.name(),
                       pid_of_rank(static_cast<int>(r)), us(sample.time),
                       static_cast<double>(sample.bytes_in_use) / (1024.0 * 1024.0 * 1024.0)));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace trainsim::report
