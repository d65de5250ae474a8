#include "driver/whatif.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <spdlog/spdlog.h>

#include "driver/layer_whatif.hpp"
#include "driver/plan_cache.hpp"
#include "hw/calibration_profile.hpp"
#include "lower/a2a_pairs.hpp"
#include "lower/shared_lowering.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"
#include "schedule/sharding.hpp"
#include "workload/tp_overlap.hpp"

namespace trainsim::driver {

WhatIf simulate(const config::Scenario& sc, bool record_link_rates) {
  Controls controls;
  controls.record_link_rates = record_link_rates;
  return simulate(sc, controls);
}

const std::shared_ptr<const workload::StageCosts>& no_stage_costs() {
  static const auto none = std::make_shared<const workload::StageCosts>();
  return none;
}

WhatIf simulate(const config::Scenario& sc, const Controls& controls) {
  if (sc.layer_model) return simulate_layers(sc, controls);
  return simulate(sc, prepare(sc, controls), controls);
}

Prepared prepare(const config::Scenario& sc, const Controls& controls) {
  if (sc.layer_model) throw std::logic_error("driver::prepare: a layer-table model has no pipeline program");
  Prepared w;
  w.start = std::chrono::steady_clock::now();
  const workload::Plan& plan = sc.plan;
  auto cost_them = [&] {
    return workload::stage_costs(sc.model, plan, sc.cluster, sc.options.collective_algorithm, controls.layer_ops);
  };
  // A shared entry holds costs without the breakdown (a sweep's): costed afresh when asked for it.
  w.costs = controls.cache != nullptr && !controls.costs_key.empty() && !controls.layer_ops
                ? controls.cache->costs(controls.costs_key, cost_them)
                : std::make_shared<const workload::StageCosts>(cost_them());
  for (std::size_t s = 0; s < w.costs->stages.size(); ++s) {
    const auto& c = w.costs->stages[s];
    spdlog::debug("stage {}: F {:.3f} ms, I {:.3f} ms, W {:.3f} ms, activations {:.3f} GiB/micro-batch", s,
                  c.forward.to_seconds() * 1e3, c.input_grad.to_seconds() * 1e3, c.weight_grad.to_seconds() * 1e3,
                  static_cast<double>(c.activation_bytes) / 1073741824.0);
  }
  const schedule::Schedule* sched =
      sc.csv_schedule != nullptr ? sc.csv_schedule.get() : schedule::find_schedule(plan.schedule);
  if (sched == nullptr) throw schedule::ProgramError("no schedule named \"" + plan.schedule + "\"");
  // The plan placed the stages' costs; the schedule must agree on where they run.
  if (sched->placement() != plan.placement()) {
    throw schedule::ProgramError("schedule \"" + plan.schedule + "\" runs its stages in the " +
                                 std::string(schedule::placement_name(sched->placement())) +
                                 " placement, but the plan costs them in the " +
                                 std::string(schedule::placement_name(plan.placement())) + " one");
  }
  try {
    w.shape = schedule::Shape::placed(sched->placement(), plan.pp, plan.vp, plan.microbatches());
  } catch (const std::invalid_argument& e) {
    throw schedule::ProgramError(e.what());  // micro-batches the placement cannot split
  }
  // Stage durations for schedules that place work by time (zb-1p, zb-2p); a
  // transfer crosses NVLink or, between nodes, a NIC.
  for (int s = 0; s < w.shape.stages; ++s) {
    const workload::StageCost& c = w.costs->stages[s];
    schedule::Shape::StageTimes t;
    t.forward = c.forward.to_seconds();
    t.input_grad = c.input_grad.to_seconds();
    t.weight_grad = c.weight_grad.to_seconds();
    if (w.shape.has_next(s) && w.shape.stage_rank[s] != w.shape.stage_rank[s + 1]) {
      const int here = plan.gpu_of(plan.rank_of_stage(s)), next = plan.gpu_of(plan.rank_of_stage(s + 1));
      const hw::NodeSpec& node = sc.cluster.node;
      const double nvlink = node.nvlink_sendrecv_gb_per_s > 0.0 ? node.nvlink_sendrecv_gb_per_s : node.nvlink_gb_per_s;
      const double bytes_per_s = sc.cluster.node_of(here) == sc.cluster.node_of(next)
                                     ? nvlink * 1e9
                                     : node.nic_bus_gb_per_s * 1e9;
      if (bytes_per_s > 0.0) t.transfer = c.send_forward_bytes / bytes_per_s;
    }
    w.shape.times.push_back(t);
  }
  // Megatron-Core's A2A overlap runs one more warm-up forward (1f1b, interleaved-1f1b).
  if (plan.overlap.moe_a2a) w.shape.extra_warmup = 1;
  const bool sharded = plan.zero_stage == 3 && plan.replicas() > 1;
  // ZeRO-3: each stage's units, so that the program gathers them one by one.
  std::vector<int> units;
  if (sharded) {
    for (const workload::StageCost& c : w.costs->stages) units.push_back(static_cast<int>(c.shard_units.size()));
  }
  // A schedule that places work by the stages' times shares its program with
  // the plans whose stages take the same times, to the bit.
  std::vector<double> times;
  if (sched->reads_stage_times()) {
    for (const schedule::Shape::StageTimes& t : w.shape.times) {
      times.insert(times.end(), {t.forward, t.input_grad, t.weight_grad, t.transfer});
    }
  }
  const bool shared = controls.cache != nullptr && sc.csv_schedule == nullptr;
  const PlanCache::ProgramKey key{plan.schedule, static_cast<int>(sched->placement()), plan.pp, plan.vp,
                                  plan.microbatches(), sharded, plan.reshard_after_forward,
                                  plan.grad_sync_after_last_backward, plan.overlap.moe_a2a, units, std::move(times)};
  auto lay_out = [&] {
    CheckedProgram out;
    try {
      out.program = schedule::with_communication(sched->program(w.shape), w.shape);
      if (plan.overlap.moe_a2a) out.program = lower::with_paired_sends(out.program);
      // ZeRO-3 shards the parameters: each run of a stage's compute gathers them.
      if (sharded) {
        out.program =
            schedule::with_sharding(out.program, plan.reshard_after_forward, !plan.grad_sync_after_last_backward, units);
      }
    } catch (const std::invalid_argument& e) {
      throw schedule::ProgramError(e.what());  // the plugin refused the shape
    }
    out.digest = digest_of(out.program);
    // Other times that laid out an equal program: checked and wired already.
    if (shared && sched->reads_stage_times()) {
      if (const auto same = controls.cache->equal_program(key, out.program, out.digest)) {
        out.wiring = same->wiring;
        return out;
      }
    }
    if (plan.overlap.moe_a2a) {
      // Each pair starts once both of its passes' inputs are in, and sends
      // once both have run. Refused before the cycle check would name a
      // deadlock: the waits can make one where the schedule alone has none.
      const lower::A2aWaits a2a = lower::a2a_waits(plan.schedule, w.shape, out.program);
      const std::string use =
          "use interleaved-1f1b (parallel.vp > 1), dualpipe, dualpipev or, with pp = 1, 1f1b; or set "
          "options.moe_a2a_overlap to false";
      switch (a2a.refusal) {
        case lower::A2aRefusal::kRuns: break;
        case lower::A2aRefusal::kNoWholeBackward:
          throw schedule::ProgramError(
              "options.moe_a2a_overlap pairs each forward with a whole backward (B), and this schedule splits every "
              "backward into I and W, so nothing would overlap: " + use);
        case lower::A2aRefusal::kPipelineWithoutChunks:
          throw schedule::ProgramError(
              "options.moe_a2a_overlap over pipeline stages needs virtual stages (parallel.vp > 1), as Megatron-Core "
              "requires: with one stage a rank each steady pair would wait for the next rank's pair, which waits "
              "for this rank's pair before it, so the pairs would run every other step: " + use);
        case lower::A2aRefusal::kPairsWaitOnThemselves:
          throw schedule::ProgramError(
              "options.moe_a2a_overlap runs each paired forward and backward as one step, once the inputs of both "
              "are in, and schedule \"" + plan.schedule + "\" pairs a forward with a backward that needs its "
              "output (or the other way round), so the pair would wait for itself (interleaved-1f1b does so with "
              "as few micro-batches as pipeline ranks, where a rank's last warm-up forward meets its first "
              "backward): give each pipeline more micro-batches, or " + use);
      }
      std::vector<schedule::Dependency> deps = schedule::check(out.program, w.shape);
      deps.insert(deps.end(), a2a.waits.begin(), a2a.waits.end());
      out.wiring = lower::wire(out.program, w.shape, deps);
    } else {
      out.wiring = lower::wire(out.program, w.shape, schedule::check(out.program, w.shape));
    }
    return out;
  };
  w.checked = shared ? controls.cache->program(key, lay_out) : std::make_shared<const CheckedProgram>(lay_out());
  return w;
}

namespace {

lower::Options lower_options(const config::Scenario& sc, const Controls& controls) {
  lower::Options options;
  options.fidelity = sc.options.full_fidelity ? lower::Fidelity::kFull : lower::Fidelity::kSymmetric;
  options.collectives = sc.options.flow_collectives ? lower::CollectiveModel::kFlow : lower::CollectiveModel::kAnalytic;
  options.collective_algorithm = sc.options.collective_algorithm;
  options.record_link_rates = controls.record_link_rates;
  options.merge_bucket_trains = controls.merge_bucket_trains;
  options.memory_timelines = controls.memory_timelines;
  options.task_info = controls.task_info;
  // Compute shares the GPU with the collectives that overlap it (NCCL's
  // kernels take SMs and memory bandwidth): unless the config says
  // otherwise, it runs 18.9% slower meanwhile, the average Chang et al.
  // measured (arXiv 2507.03114; workload/tp_overlap.hpp).
  options.comm_slowdown = sc.plan.overlap.compute_slowdown;
  options.blocking_sends = sc.options.blocking_sends;
  options.cuda_context_bytes = static_cast<std::int64_t>(sc.options.cuda_context_bytes);
  for (const auto& g : sc.options.gpu_speed) options.gpu_speed.push_back({g.gpu, g.factor});
  for (const auto& f : sc.options.links) options.link_faults.push_back({f.where, f.link, f.bandwidth_factor, f.failed});
  options.limits = controls.limits;
  options.progress = controls.lowering_progress;
  return options;
}

// The what-if of a prepared plan, its simulation still to be made.
WhatIf unsimulated(Prepared& prepared) {
  WhatIf w;
  w.costs = std::move(prepared.costs);
  w.shape = std::move(prepared.shape);
  // The program lives as long as the entry does (aliasing: no copy).
  w.program = std::shared_ptr<const schedule::Program>(prepared.checked, &prepared.checked->program);
  return w;
}

// Runs w.sim; where a bucket train's premise fails as it runs, lowers the
// plan again with a task per gradient bucket and runs that.
void run_lowered(const config::Scenario& sc, WhatIf& w, const lower::Wiring& wiring, lower::Options options,
                 const Controls& controls) {
  spdlog::info("lowered to {} tasks (about {:.0f} foreseen, and {:.3g} flow steps); simulating", w.sim->graph.size(),
               w.sim->estimate.tasks, w.sim->estimate.flow_steps);
  try {
    lower::run(*w.sim, nullptr, controls.progress);
  } catch (const hw::TrainBroken& e) {
    spdlog::info("{}; lowering again with a task per gradient bucket", e.what());
    options.merge_bucket_trains = false;
    w.sim = lower::lower(*w.program, w.shape, wiring, *w.costs, sc.cluster, sc.plan, options);
    lower::run(*w.sim, nullptr, controls.progress);
  }
}

void finish(WhatIf& w, const Prepared& prepared) {
  w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - prepared.start).count();
  spdlog::info("simulated {} events in {:.3f} s", w.sim->timeline.events, w.wall_s);
}

}  // namespace

