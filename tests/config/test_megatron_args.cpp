// Megatron-LM's arguments as a trainsim config (config/megatron_args.hpp).
// The fixtures in megatron/ set out the flags of two launches that ship with
// Megatron-LM, beside configs of the same runs written by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/json_text.hpp"
#include "config/load.hpp"
#include "config/megatron_args.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_megatron_args_test {

using namespace trainsim;
using namespace trainsim::config;

namespace {

const std::string kDir = TRAINSIM_SOURCE_DIR "/tests/config/megatron";

std::vector<std::string> script_args(const std::string& name) {
  return megatron_args_from_script(read_text(kDir + "/" + name, "fixture"), name);
}

double iteration_s(const Scenario& sc) { return driver::summarize(sc, driver::simulate(sc), "x").iteration_time_s; }

std::string error_of(const std::vector<std::string>& args, const ImportCluster& cluster = {"dgx-h100", 1, ""}) {
  try {
    (void)config_from_megatron(args, cluster, "args");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A small valid launch: 8 layers, tp 2 on one DGX H100.
std::vector<std::string> small() {
  return {"--num-layers", "8", "--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "1024",
          "--padded-vocab-size", "32000", "--micro-batch-size", "1", "--tensor-model-parallel-size", "2", "--bf16"};
}

}  // namespace

TEST_CASE("Megatron-LM's example launches import to the runs written by hand") {
  // GPT-3 175B: tp 8 x pp 16 on 128 nodes of 8 leaves dp 8; its vocabulary
  // comes from the GPT-2 tokenizer files, given here as Megatron-LM pads it.
  std::vector<std::string> gpt3 = script_args("gpt3-175b.sh");
  gpt3.insert(gpt3.end(), {"--padded-vocab-size", "51200"});
  const MegatronImport g = config_from_megatron(gpt3, {"dgx-a100", 128, ""}, "gpt3-175b.sh");
  CHECK(g.config["parallel"]["dp"] == 8);
  CHECK(g.config["parallel"]["precision"] == "fp16");
  CHECK(g.not_modelled.empty());
  CHECK(std::find(g.ignored.begin(), g.ignored.end(), "--lr-decay-iters") != g.ignored.end());
  const Scenario imported = load_document(g.config, "gpt3-175b.sh", ".");
  const Scenario by_hand = load_file(kDir + "/gpt3-175b.json");
  CHECK(imported.model.total_params() == by_hand.model.total_params());
  CHECK(iteration_s(imported) == iteration_s(by_hand));
  // Llama 3 8B in FP8: its precision array filled in an if, SwiGLU and GQA,
  // the vocabulary among the data flags, sequence parallelism at tp 1 turned off.
  const MegatronImport l = config_from_megatron(script_args("llama3-8b-fp8.sh"), {"dgx-h100", 1, ""}, "l.sh");
  CHECK(l.config["model"]["arch"] == "llama");
  CHECK(l.config["model"]["kv_heads"] == 8);
  CHECK(l.config["parallel"]["fp8_recipe"] == "delayed");
  CHECK(l.config["parallel"]["fp8_library"] == "transformer-engine");
  // --attention-backend fused on an H100: Transformer Engine's cuDNN attention.
  CHECK(l.config["parallel"]["attention"] == "cudnn");
  CHECK(!l.config["parallel"].contains("sequence_parallel"));
  REQUIRE(l.warnings.size() == 2);
  CHECK(l.warnings[0] == "l.sh: --sequence-parallel: with --tensor-model-parallel-size 1: off, as Megatron-LM turns it off");
  const Scenario llama = load_document(l.config, "l.sh", ".");
  const Scenario llama_by_hand = load_file(kDir + "/llama3-8b-fp8.json");
  CHECK(llama.model.total_params() == llama_by_hand.model.total_params());
  CHECK(iteration_s(llama) == iteration_s(llama_by_hand));
}

TEST_CASE("Megatron-LM's defaults and derived settings") {
  // SwiGLU without --ffn-hidden-size: 2/3 of 4h rounded down to 64s, 4 x 1024 x 2 / 3 = 2730 -> 2688.
  std::vector<std::string> args = small();
  args.insert(args.end(), {"--swiglu", "--untie-embeddings-and-output-weights", "--vocab-size", "50257"});
  args.erase(args.begin() + 8, args.begin() + 10);  // no --padded-vocab-size
  MegatronImport m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["model"]["ffn"] == 2688);
  // --vocab-size 50257 padded to a multiple of 128 x tp 2 = 256: 50432.
  CHECK(m.config["model"]["vocab"] == 50432);
  CHECK(m.config["parallel"]["dp"] == 4);
  CHECK(m.config["parallel"]["grad_dtype"] == "fp32");
  CHECK(!m.config["parallel"].contains("optimizer_moment_dtype"));  // FP32 moments: the default
  // The precision-aware optimizer with both moments in BF16 (DeepSeek-V3's
  // ModelZoo recipe); the two in different types is refused.
  std::vector<std::string> moments = args;
  moments.insert(moments.end(), {"--use-precision-aware-optimizer", "--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype",
                                 "bf16", "--use-distributed-optimizer"});
  CHECK(config_from_megatron(moments, {"dgx-h100", 1, ""}, "args").config["parallel"]["optimizer_moment_dtype"] ==
        "bf16");
  std::vector<std::string> mixed = args;
  mixed.insert(mixed.end(), {"--use-precision-aware-optimizer", "--exp-avg-dtype", "bf16"});
  CHECK(error_of(mixed) == "args: --exp-avg-dtype: bf16 with --exp-avg-sq-dtype fp32: the two moments in different "
                           "types are not modelled (parallel.optimizer_moment_dtype holds both)");
  // No --attention-backend (auto) on an H100: Transformer Engine's cuDNN
  // attention; on an A100, FlashAttention (no entry: the default); asked for
  // fused on an A100, FlashAttention's figures with a warning; local is unfused.
  CHECK(m.config["parallel"]["attention"] == "cudnn");
  MegatronImport a100 = config_from_megatron(args, {"dgx-a100", 1, ""}, "args");
  CHECK(!a100.config["parallel"].contains("attention"));
  std::vector<std::string> fused = args;
  fused.insert(fused.end(), {"--attention-backend", "fused"});
  a100 = config_from_megatron(fused, {"dgx-a100", 1, ""}, "args");
  CHECK(!a100.config["parallel"].contains("attention"));
  REQUIRE(!a100.warnings.empty());
  CHECK(a100.warnings.back() == "args: --attention-backend: fused: cuDNN's attention is timed at FlashAttention's "
                                "figures, the GPU of --cluster dgx-a100 having no cuDNN ones");
  std::vector<std::string> local = args;
  local.insert(local.end(), {"--attention-backend", "local"});
  CHECK(config_from_megatron(local, {"dgx-h100", 1, ""}, "args").config["parallel"]["attention"] == "unfused");
  // 8 layers over pp 2 in virtual stages of 2 layers: vp 2, interleaved.
  args = small();
  args.insert(args.end(), {"--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "2",
                           "--sequence-parallel", "--recompute-granularity", "full", "--recompute-method", "block",
                           "--recompute-num-layers", "1", "--frobnicate", "3"});
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["parallel"]["vp"] == 2);
  CHECK(m.config["parallel"]["schedule"] == "interleaved-1f1b");
  CHECK(m.config["parallel"]["recompute_layers"] == 1);
  CHECK(m.config["parallel"]["sequence_parallel"] == true);
  CHECK(m.not_modelled == std::vector<std::string>{"--frobnicate"});
  // MoE: DeepSeek's layer pattern, the flex dispatcher through DeepEP.
  args = small();
  args.insert(args.end(), {"--num-experts", "8", "--moe-router-topk", "2", "--moe-ffn-hidden-size", "512",
                           "--moe-layer-freq", "([0]*1+[1]*7)", "--ffn-hidden-size", "4096", "--expert-model-parallel-size",
                           "4", "--moe-token-dispatcher-type", "flex", "--moe-enable-deepep", "--sequence-parallel",
                           "--swiglu", "--untie-embeddings-and-output-weights"});
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["model"]["moe"]["dense_layers"] == 1);
  CHECK(m.config["model"]["ffn"] == 4096);
  CHECK(m.config["parallel"]["moe_dispatcher"] == "deepep");
  CHECK(m.config["parallel"]["ep"] == 4);
  CHECK_NOTHROW(load_document(m.config, "args", "."));
  // Fine-grained activation offloading of the experts' inputs.
  args.insert(args.end(), {"--fine-grained-activation-offloading", "--offload-modules", "expert_fc1", "moe_act"});
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["parallel"]["offload_modules"] == nlohmann::json::array({"expert_fc1", "moe_act"}));
  CHECK(m.not_modelled.empty());
  CHECK(load_document(m.config, "args", ".").plan.offload_modules ==
        (workload::kOffloadExpertFc1 | workload::kOffloadMoeAct));
  // Megatron FSDP gathers and reduces over one process group, unless
  // --create-all-gather-group gives the gathers their own.
  args = small();
  args.insert(args.end(), {"--use-megatron-fsdp", "--use-distributed-optimizer"});
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["parallel"]["zero_stage"] == 3);
  CHECK(!m.config["parallel"].contains("fsdp_reduce_scatter_group"));  // "shared", the default
  args.push_back("--create-all-gather-group");
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["parallel"]["fsdp_reduce_scatter_group"] == "separate");
  CHECK(m.not_modelled.empty());
  CHECK(load_document(m.config, "args", ".").plan.fsdp_separate_reduce_scatter_group);
  // Multi-head Latent Attention without --q-lora-rank: queries without
  // compression (0); on an H100 attention runs as cuDNN's fused kernel.
  args = small();
  args.insert(args.end(), {"--swiglu", "--multi-latent-attention", "--kv-lora-rank", "128", "--qk-head-dim", "64",
                           "--qk-pos-emb-head-dim", "32", "--v-head-dim", "64"});
  m = config_from_megatron(args, {"dgx-h100", 1, ""}, "args");
  CHECK(m.config["model"]["q_lora_rank"] == 0);
  CHECK(m.config["parallel"]["attention"] == "cudnn");
  const Scenario mla = load_document(m.config, "args", ".");
  CHECK(mla.model.mla.q_lora_rank == 0);
  CHECK(iteration_s(mla) > 0.0);
  args.insert(args.end(), {"--q-lora-rank", "256"});
  CHECK(config_from_megatron(args, {"dgx-h100", 1, ""}, "args").config["model"]["q_lora_rank"] == 256);
}

