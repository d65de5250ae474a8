#include "driver/layer_whatif.hpp"

#include <chrono>
#include <spdlog/spdlog.h>

#include "lower/burst.hpp"

namespace trainsim::driver {

namespace {

bool with_background(const config::Scenario& sc) {
  return sc.plan.schedule == "burst" && sc.burst.background.has_value();
}

workload::BurstCosts costs_of(const config::Scenario& sc) {
  // A background job slows the foreground's compute alike on every GPU.
  const double scale = with_background(sc) ? 1.0 + sc.burst.interference : 1.0;
  return workload::burst_costs(*sc.layer_model, sc.cluster, sc.plan.global_batch, scale);
}

}  // namespace

LayerRun burst_plan(const config::Scenario& sc) {
  LayerRun run;
  run.costs = costs_of(sc);
  if (!sc.burst.layer_gpus.empty()) {
    run.mode = "burst (given)";
    run.plan = workload::evaluate_plan(run.costs, sc.burst.layer_gpus);
  } else {
    run.mode = "burst (planned)";
    run.amplification_limit = sc.burst.amplification_limit;
    run.plan = workload::plan_burst(run.costs, sc.burst.amplification_limit);
  }
  return run;
}

workload::BurstPlan data_parallel_plan(const config::Scenario& sc, const workload::BurstCosts& costs) {
  return workload::evaluate_plan(costs, std::vector<int>(sc.layer_model->layers.size(), sc.cluster.gpus()));
}

WhatIf simulate_layers(const config::Scenario& sc, const Controls& controls) {
  const auto start = std::chrono::steady_clock::now();
  auto run = std::make_shared<LayerRun>();
  if (sc.plan.schedule == "burst") {
    *run = burst_plan(sc);
  } else {
    run->mode = "data parallel";
    run->costs = costs_of(sc);
    run->plan = data_parallel_plan(sc, run->costs);
  }
  std::vector<int> gpus;
  for (const workload::BurstLayerPlan& l : run->plan.layers) gpus.push_back(l.gpus);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    spdlog::debug("layer {} ({}): {} GPUs, {:.4f} ms compute, amplification {:.2f}", i, run->costs.names[i], gpus[i],
                  run->plan.layers[i].compute.to_seconds() * 1e3, run->plan.layers[i].amplification);
  }
  lower::BurstOptions options;
  options.collectives = sc.options.flow_collectives ? lower::CollectiveModel::kFlow : lower::CollectiveModel::kAnalytic;
  options.record_link_rates = controls.record_link_rates;
  options.limits = controls.limits;
  options.cuda_context_bytes = static_cast<std::int64_t>(sc.options.cuda_context_bytes);
  for (const auto& g : sc.options.gpu_speed) options.gpu_speed.push_back({g.gpu, g.factor});
  for (const auto& f : sc.options.links) options.link_faults.push_back({f.where, f.link, f.bandwidth_factor, f.failed});
  options.background = with_background(sc);
  options.interference = sc.burst.interference;
  if (options.background) {
    const auto& bg = *sc.burst.background;
    run->background_step_s = workload::model_step_time(bg.model, bg.batch, sc.cluster.node.gpu).to_seconds();
  }
  WhatIf w;
  w.sim = lower::lower_burst(*sc.layer_model, gpus, sc.plan.global_batch, sc.cluster, options);
  spdlog::info("lowered to {} tasks; simulating", w.sim->graph.size());
  lower::run_burst(*w.sim, options.background);
  w.layers = run;
  w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("simulated {} events in {:.3f} s", w.sim->timeline.events, w.wall_s);
  return w;
}

report::Summary summarize_layers(const config::Scenario& sc, const WhatIf& w, const std::string& config_label) {
  const LayerRun& run = *w.layers;
  const workload::LayerTable& table = *sc.layer_model;
  const int G = sc.cluster.gpus();
  report::RunInfo info;
  info.config = config_label;
  info.model = table.name;
  info.schedule = sc.plan.schedule == "burst" ? "burst" : "data parallel";
  info.dp = G;
  info.global_batch = sc.plan.global_batch;
  info.gpus = G;
  info.peak_tflops = sc.cluster.node.gpu.peak_tflops;
  // A layer table's layers are timed as tensor work throughout (their GEMMs
  // at the GPU's figures): they hold the burn, duty 1.
  info.burn_fraction = sc.cluster.node.gpu.sustained_tensor_fraction;
  if (info.burn_fraction < 1.0) {
    info.tensor_clock_fraction = info.burn_fraction;
    info.tensor_duty = 1.0;
  }
  // Forward + backward = 3 x the forward FLOPs, every sample once.
  info.model_flops_per_iteration = 3.0 * table.flops_per_sample() * sc.plan.global_batch;
  info.hardware_flops_per_iteration = info.model_flops_per_iteration;
  info.sim_wall_s = w.wall_s;
  report::Summary s = report::summarize(*w.sim, info);
  s.fidelity = "full";  // every GPU is simulated

  report::BurstStats b;
  b.mode = run.mode;
  for (std::size_t i = 0; i < run.plan.layers.size(); ++i) {
    const workload::BurstLayerPlan& l = run.plan.layers[i];
    b.layers.push_back({table.layers[i].name, l.gpus, l.compute.to_seconds(), l.amplification});
  }
  b.amplification = run.plan.amplification;
  b.amplification_limit = run.amplification_limit;
  b.predicted_iteration_s = run.plan.predicted.to_seconds();
  const double t = w.sim->timeline.makespan.to_seconds();
  b.foreground_iteration_s = t;
  for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
    if (w.sim->info[id].kind != lower::TaskKind::kCompute) continue;
    b.foreground_busy_gpu_s += (w.sim->timeline.end[id] - w.sim->timeline.start[id]).to_seconds();
  }
  if (with_background(sc)) {
    const auto& bg = *sc.burst.background;
    b.background = true;
    b.background_model = bg.model.name;
    b.background_batch = bg.batch;
    b.interference = sc.burst.interference;
    for (const auto& spans : w.sim->background) {
      for (const auto& [from, to] : spans) b.background_gpu_s += (to - from).to_seconds();
    }
    if (t > 0.0 && run.background_step_s > 0.0) {
      b.background_samples_per_s = b.background_gpu_s / t * bg.batch / run.background_step_s;
    }
  }
  b.cluster_utilisation = t > 0.0 ? (b.foreground_busy_gpu_s + b.background_gpu_s) / (G * t) : 0.0;
  s.burst = b;
  return s;
}

}  // namespace trainsim::driver
