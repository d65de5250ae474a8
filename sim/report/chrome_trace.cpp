#include "report/chrome_trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "report/ep_slices.hpp"
#include "report/json_string.hpp"
#include "report/trace_time.hpp"
#include "schedule/action.hpp"

namespace trainsim::report {

namespace {

std::string us(core::Time t) { return us_text(whole_ns(t)); }

const char* collective_kind_name(hw::CollectiveKind k) {
  switch (k) {
    case hw::CollectiveKind::kAllReduce: return "all-reduce";
    case hw::CollectiveKind::kReduceScatter: return "reduce-scatter";
    case hw::CollectiveKind::kAllGather: return "all-gather";
    case hw::CollectiveKind::kBroadcast: return "broadcast";
    case hw::CollectiveKind::kAllToAll: return "all-to-all";
    case hw::CollectiveKind::kSendRecv: return "send/recv";
  }
  return "collective";
}

// The parallel dimension a collective's group spans: data-parallel replicas
// (gradients, ZeRO's gathers), tensor peers, or the first and last pipeline
// stages (the tied embedding's copies).
const char* group_dimension(lower::TaskKind k) {
  switch (k) {
    case lower::TaskKind::kEmbeddingAllReduce: return "pp";
    case lower::TaskKind::kTpBarrier: return "tp";
    case lower::TaskKind::kEpExchange: return "ep";
    default: return "dp";
  }
}

// An event's "args" object, built key by key in a fixed order.
class Args {
 public:
  Args& add(const char* key, std::int64_t value) { return raw(key, fmt::format("{}", value)); }
  Args& add(const char* key, const std::string& value) { return raw(key, json_string(value)); }
  Args& add(const char* key, const char* value) { return raw(key, json_string(value)); }
  Args& bytes(const char* key, double value) { return raw(key, fmt::format("{:.0f}", value)); }
  // Seconds as microseconds to the nanosecond, the unit of ts and dur.
  Args& micros(const char* key, double seconds) { return raw(key, fmt::format("{:.3f}", seconds * 1e6)); }
  const std::string& text() const { return text_; }