WhatIf simulate(const config::Scenario& sc, Prepared&& prepared, const Controls& controls) {
  WhatIf w = unsimulated(prepared);
  const lower::Options options = lower_options(sc, controls);
  w.sim = lower::lower(*w.program, w.shape, prepared.checked->wiring, *w.costs, sc.cluster, sc.plan, options);
  run_lowered(sc, w, prepared.checked->wiring, options, controls);
  finish(w, prepared);
  return w;
}

void simulate_alike(const std::vector<const config::Scenario*>& scenarios, std::vector<Prepared>&& prepared,
                    const Controls& controls, const std::function<void(std::size_t, WhatIf&&)>& done) {
  if (scenarios.empty() || scenarios.size() != prepared.size()) {
    throw std::logic_error("driver::simulate_alike: one prepared plan for each scenario");
  }
  // The same program, or an equal one: a schedule that places work by the
  // stages' times lays out a program for each plan's times, and two often
  // come out alike.
  std::vector<char> shares(scenarios.size(), 0);
  for (std::size_t i = 1; i < scenarios.size(); ++i) shares[i] = same_program(*prepared[i].checked, *prepared[0].checked);
  if (std::find(shares.begin(), shares.end(), 1) == shares.end()) {
    // Nothing to share: each lowered on its own, keeping nothing for copies.
    for (std::size_t i = 0; i < scenarios.size(); ++i) done(i, simulate(*scenarios[i], std::move(prepared[i]), controls));
    return;
  }
  const config::Scenario& first = *scenarios[0];
  WhatIf w0 = unsimulated(prepared[0]);
  const lower::Options options = lower_options(first, controls);
  const lower::Wiring& wiring = prepared[0].checked->wiring;
  std::optional<lower::SharedLowering> shared;
  shared.emplace(*w0.program, w0.shape, wiring, *w0.costs, first.cluster, first.plan, options);
  // A copy holds as much memory again as the first while both are alive:
  // without room for both, the first runs and goes, then each other plan
  // is lowered on its own.
  const bool room = 2.0 * shared->estimate().bytes <= controls.limits.bytes;
  auto run_first = [&] {
    w0.sim = shared->take();
    shared.reset();
    run_lowered(first, w0, wiring, options, controls);
    finish(w0, prepared[0]);
    done(0, std::move(w0));
  };
  if (!room) run_first();
  for (std::size_t i = 1; i < scenarios.size(); ++i) {
    const config::Scenario& sc = *scenarios[i];
    WhatIf w = unsimulated(prepared[i]);
    const lower::Options own = lower_options(sc, controls);
    if (shared && shares[i]) w.sim = shared->copy_for(*w.costs);
    if (!w.sim) {
      w.sim = lower::lower(*w.program, w.shape, prepared[i].checked->wiring, *w.costs, sc.cluster, sc.plan, own);
    }
    run_lowered(sc, w, prepared[i].checked->wiring, own, controls);
    finish(w, prepared[i]);
    done(i, std::move(w));
  }
  if (room) run_first();
}

