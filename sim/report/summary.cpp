#include "report/summary.hpp"

#include <algorithm>
#include <stdexcept>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace trainsim::report {

namespace {

using Interval = std::pair<core::Time, core::Time>;

// Total length of `spans` (any order, may overlap) not covered by `busy`
// (sorted, disjoint).
double uncovered_s(std::vector<Interval> spans, const std::vector<Interval>& busy) {
  std::sort(spans.begin(), spans.end());
  double total = 0.0;
  core::Time reach = core::Time::zero();  // spans are merged by skipping what was counted
  std::size_t b = 0;
  for (auto [start, end] : spans) {
    if (start < reach) start = reach;
    if (end <= start) continue;
    reach = end;
    // Walk the busy intervals that overlap [start, end).
    while (b < busy.size() && busy[b].second <= start) ++b;
    core::Time at = start;
    for (std::size_t k = b; k < busy.size() && busy[k].first < end; ++k) {
      if (busy[k].first > at) total += (busy[k].first - at).to_seconds();
      if (busy[k].second > at) at = busy[k].second;
    }
    if (end > at) total += (end - at).to_seconds();
  }
  return total;
}

bool is_dp(lower::TaskKind k) {
  return k == lower::TaskKind::kGradReduce || k == lower::TaskKind::kEmbeddingAllReduce ||
         k == lower::TaskKind::kParamAllGather;
}

const char* class_name(hw::LinkClass c) {
  switch (c) {
    case hw::LinkClass::kNvLink: return "nvlink";
    case hw::LinkClass::kNic: return "nic";
    case hw::LinkClass::kUplink: return "uplink";
  }
  return "?";
}

void summarize_links(const lower::Simulation& sim, double t, Summary& s) {
  const auto& bytes = sim.network.bytes_carried();
  std::vector<LinkUse> used;
  for (hw::LinkId l = 0; l < bytes.size(); ++l) {
    if (!(bytes[l] > 0.0)) continue;
    LinkUse u;
    u.name = sim.topology->link_name(l);
    u.link_class = class_name(sim.topology->link_class(l));
    u.bytes = bytes[l];
    u.utilisation = t > 0.0 ? bytes[l] / (sim.network.link(l).bytes_per_s * t) : 0.0;
    used.push_back(u);
  }
  for (hw::LinkClass c : {hw::LinkClass::kNvLink, hw::LinkClass::kNic, hw::LinkClass::kUplink}) {
    LinkClassUse k;
    k.link_class = class_name(c);
    for (const LinkUse& u : used) {
      if (u.link_class != k.link_class) continue;
      ++k.links_used;
      k.bytes += u.bytes;
      k.mean_utilisation += u.utilisation;
      k.busiest_utilisation = std::max(k.busiest_utilisation, u.utilisation);
    }
    if (k.links_used > 0) k.mean_utilisation /= k.links_used;
    s.link_classes.push_back(k);
  }
  // Busiest first; ties by name, so the list is always the same.
  std::sort(used.begin(), used.end(), [](const LinkUse& a, const LinkUse& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });
  if (used.size() > 5) used.resize(5);
  s.busiest_links = used;
}

}  // namespace

