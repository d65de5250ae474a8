#include "report/chrome_trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "schedule/action.hpp"

namespace trainsim::report {

namespace {

// Microseconds with the full picosecond precision, so output is exact.
std::string us(core::Time t) {
  const std::int64_t ps = t.ps();
  return fmt::format("{}.{:06}", ps / 1000000, ps % 1000000);
}

// Burst parallelism: stages are layers, named (lower/burst.hpp).
std::string burst_task_name(const lower::Simulation& sim, const lower::TaskInfo& ti) {
  const schedule::Action& a = ti.action;
  const std::vector<std::string>& layer = sim.stage_names;
  switch (ti.kind) {
    case lower::TaskKind::kCompute: return fmt::format("{} {}", schedule::op_name(a.op), layer[a.stage]);
    case lower::TaskKind::kTransfer:
      return a.op == schedule::Op::kSendF ? fmt::format("send act {}", layer[a.stage])
                                          : fmt::format("send grad {}", layer[a.stage - 1]);
    case lower::TaskKind::kGradReduce: return fmt::format("grad all-reduce {}", layer[a.stage]);
    default: return "?";
  }
}

std::string task_name(const lower::Simulation& sim, const lower::TaskInfo& ti) {
  if (!sim.stage_names.empty()) return burst_task_name(sim, ti);
  const schedule::Action& a = ti.action;
  const std::string part = ti.parts > 1 ? fmt::format(" [{}/{}]", ti.part + 1, ti.parts) : "";
  switch (ti.kind) {
    case lower::TaskKind::kCompute:
      return fmt::format("{} mb{} s{}{}", schedule::op_name(a.op), a.microbatch, a.stage, part);
    case lower::TaskKind::kTransfer:
      return a.op == schedule::Op::kSendF
                 ? fmt::format("send act mb{} s{}->s{}", a.microbatch, a.stage, a.stage + 1)
                 : fmt::format("send grad mb{} s{}->s{}", a.microbatch, a.stage, a.stage - 1);
    case lower::TaskKind::kGradReduce: return fmt::format("grad reduce s{} (dp){}", a.stage, part);
    case lower::TaskKind::kEmbeddingAllReduce: return "embedding grad all-reduce (first/last stage)";
    case lower::TaskKind::kOptimizer: return "optimizer step";
    case lower::TaskKind::kParamAllGather: return fmt::format("param all-gather s{} (dp)", a.stage);
    case lower::TaskKind::kTpBarrier: return "tensor-parallel peers meet";
  }
  return "?";
}

// Compute slices and transfers share one category, because Chrome's viewer
// binds a flow arrow to a slice only when their categories match.
const char* category(lower::TaskKind k) {
  switch (k) {
    case lower::TaskKind::kCompute:
    case lower::TaskKind::kTransfer: return "pipeline";
    case lower::TaskKind::kGradReduce:
    case lower::TaskKind::kEmbeddingAllReduce:
    case lower::TaskKind::kParamAllGather:
    case lower::TaskKind::kTpBarrier: return "collective";
    case lower::TaskKind::kOptimizer: return "optimizer";
  }
  return "other";
}

}  // namespace

std::string chrome_trace(const lower::Simulation& sim, const hw::ClusterSpec& cluster) {
  const int per_node = cluster.node.gpus_per_node;
  const auto ranks = static_cast<int>(sim.gpu_of_rank.size());

  // Threads of a GPU: compute, comm, then one per peer it sends to (transfers
  // to one peer run first-in first-out, so they never overlap on a thread).
  constexpr int kComputeThread = 0;
  constexpr int kCommThread = 1;
  constexpr int kFirstSendThread = 2;
  std::vector<std::vector<int>> peers(ranks);  // per rank, in order of first send
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.kind != lower::TaskKind::kTransfer) continue;
    auto& p = peers[ti.rank];
    if (std::find(p.begin(), p.end(), ti.peer) == p.end()) p.push_back(ti.peer);
  }
  std::size_t most_peers = 0;
  for (const auto& p : peers) most_peers = std::max(most_peers, p.size());
  // Then, with a background job (burst's GPU multiplexing), its own thread.
  const int background_thread = sim.background.empty() ? -1 : kFirstSendThread + static_cast<int>(most_peers);
  const int threads_per_gpu = kFirstSendThread + static_cast<int>(most_peers) + (sim.background.empty() ? 0 : 1);
  auto pid_of = [&](int r) { return cluster.node_of(sim.gpu_of_rank[r]); };
  auto tid_of = [&](int r, int offset) { return (sim.gpu_of_rank[r] % per_node) * threads_per_gpu + offset; };
  auto send_thread = [&](int r, int peer) {
    const auto& p = peers[r];
    return tid_of(r, kFirstSendThread + static_cast<int>(std::find(p.begin(), p.end(), peer) - p.begin()));
  };
  auto thread_of = [&](core::TaskId id) {
    const lower::TaskInfo& ti = sim.info[id];
    switch (ti.kind) {
      case lower::TaskKind::kTransfer: return send_thread(ti.rank, ti.peer);
      case lower::TaskKind::kGradReduce:
      case lower::TaskKind::kEmbeddingAllReduce:
      case lower::TaskKind::kParamAllGather:
      case lower::TaskKind::kTpBarrier: return tid_of(ti.rank, kCommThread);
      default: return tid_of(ti.rank, kComputeThread);
    }
  };

  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };

  // Names for processes (nodes) and threads (streams).
  std::set<int> nodes;
  for (int r = 0; r < ranks; ++r) nodes.insert(pid_of(r));
  for (int n : nodes) {
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"node {}"}}}})", n, n));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", n, n));
  }
  for (int r = 0; r < ranks; ++r) {
    const int gpu = sim.gpu_of_rank[r];
    auto thread = [&](int tid, const std::string& name) {
      emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})", pid_of(r),
                       tid, name));
      emit(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       pid_of(r), tid, tid));
    };
    thread(tid_of(r, kComputeThread), fmt::format("GPU {} compute (pipeline rank {})", gpu, sim.pipeline_rank(r)));
    thread(tid_of(r, kCommThread), fmt::format("GPU {} comm", gpu));
    for (int peer : peers[r]) thread(send_thread(r, peer), fmt::format("GPU {} send to GPU {}", gpu, sim.gpu_of_rank[peer]));
    if (background_thread >= 0) thread(tid_of(r, background_thread), fmt::format("GPU {} background job", gpu));
  }

  // Slices. Collectives that cost nothing (no data parallelism) are left out.
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    const core::Time start = sim.timeline.start[id], end = sim.timeline.end[id];
    const bool collective = ti.kind != lower::TaskKind::kCompute && ti.kind != lower::TaskKind::kTransfer &&
                            ti.kind != lower::TaskKind::kOptimizer;
    if (collective && end == start) continue;
    std::string args;
    if (ti.kind == lower::TaskKind::kCompute) {
      args = fmt::format(R"("stage":{},"microbatch":{},"rank":{})", ti.action.stage, ti.action.microbatch, ti.rank);
    } else if (ti.kind == lower::TaskKind::kTransfer) {
      args = fmt::format(R"("bytes":{:.0f},"from_rank":{},"to_rank":{})", sim.graph.task(id).amount, ti.rank, ti.peer);
    } else {
      args = fmt::format(R"("rank":{})", ti.rank);
    }
    emit(fmt::format(R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     task_name(sim, ti), category(ti.kind), pid_of(ti.rank), thread_of(id), us(start), us(end - start),
                     args));
  }

  // The background job's share of each GPU: the stretches its compute stream was idle.
  for (std::size_t r = 0; r < sim.background.size(); ++r) {
    for (const auto& [start, end] : sim.background[r]) {
      emit(fmt::format(R"({{"ph":"X","name":"background job","cat":"background","pid":{},"tid":{},"ts":{},"dur":{},"args":{{}}}})",
                       pid_of(static_cast<int>(r)), tid_of(static_cast<int>(r), background_thread), us(start),
                       us(end - start)));
    }
  }

  // Flow arrows: from each transfer to the action that waits for it. Each end
  // sits at its slice's start, on its slice's thread, in its slice's category.
  std::uint64_t flow_id = 0;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    if (sim.info[id].kind != lower::TaskKind::kTransfer) continue;
    sim.graph.for_each_successor(id, [&](core::TaskId to) {
      if (sim.info[to].kind != lower::TaskKind::kCompute) return;  // the next transfer of a FIFO chain
      const lower::TaskInfo& from_info = sim.info[id];
      ++flow_id;
      emit(fmt::format(R"({{"ph":"s","name":"{}","cat":"pipeline","id":{},"pid":{},"tid":{},"ts":{}}})",
                       task_name(sim, from_info), flow_id, pid_of(from_info.rank), thread_of(id), us(sim.timeline.start[id])));
      emit(fmt::format(R"({{"ph":"f","bp":"e","name":"{}","cat":"pipeline","id":{},"pid":{},"tid":{},"ts":{}}})",
                       task_name(sim, from_info), flow_id, pid_of(sim.info[to].rank), thread_of(to),
                       us(sim.timeline.start[to])));
    });
  }

  // Memory in use per GPU.
  for (std::size_t r = 0; r < sim.memory.pools().size(); ++r) {
    const hw::MemoryPool& pool = sim.memory.pools()[r];
    for (const hw::MemorySample& sample : pool.timeline()) {
      emit(fmt::format(R"({{"ph":"C","name":"{} memory","pid":{},"ts":{},"args":{{"GiB":{:.6f}}}}})", pool.name(),
                       pid_of(static_cast<int>(r)), us(sample.time),
                       static_cast<double>(sample.bytes_in_use) / (1024.0 * 1024.0 * 1024.0)));
    }
  }
  // Link rates, for the busiest links (when they were recorded).
  const auto& history = sim.network.rate_history();
  if (!history.empty()) {
    const auto& bytes = sim.network.bytes_carried();
    std::vector<hw::LinkId> links;
    for (hw::LinkId l = 0; l < history.size(); ++l) {
      if (!history[l].empty() && bytes[l] > 0.0) links.push_back(l);
    }
    std::stable_sort(links.begin(), links.end(), [&](hw::LinkId a, hw::LinkId b) { return bytes[a] > bytes[b]; });
    if (links.size() > 16) links.resize(16);
    const int pid = nodes.empty() ? 0 : *nodes.rbegin() + 1;
    emit(fmt::format(R"x({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"network: the 16 busiest links"}}}})x", pid));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, pid));
    for (hw::LinkId l : links) {
      const std::string name = sim.topology->link_name(l);
      for (const auto& [time, rate] : history[l]) {
        emit(fmt::format(R"({{"ph":"C","name":"link {}","pid":{},"ts":{},"args":{{"GB/s":{:.6f}}}}})", name, pid, us(time),
                         rate / 1e9));
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace trainsim::report
