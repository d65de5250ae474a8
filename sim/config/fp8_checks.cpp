// parallel.precision "fp8" against the GPU and the plan: FP8 tensor cores,
// and a recipe the GPU, the library and the plan can run.
#include "config/sections.hpp"

namespace trainsim::config::detail {

// FP8 needs FP8 tensor cores and a recipe the GPU and the plan can run.
void check_fp8(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const hw::GpuSpec& gpu = sc.cluster.node.gpu;
  const bool fp8 = p.precision == workload::Precision::kFp8;
  if (!fp8) {
    if (p.fp8_param_gather) {
      ctx.fail("parallel.fp8_param_gather", "applies only with parallel.precision = \"fp8\"", {"parallel.precision"});
    }
    return;
  }
  if (gpu.peak_fp8_tflops <= 0.0 || gpu.gemm_fp8_max_tflops <= 0.0) {
    ctx.fail("parallel.precision",
             fmt::format("\"fp8\" needs FP8 tensor cores, and the GPU {} (cluster.node.gpu) has none{}; expected "
                         "\"bf16\" or \"fp16\", or a GPU with FP8 (Hopper, Blackwell)",
                         gpu.name,
                         gpu.peak_fp8_tflops > 0.0 ? " measured (no gemm_fp8_tflops / gemm_fp8_max_tflops)"
                                                   : " (no peak_fp8_tflops)"),
             {"cluster.node.gpu"});
  }
  if (p.fp8_recipe == workload::Fp8Recipe::kMxfp8 && gpu.peak_fp4_tflops <= 0.0) {
    ctx.fail("parallel.fp8_recipe",
             fmt::format("\"mxfp8\" needs Blackwell's block-scaled tensor cores, which the GPU {} lacks (the presets "
                         "mark them by an FP4 peak, peak_fp4_tflops); expected \"delayed\", \"tensorwise\", "
                         "\"rowwise\" or \"blockwise\"",
                         gpu.name),
             {"cluster.node.gpu"});
  }
  if (!workload::fp8_library_has(p.fp8_runtime(), p.fp8_recipe)) {
    ctx.fail("parallel.fp8_library",
             fmt::format("{} has no \"{}\" recipe; expected {}", workload::fp8_library_name(p.fp8_runtime()),
                         workload::fp8_recipe_name(p.fp8_recipe),
                         p.fp8_runtime() == workload::Fp8Library::kTorchao
                             ? "\"tensorwise\", \"rowwise\" or \"mxfp8\" (or fp8_library \"transformer-engine\")"
                             : "\"delayed\", \"tensorwise\", \"blockwise\" or \"mxfp8\" (or fp8_library \"torchao\")"),
             {"parallel.fp8_recipe"});
  }
  if (p.fp8_param_gather) {
    if (p.zero_stage != 3) {
      ctx.fail("parallel.fp8_param_gather",
               fmt::format("gathers ZeRO-3's parameter shards in FP8; expected parallel.zero_stage 3, got {}",
                           p.zero_stage),
               {"parallel.zero_stage"});
    }
    if (p.fp8_recipe != workload::Fp8Recipe::kTensorwise && p.fp8_recipe != workload::Fp8Recipe::kDelayed) {
      ctx.fail("parallel.fp8_param_gather",
               fmt::format("FP8 weights are gathered with one scale a tensor, under the \"tensorwise\" and "
                           "\"delayed\" recipes only; got \"{}\"",
                           workload::fp8_recipe_name(p.fp8_recipe)),
               {"parallel.fp8_recipe"});
    }
  }
}

}  // namespace trainsim::config::detail
