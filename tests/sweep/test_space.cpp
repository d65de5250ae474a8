#include <doctest/doctest.h>

#include "config/error.hpp"
#include "sweep/space.hpp"
#include "sweep_fixture.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_space_test {

using namespace trainsim;
using sweep::testing::small_spec;

TEST_CASE("every (tp, pp) split of 8 GPUs, dp derived") {
  // tp auto: divisors of 8 within the node: 1, 2, 4, 8 (all divide 24 heads and
  // ffn 9216). pp auto: divisors of 8 that divide 24 layers: 1, 2, 4, 8.
  // tp x pp must divide 8: (1,1) (1,2) (1,4) (1,8) (2,1) (2,2) (2,4) (4,1) (4,2)
  // (8,1) = 10 plans; the other 6 of the 16 pairs are invalid.
  const sweep::Space space = sweep::enumerate(small_spec("{}"));
  REQUIRE(space.plans.size() == 10);
  CHECK(space.combinations == 16);
  CHECK(space.invalid.at("tp x pp x dp differs from the GPU count") == 6);
  CHECK(space.plans[0].key == "tp=1 pp=1 dp=8 vp=1 mbs=1 1f1b zero=0 sp=off rc=none");
  CHECK(space.plans[9].key == "tp=8 pp=1 dp=1 vp=1 mbs=1 1f1b zero=0 sp=off rc=none");
  for (std::size_t i = 0; i < space.plans.size(); ++i) {
    CHECK(space.plans[i].index == i);
    CHECK(space.plans[i].plan.gpus() == 8);
  }
}

TEST_CASE("schedules that refuse a shape are counted by reason") {
  // tp 2, pp 4, dp 1; vp 1 or 2; 1f1b refuses vp 2, interleaved-1f1b takes
  // both (24 layers / (4 x 2) = 3 per stage; 64 micro-batches, a multiple of 4).
  const sweep::Space space =
      sweep::enumerate(small_spec(R"({"tp": 2, "pp": 4, "vp": [1, 2], "schedule": ["1f1b", "interleaved-1f1b"]})"));
  CHECK(space.plans.size() == 3);
  CHECK(space.invalid.at("schedule 1f1b cannot lay out the shape") == 1);
}

TEST_CASE("the schedule axis takes zb-v, on two stages per rank only, placed in a V") {
  // tp 2, pp 4, dp 1; vp 1 or 2: 1f1b takes vp 1 alone, zb-v vp 2 alone, and
  // the zb-v plan's stages sit in a V (stage 7 of 8 on rank 0).
  const sweep::Space space =
      sweep::enumerate(small_spec(R"({"tp": 2, "pp": 4, "vp": [1, 2], "schedule": ["1f1b", "zb-v"]})"));
  REQUIRE(space.plans.size() == 2);
  CHECK(space.plans[1].key == "tp=2 pp=4 dp=1 vp=2 mbs=1 zb-v zero=0 sp=off rc=none");
  CHECK(space.plans[1].plan.rank_of_stage(7) == 0);
  CHECK(space.invalid.at("schedule zb-v cannot lay out the shape") == 1);
  CHECK(space.invalid.at("schedule 1f1b cannot lay out the shape") == 1);
}