Summary summarize(const lower::Simulation& sim, const RunInfo& info, Detail detail) {
  const bool full = detail == Detail::kFull;
  Summary s;
  s.info = info;
  const double t = sim.timeline.makespan.to_seconds();
  s.iteration_time_s = t;
  s.events = sim.timeline.events;
  s.flow_collectives = sim.flow_collectives;
  s.simulated_gpus = static_cast<int>(sim.gpu_of_rank.size());
  s.fidelity = sim.fell_back_to_full ? "full (" + sim.fell_back_because + ")"
               : sim.every_gpu        ? "full"
                                      : "symmetric";
  s.tasks = sim.graph.size();
  if (t > 0.0) {
    s.samples_per_s = info.global_batch / t;
    s.tokens_per_s = s.samples_per_s * info.seq;
    s.model_tflops_per_gpu = info.model_flops_per_iteration / t / info.gpus / 1e12;
    s.mfu = info.peak_tflops > 0.0 ? s.model_tflops_per_gpu / info.peak_tflops : 0.0;
    s.hardware_tflops_per_gpu = info.hardware_flops_per_iteration / t / info.gpus / 1e12;
    s.hfu = info.peak_tflops > 0.0 ? s.hardware_tflops_per_gpu / info.peak_tflops : 0.0;
  }
  // Per simulated GPU first; then per pipeline rank over the simulated copies
  // of the pipeline (one in symmetric fidelity): mean bubble, worst memory
  // and exposure.
  const int gpus = static_cast<int>(sim.gpu_of_rank.size());
  const int ranks = sim.pipeline_ranks;
  // Compute time in whole picoseconds, so that a GPU that never idles sums to
  // the makespan exactly (a bubble of 0, not a rounding below it).
  std::vector<core::Time> busy(gpus);
  std::vector<double> tp_comm(gpus, 0.0), cp_comm(gpus, 0.0), ep_comm(gpus, 0.0), reducing(gpus, 0.0), gathering(gpus, 0.0);
  std::vector<std::vector<Interval>> busy_spans(gpus), dp_spans(gpus), arriving(gpus);
  // A sweep's lowering keeps each task's brief, not its TaskInfo: enough for the totals.
  const bool briefs = !sim.brief.empty();
  if (briefs && full) throw std::logic_error("summarize: the full detail needs every task's TaskInfo");
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskBrief b = briefs ? sim.brief[id] : lower::brief_of(sim.info[id]);
    const Interval span{sim.timeline.start[id], sim.timeline.end[id]};
    const double d = (span.second - span.first).to_seconds();
    if (b.kind == lower::TaskKind::kCompute || b.kind == lower::TaskKind::kOptimizer) {
      busy[b.rank] += span.second - span.first;
      if (!briefs) {
        const lower::CommInside inside = sim.comm_in(sim.info[id]);
        tp_comm[b.rank] += inside.tp_s;
        cp_comm[b.rank] += inside.cp_s;
        ep_comm[b.rank] += inside.ep_s;
      }
      if (full && d > 0.0) busy_spans[b.rank].push_back(span);
    }
    if (b.kind == lower::TaskKind::kEpExchange) {
      // A dispatch or combine of its own (flow collectives) blocks the
      // compute stream as it does inside a compute task.
      busy[b.rank] += span.second - span.first;
      ep_comm[b.rank] += d;
      if (full && d > 0.0) busy_spans[b.rank].push_back(span);
    }
    if (is_dp(b.kind)) {
      // (DeepSpeed's second gathers after a recomputation are left out: exposed time only.)
      if (!b.regather) (b.kind == lower::TaskKind::kParamAllGather ? gathering : reducing)[b.rank] += d;
      if (full) dp_spans[b.rank].push_back(span);
    }
    if (b.gather_stream && d > 0.0) {
      s.param_gather_stream = true;
    }
    if (full && b.kind == lower::TaskKind::kTransfer) {
      const lower::TaskInfo& ti = sim.info[id];
      arriving[ti.peer].push_back(span);
      if (sim.blocking_sends) arriving[ti.rank].push_back(span);  // the sender waits for it too
    }
  }
  s.shard_queue = sim.shard_queue;
  for (double d : reducing) s.grad_all_reduce_s = std::max(s.grad_all_reduce_s, d);
  for (double d : gathering) s.param_all_gather_s = std::max(s.param_all_gather_s, d);
  s.stages.resize(ranks);
  for (int r = 0; r < ranks; ++r) {
    s.stages[r].rank = r;
    s.stages[r].gpu = sim.gpu_of_rank[r];
  }
  double bubble_sum = 0.0;
  core::Time slowest_busy;
  for (int q = 0; q < gpus; ++q) {
    const hw::MemoryPool& pool = sim.memory.pools()[q];
    StageSummary& st = s.stages[sim.pipeline_rank(q)];
    const double bubble = t > 0.0 ? (sim.timeline.makespan - busy[q]).to_seconds() / t : 0.0;
    st.busy_s += busy[q].to_seconds() / sim.pipelines;
    st.bubble_fraction += bubble / sim.pipelines;
    if (pool.peak() >= st.peak_memory_bytes) {  // the worst copy's peak, with its own split
      st.peak_memory_bytes = pool.peak();
      st.model_state_bytes = pool.resident();
    }
    st.oom = st.oom || pool.exceeded();
    bubble_sum += bubble;
    s.peak_memory_bytes = std::max(s.peak_memory_bytes, pool.peak());
    s.oom = s.oom || pool.exceeded();
    if (q == 0 || busy[q] > slowest_busy) {  // the GPU with the most compute: the one the others wait for
      slowest_busy = busy[q];
      s.slowest_gpu = sim.gpu_of_rank[q];
    }
    if (!full) continue;
    std::sort(busy_spans[q].begin(), busy_spans[q].end());
    ExposedComm e;
    e.tp = tp_comm[q];  // blocking, on the compute stream: all of it is exposed
    e.cp = cp_comm[q];  // what the exchange leaves beside attention, on the compute stream too
    e.ep = ep_comm[q];  // dispatch and combine block the compute stream too
    e.pp = uncovered_s(arriving[q], busy_spans[q]);
    e.dp = uncovered_s(dp_spans[q], busy_spans[q]);
    st.exposed.tp = std::max(st.exposed.tp, e.tp);
    st.exposed.pp = std::max(st.exposed.pp, e.pp);
    st.exposed.dp = std::max(st.exposed.dp, e.dp);
    s.exposed.tp = std::max(s.exposed.tp, e.tp);
    s.exposed.pp = std::max(s.exposed.pp, e.pp);
    s.exposed.dp = std::max(s.exposed.dp, e.dp);
    st.exposed.cp = std::max(st.exposed.cp, e.cp);
    s.exposed.cp = std::max(s.exposed.cp, e.cp);
    st.exposed.ep = std::max(st.exposed.ep, e.ep);
    s.exposed.ep = std::max(s.exposed.ep, e.ep);
  }
  s.bubble_fraction = gpus > 0 ? bubble_sum / gpus : 0.0;
  s.memory_capacity_bytes = sim.gpu_memory_bytes;
  s.cuda_context_bytes = sim.cuda_context_bytes;
  if (full) summarize_links(sim, t, s);
  return s;
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json j;
  j["config"] = s.info.config;
  if (!s.info.calibration.empty()) j["calibration"] = s.info.calibration;
  j["model"] = s.info.model;
  j["schedule"] = s.info.schedule;
  j["plan"] = {{"tp", s.info.tp},
               {"pp", s.info.pp},
               {"dp", s.info.dp},
               {"cp", s.info.cp},
               {"ep", s.info.ep},
               {"etp", s.info.etp},
               {"vp", s.info.vp},
               {"microbatch_size", s.info.microbatch_size},
               {"global_batch", s.info.global_batch},
               {"microbatches", s.info.microbatches},
               {"recompute", s.info.recompute},
               {"zero_stage", s.info.zero_stage},
               {"sequence_parallel", s.info.sequence_parallel},
               {"attention", s.info.attention},
               {"precision", s.info.precision}};
  if (s.info.precision == "fp8") {
    j["plan"]["fp8_recipe"] = s.info.fp8_recipe;
    j["plan"]["fp8_library"] = s.info.fp8_library;
  }
  if (!s.info.offload_modules.empty()) j["plan"]["offload_modules"] = s.info.offload_modules;
  if (s.info.checkpoint_in_cpu) j["plan"]["checkpoint_in_cpu"] = true;
  if (s.info.offload != "none") {
    j["plan"]["offload"] = s.info.offload;
    j["plan"]["offload_grad_copy"] = s.info.offload_grad_copy;
  }
  if (s.info.moment_dtype != "fp32") j["plan"]["optimizer_moment_dtype"] = s.info.moment_dtype;
  j["iteration_time_s"] = s.iteration_time_s;
  j["tokens_per_s"] = s.tokens_per_s;
  j["samples_per_s"] = s.samples_per_s;
  j["model_tflops_per_gpu"] = s.model_tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["hardware_tflops_per_gpu"] = s.hardware_tflops_per_gpu;
  j["hfu"] = s.hfu;
  if (!s.burst) {
    j["layer_forward_s"] = s.info.layer_forward_s;
    j["layer_backward_s"] = s.info.layer_backward_s;
  }
  j["bubble_fraction"] = s.bubble_fraction;
  j["tensor_clock_fraction"] = s.info.tensor_clock_fraction;
  j["tensor_duty"] = s.info.tensor_duty;
  // Offloading only: the most host memory a node holds, and its DRAM.
  j["host_memory_per_node_bytes"] = s.info.host_memory_per_node_bytes;
  j["host_memory_capacity_bytes"] = s.info.host_memory_capacity_bytes;
  j["grad_all_reduce_s"] = s.grad_all_reduce_s;
  j["param_all_gather_s"] = s.param_all_gather_s;
  auto exposed = [](const ExposedComm& e) {
    return nlohmann::json{{"tp", e.tp}, {"cp", e.cp}, {"ep", e.ep}, {"pp", e.pp}, {"dp", e.dp}};
  };
  j["exposed_comm_s"] = exposed(s.exposed);
  nlohmann::json links = nlohmann::json::object();
  for (const LinkClassUse& k : s.link_classes) {
    links[k.link_class] = {{"links_used", k.links_used},
                           {"bytes", k.bytes},
                           {"mean_utilisation", k.mean_utilisation},
                           {"busiest_utilisation", k.busiest_utilisation}};
  }
  j["links"] = links;
  nlohmann::json busiest = nlohmann::json::array();
  for (const LinkUse& u : s.busiest_links) {
    busiest.push_back({{"name", u.name}, {"class", u.link_class}, {"bytes", u.bytes}, {"utilisation", u.utilisation}});
  }
  j["busiest_links"] = busiest;
  nlohmann::json stages = nlohmann::json::array();
  for (const StageSummary& st : s.stages) {
    stages.push_back({{"rank", st.rank},
                      {"gpu", st.gpu},
                      {"bubble_fraction", st.bubble_fraction},
                      {"peak_memory_bytes", st.peak_memory_bytes},
                      {"model_state_bytes", st.model_state_bytes},
                      {"oom", st.oom},
                      {"exposed_comm_s", exposed(st.exposed)}});
  }
  j["stages"] = stages;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["memory_capacity_bytes"] = s.memory_capacity_bytes;
  j["cuda_context_bytes"] = s.cuda_context_bytes;
  j["oom"] = s.oom;
  j["gpus"] = s.info.gpus;
  j["simulated_gpus"] = s.simulated_gpus;
  j["fidelity"] = s.fidelity;
  j["slowest_gpu"] = s.slowest_gpu;
  j["events"] = s.events;
  j["sim_wall_s"] = s.info.sim_wall_s;
  if (s.burst) j["burst"] = to_json(*s.burst);
  return j;
}