namespace {

// Per simulated GPU, the most activations it holds offloaded on the host at
// once (Plan::offload_modules, Plan::checkpoint_in_cpu): what each forward
// sends when it ends, until its backward takes it back when it starts
// (Simulation::host_offloads).
std::vector<double> offloaded_activation_peaks(const lower::Simulation& sim) {
  struct Change {
    core::Time at;
    double bytes;
  };
  std::vector<std::vector<Change>> changes(sim.gpu_of_rank.size());
  for (const lower::Simulation::HostOffload& h : sim.host_offloads) {
    const core::Time at = h.bytes > 0 ? sim.timeline.end[h.task] : sim.timeline.start[h.task];
    changes[static_cast<std::size_t>(h.rank)].push_back({at, static_cast<double>(h.bytes)});
  }
  std::vector<double> peaks(changes.size(), 0.0);
  for (std::size_t q = 0; q < changes.size(); ++q) {
    // At one instant, what arrives is counted before what leaves: the larger figure.
    std::stable_sort(changes[q].begin(), changes[q].end(), [](const Change& a, const Change& b) {
      return a.at < b.at || (a.at == b.at && a.bytes > b.bytes);
    });
    double held = 0.0;
    for (const Change& c : changes[q]) peaks[q] = std::max(peaks[q], held += c.bytes);
  }
  return peaks;
}

// "FILE (GPU, DATE)" of the calibration profile the cluster carries, or empty.
std::string calibration_label(const config::Scenario& sc) {
  const hw::CalibrationProfile* p = sc.cluster.node.gpu.calibration.get();
  return p == nullptr ? std::string() : p->file + " (" + p->header.gpu_name + ", " + p->header.date + ")";
}

}  // namespace