TEST_CASE("a listed value that no valid plan uses is an error naming it and why") {
  auto error = [](const std::string& axes) {
    try {
      sweep::enumerate(small_spec(axes));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // 8 GPUs: no pp and dp make tp 16 (or 3) whole, across nodes or not.
  CHECK(error(R"({"tp": [2, 16]})") ==
        "small.json: axes.tp[1]: no valid plan uses this value (tp does not divide the GPU count)");
  CHECK(error(R"({"tp": [2, 3]})") ==
        "small.json: axes.tp[1]: no valid plan uses this value (tp does not divide the GPU count)");
  CHECK(error(R"({"pp": [2, 5]})") ==
        "small.json: axes.pp[1]: no valid plan uses this value (tp x pp x dp differs from the GPU count)");
  // 64 / (dp x 3) is never whole.
  CHECK(error(R"({"microbatch_size": [1, 3]})") ==
        "small.json: axes.microbatch_size[1]: no valid plan uses this value (global_batch is not a multiple of dp x "
        "microbatch_size)");
  // 1f1b refuses vp 2 where pp > 1; the first refusal met is at pp = 1.
  CHECK(error(R"({"vp": [1, 2]})") == "small.json: axes.vp[1]: no valid plan uses this value (vp > 1 with pp = 1 repeats the vp = 1 plan)");
  // Every listed value used by some plan, yet no plan valid: tp 4 needs pp 2, pp 4 needs tp 2.
  CHECK(error(R"({"tp": 8, "pp": 8})").rfind("small.json: axes.tp: no valid plan uses this value", 0) == 0);
}

TEST_CASE("tp across nodes only when allowed") {
  nlohmann::json doc = nlohmann::json::parse(R"({"model": "gpt-1.7b", "cluster": {"node": "dgx-a100", "nodes": 2},
      "global_batch": 64, "allow_cross_node_tp": true, "axes": {"tp": [8, 12], "pp": 1}})");
  // 16 GPUs: tp 12 does not divide them; tp 8 x pp 1 x dp 2.
  CHECK_THROWS_WITH_AS(sweep::enumerate(sweep::parse_spec(doc, "x.json", ".")),
                       "x.json: axes.tp[1]: no valid plan uses this value (tp does not divide the GPU count)",
                       config::ConfigError);
  // tp 16 divides the 16 GPUs but spans both nodes of 8: the flag is the way.
  doc["allow_cross_node_tp"] = false;
  doc["axes"]["tp"] = {8, 16};
  CHECK_THROWS_WITH_AS(sweep::enumerate(sweep::parse_spec(doc, "x.json", ".")),
                       "x.json: axes.tp[1]: no valid plan uses this value (tp group would cross a node (set "
                       "allow_cross_node_tp))",
                       config::ConfigError);
  // 24 heads over tp 16 do not divide: allowed across nodes, the model is the reason then.
  doc["allow_cross_node_tp"] = true;
  CHECK_THROWS_WITH_AS(sweep::enumerate(sweep::parse_spec(doc, "x.json", ".")),
                       "x.json: axes.tp[1]: no valid plan uses this value (model.heads, kv_heads or ffn does not divide "
                       "by tp)",
                       config::ConfigError);
}

TEST_CASE("an empty plan space is an error that counts the reasons") {
  // 7 layers and 7 heads on 8 GPUs: tp and pp can only be 1, so dp = 8, and a
  // global batch of 4 is no multiple of dp x 1. tp auto gives 1, 2, 4, 8 (3
  // refused for the heads), pp auto gives 1 (7 is prime).
  const nlohmann::json doc = nlohmann::json::parse(R"({"cluster": {"node": "dgx-a100", "nodes": 1}, "global_batch": 4,
      "model": {"name": "tiny", "arch": "gpt", "layers": 7, "hidden": 448, "heads": 7, "ffn": 1792, "seq": 128,
                "vocab": 1000}})");
  CHECK_THROWS_WITH_AS(sweep::enumerate(sweep::parse_spec(doc, "tiny.json", ".")),
                       "tiny.json: axes: no valid plan among 4 combinations (global_batch is not a multiple of dp x "
                       "microbatch_size: 1; model.heads, kv_heads or ffn does not divide by tp: 3)",
                       config::ConfigError);
}