namespace {
double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }
}  // namespace

std::string to_text(const Summary& s) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("  {:<24}{}\n", key, value);
  };
  out += fmt::format("trainsim: {} — {} on {} GPU{}\n", s.info.config, s.info.model.empty() ? "a model" : s.info.model,
                     s.info.gpus, s.info.gpus == 1 ? "" : "s");
  if (s.burst) {
    line("plan", fmt::format("{}, global batch {}", s.burst->mode, s.info.global_batch));
  } else {
    std::string extras;
    if (s.info.precision == "fp8") extras += fmt::format(", FP8 ({}, {})", s.info.fp8_recipe, s.info.fp8_library);
    if (s.info.precision == "fp16") extras += ", FP16";
    if (s.info.moment_dtype != "fp32") extras += ", Adam moments in " + s.info.moment_dtype;
    if (!s.info.offload_modules.empty()) {
      extras += ", offloading " + fmt::format("{}", fmt::join(s.info.offload_modules, " and ")) + " activations";
    }
    if (s.info.checkpoint_in_cpu) extras += ", checkpoints in host memory";
    if (s.info.offload != "none") {
      extras += fmt::format(", {} on the host ({} gradient copies)",
                            s.info.offload == "optimizer" ? "optimizer" : "optimizer and parameters",
                            s.info.offload_grad_copy);
    }
    line("plan", fmt::format("tp={}{} pp={}{} dp={}{}, {} micro-batch{} of {} per pipeline, global batch {}, {}{}{}{}",
                             s.info.tp,
                             s.info.cp > 1 ? fmt::format(" cp={} ({})", s.info.cp, s.info.cp_algorithm) : "",
                             s.info.pp, s.info.vp > 1 ? fmt::format(" vp={}", s.info.vp) : "", s.info.dp,
                             s.info.moe ? fmt::format(" ep={}{}", s.info.ep, s.info.etp > 1 ? fmt::format(" etp={}", s.info.etp) : "") : "",
                             s.info.microbatches, s.info.microbatches == 1 ? "" : "es", s.info.microbatch_size,
                             s.info.global_batch, s.info.schedule,
                             s.info.recompute == "none" ? "" : ", " + s.info.recompute + " recompute",
                             s.info.sequence_parallel ? ", sequence parallel" : "", extras));
  }
  if (!s.info.calibration.empty()) line("calibration", s.info.calibration);
  // A CNN's iteration takes milliseconds: seconds to four places would hide it.
  // Past an hour the seconds alone are hard to read: hours beside them.
  line("iteration time", s.burst                       ? fmt::format("{:.4f} ms", s.iteration_time_s * 1e3)
                         : s.iteration_time_s >= 3600.0 ? fmt::format("{:.4f} s ({:.1f} h)", s.iteration_time_s,
                                                                      s.iteration_time_s / 3600.0)
                                                        : fmt::format("{:.4f} s", s.iteration_time_s));
  line("throughput", s.burst ? fmt::format("{:.2f} samples/s", s.samples_per_s)
                             : fmt::format("{:.0f} tokens/s, {:.2f} samples/s", s.tokens_per_s, s.samples_per_s));
  if (s.burst) out += to_text(*s.burst);
  line("model TFLOP/s per GPU", fmt::format("{:.1f} (MFU {:.1f}% of the {:.1f} TFLOP/s peak)", s.model_tflops_per_gpu,
                                            100.0 * s.mfu, s.info.peak_tflops));
  if (s.hardware_tflops_per_gpu > s.model_tflops_per_gpu * (1 + 1e-9)) {
    line("with recomputation", fmt::format("{:.1f} hardware TFLOP/s per GPU (HFU {:.1f}%)", s.hardware_tflops_per_gpu,
                                           100.0 * s.hfu));
  }
  if (!s.burst) {
    line("one layer", fmt::format("{:.2f} ms forward, {:.2f} ms backward (a micro-batch, one GPU)",
                                  s.info.layer_forward_s * 1e3, s.info.layer_backward_s * 1e3));
  }
  if (s.info.tensor_clock_fraction < 1.0) {
    // A power-limited GPU's clock under minutes of GEMMs (hardware.md).
    line("sustained clock", fmt::format("tensor work at {:.3f} of its short-run rate (it is {:.0f}% of the compute; "
                                        "GEMMs back to back hold {:.3f})",
                                        s.info.tensor_clock_fraction, 100.0 * s.info.tensor_duty, s.info.burn_fraction));
  }
  line("bubble fraction", fmt::format("{:.1f}% (mean over GPUs)", 100.0 * s.bubble_fraction));
  if (s.grad_all_reduce_s > 0.0) {
    // A layer table's iteration is milliseconds: its times in ms, as its iteration's.
    line("gradient reduction", s.burst ? fmt::format("{:.4f} ms on the busiest rank's communication stream",
                                                     s.grad_all_reduce_s * 1e3)
                     : s.shard_queue ? fmt::format("{:.4f} s on the busiest rank, in one queue with the gathers (ZeRO-3)",
                                                   s.grad_all_reduce_s)
                                     : fmt::format("{:.4f} s on the busiest rank's communication stream",
                                                   s.grad_all_reduce_s));
  }
  if (s.param_all_gather_s > 0.0) {
    line("parameter all-gather",
         fmt::format("{:.4f} s on the busiest rank{}", s.param_all_gather_s,
                     !s.param_gather_stream   ? "'s communication stream"
                     : s.shard_queue           ? ", in one queue with the reduce-scatters (ZeRO-3)"
                     : s.info.zero_stage == 3 ? "'s parameter-gather stream (ZeRO-3)"
                                              : "'s parameter-gather stream (under the next forward)"));
  }
  // A layer table has no tensor groups; its "pp" is the activations moving
  // between layers that run on different GPU counts.
  if (s.burst) {
    line("exposed communication", fmt::format("between layers {:.4f} ms, dp {:.4f} ms (most on any rank)",
                                              s.exposed.pp * 1e3, s.exposed.dp * 1e3));
  } else {
  line("exposed communication",
       fmt::format("tp {:.4f} s, {}{}pp {:.4f} s, dp {:.4f} s (most on any rank)", s.exposed.tp,
                   s.info.cp > 1 ? fmt::format("cp {:.4f} s, ", s.exposed.cp) : "",
                   s.info.moe ? fmt::format("ep {:.4f} s, ", s.exposed.ep) : "", s.exposed.pp, s.exposed.dp));
  }
  if (!s.busiest_links.empty()) {
    std::string list;
    for (std::size_t i = 0; i < s.busiest_links.size() && i < 3; ++i) {
      const LinkUse& u = s.busiest_links[i];
      list += fmt::format("{}{} {:.1f}%", i ? ", " : "", u.name, 100.0 * u.utilisation);
    }
    // Analytic collectives take NCCL's modelled time without moving bytes
    // on links: say so, as the figures then count point-to-point traffic only.
    // Tensor-parallel collectives stay analytic inside a stage's costs in either mode.
    line("busiest links", !s.flow_collectives ? list + " (point-to-point only: analytic collectives)"
                          : s.info.tp > 1     ? list + " (tensor-parallel collectives not on links)"
                                              : list);
  }
  line("slowest GPU", fmt::format("GPU {} (the most compute time)", s.slowest_gpu));
  line("peak memory per GPU", fmt::format("{:.2f} GiB + {:.2f} GiB CUDA context, of {:.2f} GiB{}", gib(s.peak_memory_bytes),
                                          gib(s.cuda_context_bytes), gib(s.memory_capacity_bytes),
                                          s.oom ? "  -> OUT OF MEMORY" : "  (fits)"));
  if (s.info.host_memory_capacity_bytes > 0.0) {
    const bool over = s.info.host_memory_per_node_bytes > s.info.host_memory_capacity_bytes;
    line("host memory per node", fmt::format("{:.2f} GiB offloaded, of {:.2f} GiB{}",
                                             gib(static_cast<std::int64_t>(s.info.host_memory_per_node_bytes)),
                                             gib(static_cast<std::int64_t>(s.info.host_memory_capacity_bytes)),
                                             over ? "  -> OUT OF HOST MEMORY" : "  (fits)"));
  }
  out += s.burst ? "  per GPU:\n" : "  per pipeline rank:\n";
  out += fmt::format("    {:>4} {:>6} {:>8} {:>12} {:>16}\n", "rank", "GPU", "bubble", "peak GiB", "model state GiB");
  for (const StageSummary& st : s.stages) {
    out += fmt::format("    {:>4} {:>6} {:>7.1f}% {:>12.2f} {:>16.2f}{}\n", st.rank, st.gpu,
                       100.0 * st.bubble_fraction, gib(st.peak_memory_bytes), gib(st.model_state_bytes),
                       st.oom ? "  OOM" : "");
  }
  const char* gpus = s.simulated_gpus == 1 ? "GPU" : "GPUs";
  // Milliseconds below a second, seconds above (a full-fidelity run of
  // thousands of GPUs takes minutes).
  const std::string wall = s.info.sim_wall_s < 1.0 ? fmt::format("{:.2f} ms", s.info.sim_wall_s * 1e3)
                                                   : fmt::format("{:.2f} s", s.info.sim_wall_s);
  line("simulated", fmt::format("{} events, {} tasks, {} fidelity, {} {} in {} wall", s.events, s.tasks, s.fidelity,
                                s.simulated_gpus,
                                s.simulated_gpus == s.info.gpus ? fmt::format("{} (every one),", gpus)
                                                                : fmt::format("{} standing for all {},", gpus, s.info.gpus),
                                wall));
  return out;
}

}  // namespace trainsim::report
