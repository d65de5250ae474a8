// Whole what-ifs in process, from costing to timeline, as `sim_wall_s`
// reports them: the GPT-3 175B and Llama 3 405B examples in symmetric
// fidelity (the configs are loaded once, outside the timed loop), repeated
// the way a sweep repeats them (freed memory kept for the next one, as
// `trainsim sweep` does: on the development VM a page fault costs ~14 us).
// Run: build/tools/bench/whatif_bench
#include <benchmark/benchmark.h>

#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "sweep/runner.hpp"

using namespace trainsim;

// What-ifs of `sc` in the timed loop, with the events of the last.
static void time_whatifs(benchmark::State& state, const config::Scenario& sc) {
  std::size_t events = 0;
  for (auto _ : state) {
    const driver::WhatIf w = driver::simulate(sc);
    events = w.sim->timeline.events;
    benchmark::DoNotOptimize(events);
  }
  state.counters["events"] = static_cast<double>(events);
}

static config::Scenario load_example(const std::string& config) {
  sweep::keep_freed_memory();
  return config::load_file(std::string(TRAINSIM_SOURCE_DIR) + "/" + config);
}

static void BM_WhatIf(benchmark::State& state, const std::string& config) { time_whatifs(state, load_example(config)); }
BENCHMARK_CAPTURE(BM_WhatIf, gpt3_175b_1024xa100, "configs/examples/gpt3-175b-1024xa100.json")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WhatIf, llama3_405b_16384xh100, "configs/examples/llama3-405b-16384xh100.json")
    ->Unit(benchmark::kMillisecond);

// ZeRO-3 unit by unit: every block gathered, used, freed and its gradients
// reduce-scattered on its own.
BENCHMARK_CAPTURE(BM_WhatIf, llama31_70b_256xh100_fsdp, "configs/examples/llama3.1-70b-256xh100-fsdp.json")
    ->Unit(benchmark::kMillisecond);

// Context parallelism (a K/V ring over 8 GPUs, 128K tokens) and FP8 with
// CP, TP, PP and DP together (1,024 H100s, full fidelity: its placement is
// not uniform).
BENCHMARK_CAPTURE(BM_WhatIf, llama3_8b_128k_cp8_8xh100, "configs/examples/llama3-8b-128k-cp8-8xh100.json")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WhatIf, llama31_405b_fp8_1024xh100, "configs/examples/llama3.1-405b-fp8-1024xh100.json")
    ->Unit(benchmark::kMillisecond);

// Mixtures of experts: Qwen3-235B on 256 H100s (94 MoE layers, ep 32 through
// DeepEP, the 1F1B A2A overlap pairing forwards and backwards), against a
// dense model of its layer count above (Llama 3 405B, 126 layers).
BENCHMARK_CAPTURE(BM_WhatIf, qwen3_235b_256xh100, "configs/examples/qwen3-235b-256xh100.json")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WhatIf, mixtral_8x7b_64xh100, "configs/examples/mixtral-8x7b-64xh100.json")
    ->Unit(benchmark::kMillisecond);

// DeepSeek-V3 on 2,048 H800s (symmetric: 16 ranks standing for all) under
// DualPipe, against the same plan and 61 layers with every MoE block a
// dense MLP (experts, expert parallelism and their overlap taken out).
static void BM_DeepSeekV3(benchmark::State& state, bool dense) {
  config::Scenario sc = load_example("configs/examples/deepseek-v3-2048xh800-dualpipe.json");
  if (dense) {
    sc.model.moe = workload::MoeSpec{};
    sc.plan.ep = 1;
    sc.plan.overlap.moe_a2a = false;
    sc.plan.recompute_modules &= ~(workload::kModuleMoe | workload::kModuleMoeAct);
  }
  time_whatifs(state, sc);
}
BENCHMARK_CAPTURE(BM_DeepSeekV3, moe_2048xh800, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DeepSeekV3, dense_same_layers, true)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