TEST_CASE("the ZeRO-3 and overlap axes: each value checked as the config loader checks it") {
  // tp 1 x pp 1 x dp 8 under ZeRO-3; fsdp_shard_size 2, 4 or 3 (3 divides no
  // 8: refused); reshard after forward on or off.
  const sweep::Space space = sweep::enumerate(small_spec(
      R"({"tp": 1, "pp": 1, "zero_stage": 3, "fsdp_shard_size": [2, 4], "reshard_after_forward": [true, false]})"));
  REQUIRE(space.plans.size() == 4);
  CHECK(space.plans[0].key == "tp=1 pp=1 dp=8 vp=1 mbs=1 1f1b zero=3 sp=off rc=none shard=2");
  CHECK(space.plans[1].key == "tp=1 pp=1 dp=8 vp=1 mbs=1 1f1b zero=3 sp=off rc=none shard=2 reshard=off");
  CHECK(space.plans[3].plan.fsdp_shard_size == 4);
  CHECK(!space.plans[3].plan.reshard_after_forward);
  CHECK_THROWS_WITH_AS(sweep::enumerate(small_spec(R"({"tp": 1, "pp": 1, "zero_stage": 3, "fsdp_shard_size": [2, 3]})")),
                       "small.json: axes.fsdp_shard_size[1]: no valid plan uses this value (fsdp_shard_size does not "
                       "divide dp)",
                       config::ConfigError);
  // Without ZeRO-3 a shard size means nothing: the first listed value with
  // that reason is named.
  CHECK_THROWS_WITH_AS(sweep::enumerate(small_spec(R"({"tp": 1, "pp": 1, "zero_stage": 1, "fsdp_shard_size": 2})")),
                       "small.json: axes.zero_stage: no valid plan uses this value (fsdp_shard_size applies only "
                       "with zero_stage 3)",
                       config::ConfigError);
  // "auto": plain FSDP, and one node's replicas a group where that is HSDP
  // (dp 8 on one node: the whole of dp, so not).
  const sweep::Space automatic =
      sweep::enumerate(small_spec(R"({"tp": 1, "pp": 1, "zero_stage": 3, "fsdp_shard_size": "auto"})"));
  CHECK(automatic.plans.size() == 1);
  CHECK(automatic.invalid.at("no HSDP group of one node's replicas") == 1);
}

TEST_CASE("tp_comm_overlap: only with tp > 1 and sequence parallelism") {
  // tp 2 or 4, pp 4 (dp derived), sequence parallelism on or off, overlap
  // "auto" (off, on): the 2 x 2 plans without overlap, and the 2 with it and
  // sequence parallelism.
  const sweep::Space space = sweep::enumerate(
      small_spec(R"({"tp": [2, 4], "pp": 1, "sequence_parallel": [false, true], "tp_comm_overlap": "auto"})"));
  CHECK(space.plans.size() == 6);
  CHECK(space.invalid.at("tp_comm_overlap needs tp > 1 and sequence parallelism") == 2);
  int overlapped = 0;
  for (const auto& c : space.plans) {
    if (!c.plan.overlap.tp_comm) continue;
    ++overlapped;
    CHECK(c.plan.sequence_parallel);
    CHECK(c.key.ends_with(" tpoverlap=on"));
  }
  CHECK(overlapped == 2);
}

TEST_CASE("sequence parallelism at tp 1 is no plan of its own") {
  // tp 1 or 2, pp 1, sequence parallelism off or on: tp 1 with it on is the
  // plan with it off (run turns it off), so 3 plans and 1 refused.
  const sweep::Space space =
      sweep::enumerate(small_spec(R"({"tp": [1, 2], "pp": 1, "sequence_parallel": [false, true]})"));
  CHECK(space.plans.size() == 3);
  CHECK(space.invalid.at("sequence_parallel needs tp > 1") == 1);
  for (const auto& c : space.plans) CHECK((c.plan.tp > 1 || !c.plan.sequence_parallel));
  // With the axis true alone (a MoE sweep's), tp 1 runs without it rather than
  // going missing: 2 plans, none refused.
  const sweep::Space only_on =
      sweep::enumerate(small_spec(R"({"tp": [1, 2], "pp": 1, "sequence_parallel": true})"));
  REQUIRE(only_on.plans.size() == 2);
  CHECK(only_on.invalid.count("sequence_parallel needs tp > 1") == 0);
  for (const auto& c : only_on.plans) CHECK(c.plan.sequence_parallel == (c.plan.tp > 1));
}

TEST_CASE("the cp axis: dp derived from tp x cp x pp, cp named in the plan") {
  // tp 2, pp 1 on 8 GPUs; cp "auto" tries 1, 2, 4, 8 (powers of two up to a
  // node's GPUs): cp 1 leaves dp 4, cp 2 dp 2, cp 4 dp 1; cp 8 needs 16 GPUs.
  // GPT 1.7B's 2,048 tokens split into 2 x cp chunks for the ring.
  const sweep::Space space = sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1, "cp": "auto"})"));
  REQUIRE(space.plans.size() == 3);
  CHECK(space.invalid.at("tp x cp x pp x dp differs from the GPU count") == 1);
  CHECK(space.plans[0].key == "tp=2 pp=1 dp=4 vp=1 mbs=1 1f1b zero=0 sp=off rc=none");
  CHECK(space.plans[1].key == "tp=2 pp=1 dp=2 vp=1 mbs=1 1f1b zero=0 sp=off rc=none cp=2");
  CHECK(space.plans[2].plan.cp == 4);
  CHECK(space.plans[2].plan.dp == 1);
  for (const auto& c : space.plans) CHECK(c.plan.gpus() == 8);
}