TEST_CASE("Megatron-LM arguments trainsim cannot map are errors naming the flag") {
  std::vector<std::string> args = small();
  args.insert(args.end(), {"--fp16"});
  CHECK(error_of(args) == "args: --fp16: with --bf16: give one of them");
  args = small();
  args.erase(args.begin() + 10, args.begin() + 12);
  CHECK(error_of(args) == "args: --micro-batch-size: is missing");
  args = small();
  args.erase(args.begin() + 8, args.begin() + 10);
  CHECK(error_of(args) == "args: --vocab-size: is missing: the vocabulary comes from the tokenizer files, which import "
                          "does not read; add --padded-vocab-size N (or --vocab-size N)");
  CHECK(error_of(small(), {"dgx-h100", 0, ""}) ==
        "args: --tensor-model-parallel-size: tp x cp x pp = 2 x 1 x 1 does not divide the 0 GPUs of 0 dgx-h100 nodes");
  CHECK(error_of(small(), {"dgx-h101", 1, ""}).rfind("--cluster: unknown node preset \"dgx-h101\" (did you mean \"dgx-h100\"?); known presets: ", 0) == 0);
  CHECK(error_of({"8", "--num-layers"}) == "args: 8: expected a flag (--name), got a value before any flag");
  args = small();
  args.insert(args.end(), {"--num-experts", "8", "--moe-layer-freq", "[1,0,1,0,1,0,1,0]"});
  CHECK(error_of(args) == "args: --moe-layer-freq: \"[1,0,1,0,1,0,1,0]\": expected n (every n-th layer a MoE one) or "
                          "([0]*k+[1]*m) (the first k dense); other patterns are not modelled");
  args = small();
  args.insert(args.end(), {"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "2"});
  CHECK(error_of(args) == "args: --recompute-method: uniform with --recompute-num-layers 2: only uniform over 1 layer "
                          "(every layer redone) and block (the first n of a stage) are modelled");
  args = small();
  args.insert(args.end(), {"--fine-grained-activation-offloading"});
  CHECK(error_of(args) == "args: --fine-grained-activation-offloading: needs --offload-modules (the modules whose "
                          "inputs go to the host)");
  CHECK_THROWS_WITH_AS(megatron_args_from_script("echo hello\n", "s.sh"),
                       "s.sh: no line runs a pretrain_*.py script (expected e.g. torchrun ... pretrain_gpt.py ARGS)",
                       ConfigError);
}

TEST_CASE("a launch script's variables, arrays and continuations") {
  // X takes its default, Y the value set before it; A is filled over two
  // lines and appended to; a comment and a backslash continuation.
  const std::string script =
      "X=${X:-4}\n"
      "Y=7\n"
      "Z=${Y:-9}  # Y is set\n"
      "A=(--a $X\n"
      "   --b \"two words\")\n"
      "A+=(--c)\n"
      "python pretrain_gpt.py ${A[@]} \\\n"
      "   --d $Z '--e 5'\n";
  CHECK(megatron_args_from_script(script, "s.sh") ==
        std::vector<std::string>{"--a", "4", "--b", "two", "words", "--c", "--d", "7", "--e", "5"});
}

}  // namespace config_megatron_args_test