 private:
  Args& raw(const char* key, const std::string& value) {
    if (!text_.empty()) text_ += ',';
    text_ += fmt::format("\"{}\":{}", key, value);
    return *this;
  }
  std::string text_;
};

// Where simulated GPU q sits: its GPU id, and in a pipeline plan its
// pipeline rank, data-parallel replica and tensor rank.
void add_place(Args& args, const lower::Simulation& sim, int q, const char* prefix = "") {
  const std::string p = prefix;
  args.add((p + "gpu").c_str(), sim.gpu_of_rank[q]);
  if (sim.burst()) return;  // no pipeline
  const lower::Simulation::Coordinates c = sim.coordinates(q);
  args.add((p + "pp_rank").c_str(), sim.pipeline_rank(q));
  args.add((p + "dp_rank").c_str(), c.replica);
  args.add((p + "tp_rank").c_str(), c.tensor);
}

// What a slice's args say about its task.
std::string task_args(const lower::Simulation& sim, core::TaskId id) {
  const lower::TaskInfo& ti = sim.info[id];
  const schedule::Action& a = ti.action;
  const bool burst = sim.burst();
  Args args;
  switch (ti.kind) {
    case lower::TaskKind::kCompute: {
      add_place(args, sim, ti.rank);
      if (burst) {
        args.add("layer", sim.stage_names[a.stage]);
        break;
      }
      args.add("stage", a.stage).add("microbatch", a.microbatch);
      if (a.stage < static_cast<int>(sim.stage_layers.size()) && sim.stage_layers[a.stage] > 0) {
        args.add("layers", sim.stage_layers[a.stage]);
      }
      if (ti.units > 0) args.add("unit", fmt::format("{}/{}", ti.unit + 1, ti.units));
      // Inside the slice, not a slice of its own: the collectives interleave
      // with the layers' kernels.
      const lower::CommInside inside = sim.comm_in(ti);
      if (inside.tp_s > 0.0) args.micros("tp_comm_us", inside.tp_s);
      if (inside.cp_s > 0.0) args.micros("cp_comm_us", inside.cp_s);
      if (inside.ep_s > 0.0) args.micros("ep_comm_us", inside.ep_s);
      break;
    }
    case lower::TaskKind::kTransfer:
      args.bytes("bytes", sim.graph.task(id).amount);
      add_place(args, sim, ti.rank, "from_");
      add_place(args, sim, ti.peer, "to_");
      if (!burst) args.add("microbatch", a.microbatch);
      break;
    case lower::TaskKind::kOptimizer: add_place(args, sim, ti.rank); break;
    default: {
      const hw::CollectiveRunner::Description d = sim.collectives->describe(sim.graph.task(id));
      args.add("collective", ti.kind == lower::TaskKind::kTpBarrier ? "barrier" : collective_kind_name(d.kind));
      args.bytes("bytes_per_gpu", d.bytes);
      args.add("group_size", d.members)
          .add("group", ti.across_copies ? "pp" : ti.experts ? "edp" : ti.over_etp ? "etp" : group_dimension(ti.kind));
      add_place(args, sim, ti.rank);
      if (ti.kind == lower::TaskKind::kGradReduce || ti.kind == lower::TaskKind::kParamAllGather) {
        args.add("stage", a.stage);
      }
      if (ti.kind == lower::TaskKind::kEpExchange) {
        // As the exchanges laid out inside a compute slice say it (below).
        args.add("stage", a.stage).add("microbatch", a.microbatch).add("layer", ti.part);
        args.add("pass", a.op == schedule::Op::kForward ? "forward" : "backward");
        break;
      }
      if (ti.parts > 1) args.add("bucket", fmt::format("{}/{}", ti.part + 1, ti.parts));
      if (ti.units > 0) args.add("unit", fmt::format("{}/{}", ti.unit + 1, ti.units));
    }
  }
  return args.text();
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

// The group a ZeRO-3 unit's gather or scatter runs over: dp, or under
// HSDP the shard group; a MoE unit's routed experts their own.
const char* unit_group(const lower::Simulation& sim, const lower::TaskInfo& ti) {
  if (ti.experts) return sim.shard_groups ? "expert shard group, experts" : "edp, experts";
  return sim.shard_groups ? "shard group" : "dp";
}

std::string task_name(const lower::Simulation& sim, const lower::TaskInfo& ti) {
  if (sim.burst()) return burst_task_name(sim, ti);
  const schedule::Action& a = ti.action;
  const std::string part = ti.units > 0   ? fmt::format(" unit {}/{}", ti.unit + 1, ti.units)
                           : ti.parts > 1 ? fmt::format(" [{}/{}]", ti.part + 1, ti.parts)
                                          : "";
  switch (ti.kind) {
    case lower::TaskKind::kCompute:
      if (ti.copy_out) return fmt::format("param copy-out s{}{} (before {} mb{})", a.stage, part,
                                          schedule::op_name(a.op), a.microbatch);
      return fmt::format("{} mb{} s{}{}", schedule::op_name(a.op), a.microbatch, a.stage, part);
    case lower::TaskKind::kTransfer:
      return a.op == schedule::Op::kSendF
                 ? fmt::format("send act mb{} s{}->s{}", a.microbatch, a.stage, a.stage + 1)
                 : fmt::format("send grad mb{} s{}->s{}", a.microbatch, a.stage, a.stage - 1);
    case lower::TaskKind::kGradReduce:
      if (ti.across_shard_groups) {
        return fmt::format("grad all-reduce s{}{} (across shard groups{})", a.stage, part, ti.experts ? ", experts" : "");
      }
      if (ti.across_copies) return fmt::format("grad all-reduce s{} with its copy (other direction)", a.stage);
      return ti.units > 0 ? fmt::format("grad reduce-scatter s{}{} ({})", a.stage, part, unit_group(sim, ti))
                          : fmt::format("grad reduce s{} ({}){}", a.stage, ti.experts ? "edp, experts" : "dp", part);
    case lower::TaskKind::kEmbeddingAllReduce: return "embedding grad all-reduce (first/last stage)";
    case lower::TaskKind::kOptimizer: return "optimizer step";
    case lower::TaskKind::kParamAllGather:
      return fmt::format("param {} s{}{} ({})", ti.regather ? "re-gather" : "all-gather", a.stage, part,
                         ti.units > 0 ? unit_group(sim, ti) : ti.experts ? "edp, experts" : "dp");
    case lower::TaskKind::kTpBarrier: return "tensor-parallel peers meet";
    case lower::TaskKind::kEpExchange:
      return fmt::format("{} {} mb{} s{} moe layer {}", ti.dispatch ? "dispatch" : "combine", schedule::op_name(a.op),
                         a.microbatch, a.stage, ti.part);
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
    case lower::TaskKind::kEpExchange: return "ep";
    case lower::TaskKind::kOptimizer: return "optimizer";
  }
  return "other";
}

}  // namespace

std::string chrome_trace(const lower::Simulation& sim, const hw::ClusterSpec& cluster) {
  const int per_node = cluster.node.gpus_per_node;
  const auto ranks = static_cast<int>(sim.gpu_of_rank.size());

  // Collectives that cost nothing (no data parallelism) are left out, and
  // so are the entry pieces of compute (TaskInfo::entry), which take no time.
  auto shown = [&](core::TaskId id) {
    if (sim.info[id].entry) return false;
    const lower::TaskKind k = sim.info[id].kind;
    const bool collective =
        k != lower::TaskKind::kCompute && k != lower::TaskKind::kTransfer && k != lower::TaskKind::kOptimizer;
    return !collective || sim.timeline.end[id] != sim.timeline.start[id];
  };

  // Threads of a GPU, one per stream the simulator runs, so that slices on a
  // thread never overlap: compute, comm (the collectives, one after another),
  // under ZeRO-3 the parameter gathers' own stream (with the sharding group
  // shared, Simulation::shard_queue, the group's queue: gathers, second
  // gathers and reduce-scatters one at a time), then one per peer it sends
  // to (transfers to one peer run first-in first-out).
  constexpr int kComputeThread = 0;
  constexpr int kCommThread = 1;
  std::vector<std::vector<int>> peers(ranks);  // per rank, in order of first send
  bool gathers = false, regathers = false, unit_experts = false;
  // With flow collectives, a MoE unit's experts' part of its gather and of
  // its scatter, over the expert-data-parallel group: one at a time, beside
  // the sharding group's queue (HSDP's all-reduce of their shard runs on the
  // communication stream, after the rest's).
  auto of_unit_experts = [&](const lower::TaskInfo& ti) { return ti.experts && ti.unit >= 0 && !ti.across_shard_groups; };
  // What the sharding group's queue holds besides the gathers: the second
  // gathers and the units' reduce-scatters (not HSDP's all-reduce after one,
  // over another group, nor the experts' parts).
  auto queued_beside_gathers = [&](const lower::TaskInfo& ti) {
    return sim.shard_queue && (ti.regather || (ti.kind == lower::TaskKind::kGradReduce && ti.unit >= 0 &&
                                               !ti.across_shard_groups && !ti.experts));
  };
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (of_unit_experts(ti)) {
      unit_experts = unit_experts || shown(id);
      continue;
    }
    if (ti.on_gather_stream() && shown(id)) gathers = true;
    if (ti.regather && shown(id) && !sim.shard_queue) regathers = true;
    if (queued_beside_gathers(ti) && shown(id)) gathers = true;
    if (ti.kind != lower::TaskKind::kTransfer) continue;
    auto& p = peers[ti.rank];
    if (std::find(p.begin(), p.end(), ti.peer) == p.end()) p.push_back(ti.peer);
  }
  // (DeepSpeed's second gathers after a recomputation, on no stream's queue:
  // a thread of their own beside.)
  const int gather_thread = gathers ? 2 : -1;
  const int regather_thread = regathers ? 2 + (gathers ? 1 : 0) : -1;
  const int unit_experts_thread = unit_experts ? 2 + (gathers ? 1 : 0) + (regathers ? 1 : 0) : -1;
  const int first_send_thread = 2 + (gathers ? 1 : 0) + (regathers ? 1 : 0) + (unit_experts ? 1 : 0);
  std::size_t most_peers = 0;
  for (const auto& p : peers) most_peers = std::max(most_peers, p.size());
  // Then, with a background job (burst's GPU multiplexing), its own thread;
  // with a MoE model, one for the token exchanges inside its compute
  // (report/ep_slices.hpp: where in each action its dispatch and combine run).
  const int background_thread = sim.background.empty() ? -1 : first_send_thread + static_cast<int>(most_peers);
  const std::vector<EpSlice> exchanges = ep_slices(sim);
  // Flow collectives run exchanges as tasks of their own, on the same thread.
  bool exchange_tasks = false;
  for (core::TaskId id = 0; id < sim.graph.size() && !exchange_tasks; ++id) {
    exchange_tasks = sim.info[id].kind == lower::TaskKind::kEpExchange && shown(id);
  }
  const bool ep_lane = !exchanges.empty() || exchange_tasks;
  const int ep_thread = !ep_lane ? -1
                                          : first_send_thread + static_cast<int>(most_peers) +
                                                (sim.background.empty() ? 0 : 1);
  const int threads_per_gpu = first_send_thread + static_cast<int>(most_peers) + (sim.background.empty() ? 0 : 1) +
                              (ep_lane ? 1 : 0);
  auto pid_of = [&](int r) { return cluster.node_of(sim.gpu_of_rank[r]); };
  auto tid_of = [&](int r, int offset) { return (sim.gpu_of_rank[r] % per_node) * threads_per_gpu + offset; };
  auto send_thread = [&](int r, int peer) {
    const auto& p = peers[r];
    return tid_of(r, first_send_thread + static_cast<int>(std::find(p.begin(), p.end(), peer) - p.begin()));
  };
  auto thread_of = [&](core::TaskId id) {
    const lower::TaskInfo& ti = sim.info[id];
    switch (ti.kind) {
      case lower::TaskKind::kTransfer: return send_thread(ti.rank, ti.peer);
      case lower::TaskKind::kParamAllGather:
        if (of_unit_experts(ti)) return tid_of(ti.rank, unit_experts_thread);
        if (queued_beside_gathers(ti)) return tid_of(ti.rank, gather_thread);
        if (ti.regather) return tid_of(ti.rank, regather_thread);
        return ti.on_gather_stream() ? tid_of(ti.rank, gather_thread) : tid_of(ti.rank, kCommThread);
      case lower::TaskKind::kGradReduce:
        if (of_unit_experts(ti)) return tid_of(ti.rank, unit_experts_thread);
        return tid_of(ti.rank, queued_beside_gathers(ti) ? gather_thread : kCommThread);
      case lower::TaskKind::kEmbeddingAllReduce:
      case lower::TaskKind::kTpBarrier: return tid_of(ti.rank, kCommThread);
      case lower::TaskKind::kEpExchange: return tid_of(ti.rank, ep_thread);
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
      emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid_of(r),
                       tid, json_string(name)));
      emit(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       pid_of(r), tid, tid));
    };
    thread(tid_of(r, kComputeThread), fmt::format("GPU {} compute (pipeline rank {})", gpu, sim.pipeline_rank(r)));
    thread(tid_of(r, kCommThread), fmt::format("GPU {} comm", gpu));
    if (gathers) {
      thread(tid_of(r, gather_thread), sim.shard_queue ? fmt::format("GPU {} sharding group (gathers and scatters)", gpu)
                                                       : fmt::format("GPU {} param gather", gpu));
    }
    if (regathers) thread(tid_of(r, regather_thread), fmt::format("GPU {} param re-gather", gpu));
    if (unit_experts) {
      thread(tid_of(r, unit_experts_thread), fmt::format("GPU {} experts' gathers and scatters (edp)", gpu));
    }
    for (int peer : peers[r]) thread(send_thread(r, peer), fmt::format("GPU {} send to GPU {}", gpu, sim.gpu_of_rank[peer]));
    if (background_thread >= 0) thread(tid_of(r, background_thread), fmt::format("GPU {} background job", gpu));
    if (ep_thread >= 0) thread(tid_of(r, ep_thread), fmt::format("GPU {} expert dispatch/combine", gpu));
  }

  // Slices.
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    if (!shown(id)) continue;
    const lower::TaskInfo& ti = sim.info[id];
    const TraceSpan span = trace_span(sim.timeline.start[id], sim.timeline.end[id]);
    emit(fmt::format(R"({{"ph":"X","name":{},"cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     json_string(task_name(sim, ti)), category(ti.kind), pid_of(ti.rank), thread_of(id), span.ts,
                     span.dur, task_args(sim, id)));
  }

  // The background job's share of each GPU: the stretches its compute stream was idle.
  for (std::size_t r = 0; r < sim.background.size(); ++r) {
    for (const auto& [start, end] : sim.background[r]) {
      const TraceSpan span = trace_span(start, end);
      emit(fmt::format(R"({{"ph":"X","name":"background job","cat":"background","pid":{},"tid":{},"ts":{},"dur":{},"args":{{}}}})",
                       pid_of(static_cast<int>(r)), tid_of(static_cast<int>(r), background_thread), span.ts,
                       span.dur));
    }
  }

  // The expert exchanges, each inside the compute slice (or pair) it belongs to.
  for (const EpSlice& e : exchanges) {
    const TraceSpan span = trace_span(e.start, e.end);
    const schedule::Action& a = e.action;
    Args args;
    add_place(args, sim, e.rank);
    args.add("stage", a.stage).add("microbatch", a.microbatch).add("layer", e.layer);
    args.add("pass", a.op == schedule::Op::kForward ? "forward" : "backward");
    args.add("beside", e.paired ? "the paired pass's compute" : "nothing (exposed)");
    emit(fmt::format(R"({{"ph":"X","name":{},"cat":"ep","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     json_string(fmt::format("{} {} mb{} s{} moe layer {}", e.dispatch ? "dispatch" : "combine",
                                             schedule::op_name(a.op), a.microbatch, a.stage, e.layer)),
                     pid_of(e.rank), tid_of(e.rank, ep_thread), span.ts, span.dur, args.text()));
  }

  // Flow arrows: from each transfer to the action that waits for it. Each end
  // sits at its slice's start, on its slice's thread, in its slice's category.
  // An action's entry piece is not shown: its arrows end on the action's
  // first piece of compute, after the exchanges the entry leads to.
  auto first_shown_piece = [&](core::TaskId entry) {
    const lower::TaskInfo& of = sim.info[entry];
    std::vector<core::TaskId> next{entry};
    for (std::size_t i = 0; i < next.size(); ++i) {
      std::optional<core::TaskId> piece;
      sim.graph.for_each_successor(next[i], [&](core::TaskId to) {
        const lower::TaskInfo& ti = sim.info[to];
        if (piece || ti.rank != of.rank || !(ti.action == of.action)) return;
        if (ti.kind == lower::TaskKind::kCompute && !ti.entry) piece = to;
        if (ti.kind == lower::TaskKind::kEpExchange) next.push_back(to);
      });
      if (piece) return *piece;
    }
    throw std::logic_error("an entry piece leads to no compute of its action");
  };
  std::uint64_t flow_id = 0;
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    if (sim.info[id].kind != lower::TaskKind::kTransfer) continue;
    sim.graph.for_each_successor(id, [&](core::TaskId waiting) {
      if (sim.info[waiting].kind != lower::TaskKind::kCompute) return;  // the next transfer of a FIFO chain
      const core::TaskId to = sim.info[waiting].entry ? first_shown_piece(waiting) : waiting;
      const lower::TaskInfo& from_info = sim.info[id];
      const std::string name = json_string(task_name(sim, from_info));
      ++flow_id;
      emit(fmt::format(R"({{"ph":"s","name":{},"cat":"pipeline","id":{},"pid":{},"tid":{},"ts":{}}})", name, flow_id,
                       pid_of(from_info.rank), thread_of(id), us(sim.timeline.start[id])));
      emit(fmt::format(R"({{"ph":"f","bp":"e","name":{},"cat":"pipeline","id":{},"pid":{},"tid":{},"ts":{}}})", name,
                       flow_id, pid_of(sim.info[to].rank), thread_of(to), us(sim.timeline.start[to])));
    });
  }

  // Counters: samples in time order; of those that fall in one nanosecond,
  // the last, the value that holds from there on (a track takes one value
  // per timestamp).
  auto counter = [&](const std::string& name, int pid, const char* unit, const auto& samples, auto time_of,
                     auto value_of) {
    const std::string quoted = json_string(name);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const std::int64_t ns = whole_ns(time_of(samples[i]));
      if (i + 1 < samples.size() && whole_ns(time_of(samples[i + 1])) == ns) continue;
      emit(fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{"{}":{:.6f}}}}})", quoted, pid, us_text(ns),
                       unit, value_of(samples[i])));
    }
  };
  // Memory in use per GPU.
  for (std::size_t r = 0; r < sim.memory.pools().size(); ++r) {
    const hw::MemoryPool& pool = sim.memory.pools()[r];
    counter(
        pool.name() + " memory", pid_of(static_cast<int>(r)), "GiB", pool.timeline(),
        [](const hw::MemorySample& m) { return m.time; },
        [](const hw::MemorySample& m) { return static_cast<double>(m.bytes_in_use) / (1024.0 * 1024.0 * 1024.0); });
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
    constexpr std::size_t kMostLinks = 16;
    const std::size_t carrying = links.size();
    if (links.size() > kMostLinks) links.resize(kMostLinks);
    if (!links.empty()) {
      const int pid = nodes.empty() ? 0 : *nodes.rbegin() + 1;
      const std::string label = carrying > links.size()
                                    ? fmt::format("network: the {} busiest of {} links", links.size(), carrying)
                                    : fmt::format("network: {} link{}", carrying, carrying == 1 ? "" : "s");
      emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                       json_string(label)));
      emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, pid));
      for (hw::LinkId l : links) {
        counter(
            "link " + sim.topology->link_name(l), pid, "GB/s", history[l], [](const auto& s) { return s.first; },
            [](const auto& s) { return s.second / 1e9; });
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace trainsim::report