TEST_CASE("a sweep's fixed plan keys: every plan takes them; an axis there is refused") {
  const sweep::Spec spec = small_spec(R"({"tp": 2, "pp": 1, "cp": [2]})",
                                      R"(, "parallel": {"cp_algorithm": "all-gather", "cp_merge": "pytorch", "attention": "flash"})");
  const sweep::Space space = sweep::enumerate(spec);
  REQUIRE(space.plans.size() == 1);
  CHECK(space.plans[0].plan.cp_algorithm == workload::CpAlgorithm::kAllGather);
  CHECK(space.plans[0].plan.cp_merge == workload::CpMerge::kPyTorch);
  auto error = [](const std::string& extra) {
    try {
      (void)small_spec(R"({"tp": 2})", extra);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error(R"(, "parallel": {"tp": 4})") == "small.json: parallel.tp: is an axis: give its value or values under axes.tp");
  CHECK(error(R"(, "parallel": {"cp_algorithm": "spiral"})") ==
        "small.json: parallel.cp_algorithm: expected \"ring\", \"all-gather\" or \"all-to-all\", got \"spiral\"");
  CHECK(error(R"(, "parallel": {"cp_merge": 1})") ==
        "small.json: parallel.cp_merge: expected \"fused\" or \"pytorch\", got 1");
  // A fixed key the plan checks refuse (FP8 on A100s) leaves no valid plan, and says why.
  try {
    (void)sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1})", R"(, "parallel": {"precision": "fp8"})"));
    FAIL("expected no valid plan");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) == "small.json: axes.tp: no valid plan uses this value (config check: parallel.precision)");
  }
}

TEST_CASE("fixed keys that need a ZeRO stage are checked with each plan's own") {
  // FP8 gathers need ZeRO-3: on H100s a zero_stage 3 plan runs; listing 0 beside it is refused with the reason.
  auto doc = [](const std::string& zeros) {
    return nlohmann::json::parse(R"({"model": "gpt-1.7b", "cluster": {"node": "dgx-h100", "nodes": 1},
        "global_batch": 64, "parallel": {"precision": "fp8", "fp8_param_gather": true},
        "axes": {"tp": 2, "pp": 1, "zero_stage": )" + zeros + "}}");
  };
  const sweep::Space space = sweep::enumerate(sweep::parse_spec(doc("[3]"), "fp8.json", "."));
  REQUIRE(space.plans.size() == 1);
  CHECK(space.plans[0].plan.zero_stage == 3);
  CHECK(space.plans[0].plan.fp8_param_gather);
  try {
    (void)sweep::enumerate(sweep::parse_spec(doc("[0, 3]"), "fp8.json", "."));
    FAIL("expected zero_stage 0 refused");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "fp8.json: axes.zero_stage[0]: no valid plan uses this value (config check: parallel.fp8_param_gather)");
  }
}

