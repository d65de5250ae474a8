// parallel: the plan (degrees, batch, schedule, recompute, ZeRO, precision,
// stage layers).
#include "config/sections.hpp"
#include "workload/activation_offload.hpp"

#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::config::detail {

workload::Plan read_plan(const json& doc, const Context& ctx) {
  const Section s(doc, "parallel", ctx);
  workload::Plan p;
  p.tp = s.positive_int_or("tp", 1, kMaxCount);
  p.pp = s.positive_int_or("pp", 1, kMaxCount);
  p.dp = s.positive_int_or("dp", 1, kMaxCount);
  p.cp = s.positive_int_or("cp", 1, kMaxCount);
  if (s.has("cp_algorithm") && p.cp == 1) {
    ctx.fail(s.path("cp_algorithm"), "applies only with parallel.cp > 1 (context parallelism)", {"parallel.cp"});
  }
  p.cp_algorithm = s.choice<workload::CpAlgorithm>("cp_algorithm", workload::CpAlgorithm::kRing,
                                                   {{"ring", workload::CpAlgorithm::kRing},
                                                    {"all-gather", workload::CpAlgorithm::kAllGather},
                                                    {"all-to-all", workload::CpAlgorithm::kAllToAll}});
  if (s.has("cp_merge") && p.cp == 1) {
    ctx.fail(s.path("cp_merge"), "applies only with parallel.cp > 1 (context parallelism)", {"parallel.cp"});
  }
  p.cp_merge = s.choice<workload::CpMerge>("cp_merge", workload::CpMerge::kFused,
                                           {{"fused", workload::CpMerge::kFused},
                                            {"pytorch", workload::CpMerge::kPyTorch}});
  p.ep = s.positive_int_or("ep", 1, kMaxCount);
  p.etp = s.positive_int_or("etp", 1, kMaxCount);
  p.moe_dispatcher = s.choice<workload::MoeDispatcher>("moe_dispatcher", workload::MoeDispatcher::kAllToAll,
                                                       {{"alltoall", workload::MoeDispatcher::kAllToAll},
                                                        {"allgather", workload::MoeDispatcher::kAllGather},
                                                        {"deepep", workload::MoeDispatcher::kDeepEp}});
  p.vp = s.positive_int_or("vp", 1, kMaxCount);
  p.microbatch_size = s.positive_int_or("microbatch_size", 1, kMaxCount);
  p.global_batch = s.positive_int("global_batch", 1'000'000'000);
  p.schedule = s.string_or("schedule", "1f1b");
  p.twobp_concat = s.boolean_or("twobp_concat", false);
  p.recompute = s.choice<workload::Recompute>("recompute", workload::Recompute::kNone,
                                               {{"none", workload::Recompute::kNone},
                                                {"selective", workload::Recompute::kSelective},
                                                {"full", workload::Recompute::kFull},
                                                {"selective-op", workload::Recompute::kSelectiveOp}});
  if (s.has("recompute_modules")) {
    if (p.recompute != workload::Recompute::kSelective) {
      ctx.fail(s.path("recompute_modules"),
               "applies only with parallel.recompute = \"selective\" (the parts selective recompute redoes)",
               {"parallel.recompute"});
    }
    static const std::vector<std::pair<std::string, workload::RecomputeModule>> names = {
        {"core_attn", workload::kModuleCoreAttn}, {"layernorm", workload::kModuleLayernorm},
        {"mlp", workload::kModuleMlp},           {"moe", workload::kModuleMoe},
        {"moe_act", workload::kModuleMoeAct}, {"mla_up_proj", workload::kModuleMlaUpProj}};
    std::string expected = "a non-empty list of";
    for (std::size_t i = 0; i < names.size(); ++i) expected += (i ? ", \"" : " \"") + names[i].first + "\"";
    const json& v = s.required("recompute_modules", expected);
    if (!v.is_array() || v.empty()) ctx.fail(s.path("recompute_modules"), "expected " + expected + ", got " + show(v));
    p.recompute_modules = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string where = fmt::format("{}[{}]", s.path("recompute_modules"), i);
      const auto it = v[i].is_string() ? std::find_if(names.begin(), names.end(),
                                                      [&](const auto& n) { return n.first == v[i].get<std::string>(); })
                                       : names.end();
      if (it == names.end()) {
        ctx.fail(where, "expected one of" + expected.substr(std::string("a non-empty list of").size()) + ", got " + show(v[i]));
      }
      if ((p.recompute_modules & it->second) != 0) ctx.fail(where, fmt::format("\"{}\" is listed twice", it->first));
      p.recompute_modules |= it->second;
    }
  }
  if (s.has("offload_modules")) {
    // Megatron-Core's --offload-modules choices; the MoE block's two are modelled.
    static const std::vector<std::pair<std::string, workload::OffloadModule>> names = {
        {"expert_fc1", workload::kOffloadExpertFc1}, {"moe_act", workload::kOffloadMoeAct}};
    static const std::vector<std::string> not_modelled = {"attn_norm", "qkv_linear", "core_attn", "attn_proj",
                                                          "mlp_norm"};
    const std::string expected = "a non-empty list of \"expert_fc1\", \"moe_act\"";
    const json& v = s.required("offload_modules", expected);
    if (!v.is_array() || v.empty()) ctx.fail(s.path("offload_modules"), "expected " + expected + ", got " + show(v));
    p.offload_modules = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string where = fmt::format("{}[{}]", s.path("offload_modules"), i);
      const std::string name = v[i].is_string() ? v[i].get<std::string>() : std::string();
      if (std::find(not_modelled.begin(), not_modelled.end(), name) != not_modelled.end()) {
        ctx.fail(where, fmt::format("offloading \"{}\" is not modelled yet; expected \"expert_fc1\" or \"moe_act\"", name));
      }
      const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == name; });
      if (!v[i].is_string() || it == names.end()) ctx.fail(where, "expected \"expert_fc1\" or \"moe_act\", got " + show(v[i]));
      if ((p.offload_modules & it->second) != 0) ctx.fail(where, fmt::format("\"{}\" is listed twice", it->first));
      p.offload_modules |= it->second;
    }
  }
  p.checkpoint_in_cpu = s.boolean_or("checkpoint_in_cpu", false);
  if (s.has("recompute_layers")) {
    if (p.recompute != workload::Recompute::kFull) {
      ctx.fail(s.path("recompute_layers"), "applies only with parallel.recompute = \"full\" (the layers fully recomputed)",
               {"parallel.recompute"});
    }
    p.recompute_layers = s.positive_int("recompute_layers", kMaxModelDim);
  }
  p.sequence_parallel = s.boolean_or("sequence_parallel", false);
  p.attention = s.choice<workload::Attention>("attention", workload::Attention::kFlash,
                                               {{"flash", workload::Attention::kFlash},
                                                {"flash-v1", workload::Attention::kFlashV1},
                                                {"cudnn", workload::Attention::kCudnn},
                                                {"unfused", workload::Attention::kUnfused}});
  p.elementwise = s.choice<workload::Elementwise>("elementwise", workload::Elementwise::kFused,
                                                  {{"fused", workload::Elementwise::kFused},
                                                   {"eager", workload::Elementwise::kEager}});
  p.kv_repeat = s.boolean_or("kv_repeat", false);
  p.separate_projections = s.boolean_or("separate_projections", false);
  // Without sequence parallelism it has nothing to lay out (a sweep may
  // take sequence_parallel as an axis beside it).
  p.sp_batch_first = s.boolean_or("sp_batch_first", false);
  if (s.has("zero_stage")) {
    const json& z = s.required("zero_stage", "0, 1, 2 or 3");
    if (!z.is_number_integer() || z.get<long long>() < 0 || z.get<long long>() > 3) {
      ctx.fail(s.path("zero_stage"), "expected 0, 1, 2 or 3, got " + show(z));
    }
    p.zero_stage = z.get<int>();
  }
  // Megatron-Core's distributed optimizer is ZeRO-1 (see Plan).
  p.distributed_optimizer = s.boolean_or("distributed_optimizer", false);
  if (p.distributed_optimizer) {
    if (s.has("zero_stage") && p.zero_stage != 1) {
      ctx.fail(s.path("distributed_optimizer"),
               fmt::format("shards the optimizer state as ZeRO stage 1 does, but parallel.zero_stage = {}; "
                           "drop one of the two",
                           p.zero_stage),
               {"parallel.zero_stage"});
    }
    p.zero_stage = 1;
  }
  // ZeRO-3's units: only with zero_stage 3, where they mean something.
  for (const std::string& key : zero3_plan_keys()) {
    if (s.has(key) && p.zero_stage != 3) {
      ctx.fail(s.path(key), fmt::format("applies only with parallel.zero_stage = 3 (parameters sharded unit by unit), "
                                        "got zero_stage = {}",
                                        p.zero_stage),
               {"parallel.zero_stage"});
    }
  }
  p.fsdp_unit_layers = s.positive_int_or("fsdp_unit_layers", 1, kMaxModelDim);
  if (s.has("fsdp_prefetch")) {
    const json& v = s.required("fsdp_prefetch", "a whole number of units, 0 or more");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 64) {
      ctx.fail(s.path("fsdp_prefetch"), "expected a whole number of units from 0 to 64, got " + show(v));
    }
    p.fsdp_prefetch = v.get<int>();
  }
  if (s.has("fsdp_prefetch_params")) {
    if (s.has("fsdp_prefetch")) {
      ctx.fail(s.path("fsdp_prefetch_params"),
               "sets the prefetch window in parameters (DeepSpeed's stage3_prefetch_bucket_size), "
               "parallel.fsdp_prefetch in units (FSDP's); give one of the two",
               {"parallel.fsdp_prefetch"});
    }
    p.fsdp_prefetch_params = s.positive_number("fsdp_prefetch_params", 1.0, 1e15);
  }
  if (s.has("fsdp_max_live_params")) p.fsdp_max_live_params = s.positive_number("fsdp_max_live_params", 1.0, 1e15);
  if (s.has("fsdp_max_reuse_distance")) {
    p.fsdp_max_reuse_distance = s.non_negative_number("fsdp_max_reuse_distance", 1e15);  // recompute: plan_checks
  }
  if (s.has("fsdp_persistence_threshold")) {
    p.fsdp_persistence_threshold = s.non_negative_number("fsdp_persistence_threshold", 1e15);
  }
  p.reshard_after_forward = s.boolean_or("reshard_after_forward", true);
  p.fsdp_copy_out = s.boolean_or("fsdp_copy_out", false);
  p.fsdp_fp32_shards = s.choice<bool>("fsdp_param_shards", false, {{"16-bit", false}, {"fp32", true}});
  p.fsdp_separate_reduce_scatter_group =
      s.choice<bool>("fsdp_reduce_scatter_group", false, {{"shared", false}, {"separate", true}});
  p.grad_sync_after_last_backward = s.choice<bool>("fsdp_grad_sync", false,
                                                   {{"each-backward", false}, {"last-backward", true}});
  p.loss = s.choice<workload::LossKernel>("loss", workload::LossKernel::kVocabParallel,
                                         {{"vocab-parallel", workload::LossKernel::kVocabParallel},
                                          {"pytorch", workload::LossKernel::kPyTorch},
                                          {"compiled", workload::LossKernel::kCompiled}});
  p.offload = s.choice<workload::Offload>("offload", workload::Offload::kNone,
                                          {{"none", workload::Offload::kNone},
                                           {"optimizer", workload::Offload::kOptimizer},
                                           {"optimizer+params", workload::Offload::kOptimizerAndParams}});
  if (s.has("offload_grad_copy")) {
    p.offload_grad_copy = s.choice<workload::OffloadGradCopy>(
        "offload_grad_copy", workload::OffloadGradCopy::kAsync,
        {{"async", workload::OffloadGradCopy::kAsync}, {"blocking", workload::OffloadGradCopy::kBlocking}});
  }
  if (s.has("fsdp_shard_size")) {
    p.fsdp_shard_size = s.positive_int("fsdp_shard_size", kMaxCount);
  }
  if (s.has("grad_bucket_mib")) p.grad_bucket_mib = s.positive_number("grad_bucket_mib", 1.0, 1e6);
  p.grad_accumulation = s.choice<workload::GradAccumulation>("grad_accumulation", workload::GradAccumulation::kFused,
                                                             {{"fused", workload::GradAccumulation::kFused},
                                                              {"add", workload::GradAccumulation::kAdd},
                                                              {"cast-add", workload::GradAccumulation::kCastAdd}});
  p.precision = s.choice<workload::Precision>("precision", workload::Precision::kBf16,
                                              {{"bf16", workload::Precision::kBf16},
                                               {"fp16", workload::Precision::kFp16},
                                               {"fp8", workload::Precision::kFp8}});
  if (s.has("fp8_recipe") && p.precision != workload::Precision::kFp8) {
    ctx.fail(s.path("fp8_recipe"), "applies only with parallel.precision = \"fp8\"", {"parallel.precision"});
  }
  if (p.precision == workload::Precision::kFp8) {
    p.fp8_recipe = s.choice<workload::Fp8Recipe>("fp8_recipe", workload::Fp8Recipe::kTensorwise,
                                                 {{"delayed", workload::Fp8Recipe::kDelayed},
                                                  {"tensorwise", workload::Fp8Recipe::kTensorwise},
                                                  {"rowwise", workload::Fp8Recipe::kRowwise},
                                                  {"blockwise", workload::Fp8Recipe::kBlockwise},
                                                  {"mxfp8", workload::Fp8Recipe::kMxfp8}});
  }
  if (s.has("fp8_library")) {
    if (p.precision != workload::Precision::kFp8) {
      ctx.fail(s.path("fp8_library"), "applies only with parallel.precision = \"fp8\"", {"parallel.precision"});
    }
    p.fp8_library = s.choice<workload::Fp8Library>("fp8_library", workload::Fp8Library::kTorchao,
                                                   {{"transformer-engine", workload::Fp8Library::kTransformerEngine},
                                                    {"torchao", workload::Fp8Library::kTorchao}});
  }
  p.fp8_param_gather = s.boolean_or("fp8_param_gather", false);
  // The gradients are the weights' 16-bit type unless said otherwise.
  const auto sixteen = p.precision == workload::Precision::kFp16 ? workload::GradDtype::kFp16 : workload::GradDtype::kBf16;
  p.grad_dtype = s.choice<workload::GradDtype>("grad_dtype", sixteen,
                                               {{"bf16", workload::GradDtype::kBf16},
                                                {"fp16", workload::GradDtype::kFp16},
                                                {"fp32", workload::GradDtype::kFp32}});
  p.moment_dtype = s.choice<workload::MomentDtype>("optimizer_moment_dtype", workload::MomentDtype::kFp32,
                                                   {{"fp32", workload::MomentDtype::kFp32},
                                                    {"bf16", workload::MomentDtype::kBf16},
                                                    {"fp16", workload::MomentDtype::kFp16},
                                                    {"fp8", workload::MomentDtype::kFp8}});

  p.send_split = s.choice<workload::PipelineSendSplit>("pipeline_send_split", workload::PipelineSendSplit::kScatterGather,
                                                       {{"scatter-gather", workload::PipelineSendSplit::kScatterGather},
                                                        {"full", workload::PipelineSendSplit::kFull}});
  if (s.has("stage_layers")) {
    const json& v = s.required("stage_layers", "a list of layer counts, one per stage");
    if (!v.is_array()) ctx.fail(s.path("stage_layers"), "expected a list of layer counts, one per stage, got " + show(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      // The first stage holds the embedding and the last the output head, so
      // they have work with no layers (Megatron-LM forks pad the layers so
      // that these virtual stages hold none); every other stage needs one.
      const bool end = i == 0 || i + 1 == v.size();
      const long long least = end ? 0 : 1;
      if (!v[i].is_number_integer() || v[i].get<long long>() < least || v[i].get<long long>() > kMaxModelDim) {
        ctx.fail(fmt::format("{}[{}]", s.path("stage_layers"), i),
                 end ? "expected a whole number of layers, 0 or more (the first and last stages hold the embedding "
                       "and the output head), got " + show(v[i])
                     : "expected a positive integer (only the first and last stages may hold no layers), got " +
                           show(v[i]));
      }
      p.stage_layers.push_back(v[i].get<int>());
    }
  }
  // "burst" is no pipeline schedule: it gives each layer its own GPUs (lower/burst.hpp).
  if (p.schedule != "burst" && !schedule::is_csv_name(p.schedule) && schedule::find_schedule(p.schedule) == nullptr) {
    std::vector<std::string> names = schedule::schedule_names();
    names.emplace_back("burst");
    const auto near = closest(p.schedule, names);
    ctx.fail(s.path("schedule"), fmt::format("unknown schedule \"{}\"{}; known: {} (see `trainsim schedules`)",
                                             excerpt(p.schedule), near ? fmt::format(" (did you mean \"{}\"?)", *near) : "",
                                             join(names, ", ") + ", or csv:PATH"));
  }
  return p;
}

}  // namespace trainsim::config::detail