report::Summary summarize(const config::Scenario& sc, const WhatIf& w, const std::string& config_label,
                          report::Detail detail) {
  if (sc.layer_model) {
    report::Summary s = summarize_layers(sc, w, config_label);
    s.info.calibration = calibration_label(sc);
    return s;
  }
  report::RunInfo info;
  info.config = config_label;
  info.calibration = calibration_label(sc);
  info.model = sc.model.name;
  info.schedule = sc.plan.schedule;
  info.tp = sc.plan.tp;
  info.pp = sc.plan.pp;
  info.vp = sc.plan.vp;
  info.placement = sc.plan.placement();
  info.dp = sc.plan.dp;
  info.cp = sc.plan.cp;
  info.ep = sc.plan.ep;
  info.etp = sc.plan.etp;
  info.moe = sc.model.moe.enabled();
  if (sc.plan.cp > 1) {
    info.cp_algorithm = workload::cp_algorithm_name(sc.plan.cp_algorithm);
    if (sc.plan.cp_merge == workload::CpMerge::kPyTorch) info.cp_algorithm += ", PyTorch's merges";
  }
  info.microbatch_size = sc.plan.microbatch_size;
  info.global_batch = sc.plan.global_batch;
  info.microbatches = sc.plan.microbatches();
  info.seq = sc.model.seq;
  info.gpus = sc.cluster.gpus();
  info.peak_tflops = sc.cluster.node.gpu.peak_tflops;
  info.model_flops_per_iteration = w.costs->model_flops_per_iteration;
  info.hardware_flops_per_iteration = w.costs->hardware_flops_per_iteration;
  info.layer_forward_s = w.costs->layer_forward.to_seconds();
  info.tensor_clock_fraction = w.costs->tensor_clock_fraction;
  info.tensor_duty = w.costs->tensor_duty;
  info.burn_fraction = sc.cluster.node.gpu.sustained_tensor_fraction;
  info.layer_backward_s = w.costs->layer_backward.to_seconds();
  info.recompute = workload::recompute_name(sc.plan.recompute);
  info.sequence_parallel = sc.plan.sequence_parallel;
  info.attention = workload::attention_name(sc.plan.attention);
  info.zero_stage = sc.plan.zero_stage;
  info.precision = sc.plan.precision == workload::Precision::kFp8    ? "fp8"
                   : sc.plan.precision == workload::Precision::kFp16 ? "fp16"
                                                                     : "bf16";
  if (sc.plan.precision == workload::Precision::kFp8) {
    info.fp8_recipe = workload::fp8_recipe_name(sc.plan.fp8_recipe);
    info.fp8_library = workload::fp8_library_name(sc.plan.fp8_runtime());
  }
  info.moment_dtype = workload::moment_dtype_name(sc.plan.moment_dtype);
  if (sc.plan.offload != workload::Offload::kNone) {
    info.offload = sc.plan.offload == workload::Offload::kOptimizer ? "optimizer" : "optimizer+params";
    info.offload_grad_copy = sc.plan.grad_copy() == workload::OffloadGradCopy::kBlocking ? "blocking" : "async";
  }
  if ((sc.plan.offload_modules & workload::kOffloadExpertFc1) != 0) info.offload_modules.emplace_back("expert_fc1");
  if ((sc.plan.offload_modules & workload::kOffloadMoeAct) != 0) info.offload_modules.emplace_back("moe_act");
  info.checkpoint_in_cpu = sc.plan.checkpoint_in_cpu;
  info.sim_wall_s = w.wall_s;
  if (sc.plan.offload != workload::Offload::kNone || sc.plan.offload_modules != 0 || sc.plan.checkpoint_in_cpu) {
    // GPU g runs pipeline rank g / (dp x tp); a node holds GPUs n x G .. (n + 1) x G - 1.
    // Per node as built, not per NVLink domain the loader folded nodes into
    // (config/read_cluster.cpp): a domain of k nodes holds k hosts.
    const long long fold = std::max(1, sc.cluster.node.nodes_per_nvlink_domain);
    const long long per_node = sc.cluster.node.gpus_per_node / fold,
                    per_rank_gpus = static_cast<long long>(sc.plan.replicas()) * sc.plan.tp;
    std::vector<double> per_rank(static_cast<std::size_t>(sc.plan.pp), 0.0);
    for (int s = 0; s < sc.plan.stages(); ++s) {
      per_rank[static_cast<std::size_t>(sc.plan.rank_of_stage(s))] += static_cast<double>(w.costs->stages[s].host_state_bytes);
    }
    // Offloaded activations: the most a pipeline rank's GPU holds on the host at once.
    const std::vector<double> activations = offloaded_activation_peaks(*w.sim);
    std::vector<double> rank_activations(per_rank.size(), 0.0);
    for (std::size_t q = 0; q < activations.size(); ++q) {
      const auto rank = static_cast<std::size_t>(w.sim->gpu_of_rank[q] / per_rank_gpus);
      rank_activations[rank] = std::max(rank_activations[rank], activations[q]);
    }
    for (std::size_t r = 0; r < per_rank.size(); ++r) per_rank[r] += rank_activations[r];
    for (long long n = 0; n < sc.cluster.nodes * fold; ++n) {
      double bytes = 0.0;
      for (long long g = n * per_node; g < (n + 1) * per_node;) {
        const long long rank = g / per_rank_gpus, end = std::min((rank + 1) * per_rank_gpus, (n + 1) * per_node);
        bytes += static_cast<double>(end - g) * per_rank[static_cast<std::size_t>(rank)];
        g = end;
      }
      info.host_memory_per_node_bytes = std::max(info.host_memory_per_node_bytes, bytes);
    }
    info.host_memory_capacity_bytes = sc.cluster.node.host_memory_gb * 1e9 / static_cast<double>(fold);
  }
  return report::summarize(*w.sim, info, detail);
}

}  // namespace trainsim::driver