TEST_CASE("the ep axis: every divisor of a MoE model's experts that divides a stage's GPUs") {
  // A Mixtral-like model (8 experts) on one DGX H100, tp 2, pp 1, dp 4:
  // ep "auto" tries 1, 2, 4, 8; all divide 8 experts and tp x dp = 8.
  auto doc = [](const std::string& model, const std::string& axes) {
    return nlohmann::json::parse(R"({"model": )" + model + R"(, "cluster": {"node": "dgx-h100", "nodes": 1},
        "global_batch": 8, "axes": )" + axes + "}");
  };
  const std::string moe = R"({"arch": "llama", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8, "seq": 1024,
      "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 2048}})";
  const sweep::Space space = sweep::enumerate(
      sweep::parse_spec(doc(moe, R"({"tp": 2, "pp": 1, "ep": "auto", "sequence_parallel": "auto"})"), "moe.json", "."));
  // tp 2 without sequence parallelism is refused for a MoE model: 4 plans, not 8.
  REQUIRE(space.plans.size() == 4);
  CHECK(space.invalid.at("a MoE model with tp > 1 needs sequence parallelism") == 4);
  CHECK(space.plans[0].key == "tp=2 pp=1 dp=4 vp=1 mbs=1 1f1b zero=0 sp=on rc=none");
  CHECK(space.plans[3].key == "tp=2 pp=1 dp=4 vp=1 mbs=1 1f1b zero=0 sp=on rc=none ep=8");
  CHECK(space.plans[3].plan.ep == 8);
  // etp beside it: ep x etp must divide tp x dp = 8 (ep 8 with etp 2 does not).
  const sweep::Space with_etp = sweep::enumerate(sweep::parse_spec(
      doc(moe, R"({"tp": 2, "pp": 1, "ep": "auto", "etp": [1, 2], "sequence_parallel": true})"), "moe.json", "."));
  CHECK(with_etp.plans.size() == 7);
  CHECK(with_etp.invalid.at("ep x etp does not divide tp x cp x dp") == 1);
  CHECK(with_etp.plans[1].key == "tp=2 pp=1 dp=4 vp=1 mbs=1 1f1b zero=0 sp=on rc=none etp=2");
  CHECK(with_etp.plans[1].plan.etp == 2);
  // A plan the config check refuses with experts is refused plan by plan, as `trainsim run` refuses it: HSDP
  // whose shard groups split an expert-parallel group (on 2 nodes, tp 2, dp 8, ep 8, etp 2: the ZeRO-3 plan
  // with one node's 4 replicas a shard group holds 8 GPUs, half of ep x etp = 16; beside plain FSDP).
  const std::string with_dense = R"({"arch": "llama", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
      "seq": 1024, "vocab": 32000, "ffn": 4096, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 2048, "dense_layers": 1}})";
  nlohmann::json two_nodes =
      doc(with_dense, R"({"tp": 2, "pp": 1, "ep": [8], "etp": [2], "sequence_parallel": true, "zero_stage": "auto",
                          "fsdp_shard_size": "auto"})");
  two_nodes["cluster"]["nodes"] = 2;
  two_nodes["global_batch"] = 8;
  const sweep::Space zero = sweep::enumerate(sweep::parse_spec(two_nodes, "moe.json", "."));
  CHECK(zero.plans.size() == 4);  // ZeRO 0, 1, 2 and plain FSDP
  CHECK(zero.invalid.at("config check: parallel.fsdp_shard_size") == 1);
  // With etp 1 the node's 8 GPUs hold one whole expert-parallel group: HSDP runs too.
  two_nodes["axes"]["etp"] = nlohmann::json::array({1});
  CHECK(sweep::enumerate(sweep::parse_spec(two_nodes, "moe.json", ".")).plans.size() == 5);
  // Without, ZeRO-3 runs too, with dense layers among the MoE ones or without.
  for (const std::string& model : {moe, with_dense}) {
    CHECK(sweep::enumerate(sweep::parse_spec(doc(model, R"({"tp": 2, "pp": 1, "ep": [8], "sequence_parallel": true,
                                                           "zero_stage": "auto"})"),
                                             "moe.json", "."))
              .plans.size() == 4);
  }
  // A dense model: ep 2 is refused, and a listed value no plan uses is an error that says why.
  try {
    (void)sweep::enumerate(sweep::parse_spec(doc("\"gpt-1.7b\"", R"({"tp": 2, "pp": 1, "ep": [1, 2]})"), "dense.json", "."));
    FAIL("expected an error");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) == "dense.json: axes.ep[1]: no valid plan uses this value (ep > 1 needs a MoE model)");
  }
}

TEST_CASE("options.moe_a2a_overlap leaves out the schedules it cannot run") {
  // Mixtral-like, tp 2 (sequence parallel), pp 2, dp 2, ep 4, vp 1 or 2:
  // interleaved 1F1B pairs each forward with a whole backward; zb-h1 runs I
  // and W, nothing to pair; 1F1B over two ranks has no virtual stages, which
  // Megatron-Core needs for the overlap; GPipe pairs rank 0's last forward
  // with its first backward, which waits for rank 1's backward, which waits
  // for that forward's output.
  const nlohmann::json doc = nlohmann::json::parse(R"({"cluster": {"node": "dgx-h100", "nodes": 1}, "global_batch": 8,
      "model": {"arch": "llama", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8, "seq": 1024,
                "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 2048}},
      "options": {"moe_a2a_overlap": true},
      "axes": {"tp": 2, "pp": 2, "vp": [1, 2], "ep": [4], "sequence_parallel": true, "schedule": "auto"}})");
  const sweep::Space space = sweep::enumerate(sweep::parse_spec(doc, "moe.json", "."));
  CHECK(space.invalid.at("schedule zb-h1 splits every backward, which options.moe_a2a_overlap cannot pair") == 1);
  CHECK(space.invalid.at("schedule gpipe pairs passes that wait for each other under options.moe_a2a_overlap") == 1);
  CHECK(space.invalid.at("schedule 1f1b over pp > 1 with vp = 1, and options.moe_a2a_overlap needs virtual stages") == 1);
  bool interleaved = false;
  for (const auto& c : space.plans) {
    interleaved = interleaved || c.plan.schedule == "interleaved-1f1b";
    CHECK(c.plan.schedule != "zb-h1");
    CHECK(c.plan.schedule != "gpipe");
    CHECK(c.plan.schedule != "1f1b");
  }
  CHECK(interleaved);
  // Listed, it is a value no plan uses, and the error says why.
  nlohmann::json listed = doc;
  listed["axes"]["vp"] = {1};
  listed["axes"]["schedule"] = {"dualpipe", "zb-h1"};
  try {
    (void)sweep::enumerate(sweep::parse_spec(listed, "moe.json", "."));
    FAIL("expected an error");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) == "moe.json: axes.schedule[1]: no valid plan uses this value (schedule zb-h1 splits "
                                   "every backward, which options.moe_a2a_overlap cannot pair)");
  }
}

TEST_CASE("ZeRO-3's knobs as fixed keys: plans of stage 3 take them, a stage that cannot is named") {
  // tp 2, pp 1, dp 4, full recompute: at ZeRO 3 the plan takes a live limit
  // and a reuse distance; at ZeRO 1 no plan can, and the axis value is refused.
  const std::string knobs = R"(, "parallel": {"fsdp_max_live_params": 1e9, "fsdp_max_reuse_distance": 1e9})";
  const sweep::Space space =
      sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1, "zero_stage": 3, "recompute": "full"})", knobs));
  REQUIRE(space.plans.size() == 1);
  CHECK(space.plans[0].plan.zero_stage == 3);
  CHECK(space.plans[0].plan.fsdp_max_live_params == 1e9);
  CHECK(space.plans[0].plan.fsdp_max_reuse_distance == 1e9);
  try {
    (void)sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1, "zero_stage": [1, 3], "recompute": "full"})", knobs));
    FAIL("expected ZeRO 1 refused");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) == "small.json: axes.zero_stage[0]: no valid plan uses this value (config check: "
                                   "parallel.fsdp_max_live_params)");
  }
}

TEST_CASE("CPU checkpointing as a fixed key: plans of full recompute take it, a recompute mode that cannot is named") {
  // tp 2, pp 1, dp 4 on one DGX A100, whose preset gives its host link:
  // with full recompute the plan keeps its checkpoints on the host; with no
  // recompute there is nothing to move, and the axis value is refused.
  const std::string key = R"(, "parallel": {"checkpoint_in_cpu": true})";
  const sweep::Space space = sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1, "recompute": "full"})", key));
  REQUIRE(space.plans.size() == 1);
  CHECK(space.plans[0].plan.checkpoint_in_cpu);
  try {
    (void)sweep::enumerate(small_spec(R"({"tp": 2, "pp": 1, "recompute": ["none", "full"]})", key));
    FAIL("expected recompute none refused");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) == "small.json: axes.recompute[0]: no valid plan uses this value (config check: "
                                   "parallel.checkpoint_in_cpu)");
  }
}

}  // namespace sweep_space_test
