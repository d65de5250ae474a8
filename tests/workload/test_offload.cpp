// Offloading the optimizer (and the parameters) to the host: what leaves the
// GPU, what the host holds, and what the copies and the CPU step cost.
#include <doctest/doctest.h>

#include "hw/collective.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_offload_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::workload::testing::small_moe;

namespace {
// small_cluster's node with a host: 1024 GB of DRAM at 0.4 TB/s, PCIe 25 GB/s,
// and 3 us a kernel launch.
hw::ClusterSpec cluster() {
  hw::ClusterSpec c = small_cluster();
  c.node.host_memory_gb = 1024;
  c.node.host_memory_tb_per_s = 0.4;
  c.node.pcie_gb_per_s = 25;
  c.node.gpu.kernel_overhead_us = 3.0;
  return c;
}

// dp 8 on the node, one micro-batch of one each.
Plan plan(int zero_stage, Offload offload) {
  Plan p;
  p.dp = 8;
  p.global_batch = 8;
  p.zero_stage = zero_stage;
  p.offload = offload;
  return p;
}
}  // namespace

TEST_CASE("offloading the optimizer: its state and the FP32 gradients leave the GPU for the host") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = cluster();
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    const StageCost on = stage_costs(m, plan(zero, Offload::kNone), c).stages[0];
    const StageCost off = stage_costs(m, plan(zero, Offload::kOptimizer), c).stages[0];
    // The GPU sheds 12/8 bytes a parameter of optimizer state, and under
    // ZeRO-2/3 its 2/8 of gradients; the host takes (12 + 4)/8.
    const double shed = 12.0 / 8 + (zero >= 2 ? 2.0 / 8 : 0.0);
    CHECK(static_cast<double>(on.model_state_bytes - off.model_state_bytes) == doctest::Approx(shed * on.params).epsilon(1e-9));
    CHECK(static_cast<double>(off.host_state_bytes) == doctest::Approx(16.0 / 8 * on.params).epsilon(1e-9));
    CHECK(on.host_state_bytes == 0);
    // The step: the shard's passes with FP32 gradients (38 bytes a parameter
    // under bf16) at 0.4 TB/s / 8 GPUs, the 16-bit shard back over PCIe, the
    // launch; ZeRO-1 also zeroes its whole gradient buffer on the GPU.
    const double shard = on.params / 8;
    const double expected = shard * 38.0 / (0.4e12 / 8) + shard * 2.0 / 25e9 +
                            (zero == 1 ? on.params * 2.0 / 1.6e12 : 0.0) + 3e-6;
    CHECK(off.optimizer_step.to_seconds() == doctest::Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("an offloaded step runs on the process's share of the cores, no faster than each core steps") {
  const TransformerSpec m = small_gpt();
  hw::ClusterSpec c = cluster();
  const StageCost unknown = stage_costs(m, plan(2, Offload::kOptimizer), c).stages[0];
  // Cores alone, or a rate alone, bound nothing: the DRAM bandwidth does.
  c.node.host_cores = 16;
  CHECK(stage_costs(m, plan(2, Offload::kOptimizer), c).stages[0].optimizer_step == unknown.optimizer_step);
  // 16 cores for 8 GPUs, 2 a process, each stepping 0.1 G parameters a second:
  // 0.2 G/s, below the DRAM's 0.05 TB/s / 38 bytes = 1.32 G/s, so the cores
  // bound the step: shard / 0.2e9 in place of shard x 38 / 0.05e12.
  c.node.host_adam_params_per_s_per_core = 0.1e9;
  const StageCost slow = stage_costs(m, plan(2, Offload::kOptimizer), c).stages[0];
  const double shard = unknown.params / 8;
  CHECK(slow.optimizer_step.to_seconds() - unknown.optimizer_step.to_seconds() ==
        doctest::Approx(shard / 0.2e9 - shard * 38.0 / (0.4e12 / 8)).epsilon(1e-6));
  // 10 G/s a core: the cores outrun the DRAM, which bounds the step again.
  c.node.host_adam_params_per_s_per_core = 10e9;
  CHECK(stage_costs(m, plan(2, Offload::kOptimizer), c).stages[0].optimizer_step == unknown.optimizer_step);
}

TEST_CASE("offloaded gradients cross PCIe after their reduction; offloaded parameters before each gather") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = cluster();
  const StageCost base = stage_costs(m, plan(3, Offload::kNone), c).stages[0];
  const StageCost opt = stage_costs(m, plan(3, Offload::kOptimizer), c).stages[0];
  Plan async_plan = plan(3, Offload::kOptimizer);
  async_plan.offload_grad_copy = OffloadGradCopy::kAsync;
  const StageCost async = stage_costs(m, async_plan, c).stages[0];
  const StageCost all = stage_costs(m, plan(3, Offload::kOptimizerAndParams), c).stages[0];
  REQUIRE(base.shard_units.size() == opt.shard_units.size());
  for (std::size_t u = 0; u < base.shard_units.size(); ++u) {
    const ShardUnit& b = base.shard_units[u];
    // The unit's reduced gradient shard, 1/8 of its bytes (2 a parameter in
    // BF16), at 25 GB/s.
    CHECK((async.shard_units[u].grad_scatter - b.grad_scatter).to_seconds() ==
          doctest::Approx(b.grad_bytes / 8 / 25e9).epsilon(1e-6));
    // Offloading the optimizer alone under ZeRO-3 is DeepSpeed's stage 3,
    // whose copies default to blocking: every backward the BF16 shard to the
    // host and back, 2 + 2 bytes a parameter of the shard; after the last
    // backward also as FP32 to the host, 4 bytes more.
    CHECK((opt.shard_units[u].grad_scatter - b.grad_scatter).to_seconds() ==
          doctest::Approx(b.grad_bytes / 2 * 4 / 8 / 25e9).epsilon(1e-6));
    CHECK(opt.shard_units[u].grad_fp32_copy.to_seconds() ==
          doctest::Approx(b.grad_bytes / 2 * 4 / 8 / 25e9).epsilon(1e-6));
    CHECK(async.shard_units[u].grad_fp32_copy == core::Time::zero());
    // FSDP's CPU offload (parameters too) copies once, beside the compute.
    CHECK((all.shard_units[u].grad_scatter - b.grad_scatter).to_seconds() ==
          doctest::Approx(b.grad_bytes / 8 / 25e9).epsilon(1e-6));
    CHECK(opt.shard_units[u].gather == b.gather);
    // With the parameters on the host, their shard comes over first.
    CHECK((all.shard_units[u].gather - b.gather).to_seconds() == doctest::Approx(b.gather_bytes / 8 / 25e9).epsilon(1e-6));
  }
  // The parameter shard leaves the GPU too: 2/8 bytes a parameter more.
  CHECK(static_cast<double>(opt.model_state_bytes - all.model_state_bytes) ==
        doctest::Approx(2.0 / 8 * base.params).epsilon(1e-9));
  CHECK(static_cast<double>(all.host_state_bytes - opt.host_state_bytes) ==
        doctest::Approx(2.0 / 8 * base.params).epsilon(1e-9));
}

TEST_CASE("with no replica to reduce with, offloaded gradients still go to the host") {
  // dp 1 (the node's other GPUs idle), ZeRO-1: nothing is reduced, but the
  // stage's BF16 gradients, 2 bytes a parameter, cross PCIe at 25 GB/s to
  // the host optimizer, as one bucket.
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = cluster();
  Plan p = plan(1, Offload::kOptimizer);
  p.dp = 1;
  p.global_batch = 1;
  const StageCost s = stage_costs(m, p, c).stages[0];
  REQUIRE(s.grad_bucket_reduce.size() == 1);
  CHECK(s.grad_bucket_reduce[0].to_seconds() == doctest::Approx(s.params * 2.0 / 25e9).epsilon(1e-9));
  CHECK(s.grad_bucket_host_copy[0] == s.grad_bucket_reduce[0]);
}

TEST_CASE("offloading with experts: each GPU's shard of the routed experts is 1/edp, the rest's 1/dp") {
  // small_moe (8 MoE layers, 8 experts) on the node's 8 GPUs, dp 8, ep 4:
  // each GPU holds 2 experts a layer, 8 x 12,582,912 = 100,663,296
  // parameters, sharded over edp 8 / 4 = 2; the rest (attention, router,
  // norms, embedding, head) over dp 8.
  const TransformerSpec m = small_moe();
  const hw::ClusterSpec c = cluster();
  for (int zero : {1, 3}) {
    CAPTURE(zero);
    Plan on_plan = plan(zero, Offload::kNone);
    on_plan.ep = 4;
    Plan off_plan = on_plan;
    off_plan.offload = Offload::kOptimizer;
    off_plan.offload_grad_copy = OffloadGradCopy::kAsync;
    const StageCost on = stage_costs(m, on_plan, c).stages[0];
    const StageCost off = stage_costs(m, off_plan, c).stages[0];
    REQUIRE(on.expert_params == 8.0 * 12'582'912);
    const double dense = on.params - on.expert_params, experts = on.expert_params;
    // The host holds (12 + 4) bytes a parameter of each shard: dense / 8 and
    // experts / 2; the GPU sheds the 12 of optimizer state (and under ZeRO-3
    // the 2 of gradients) of each.
    CHECK(static_cast<double>(off.host_state_bytes) ==
          doctest::Approx(16.0 * (dense / 8 + experts / 2)).epsilon(1e-9));
    const double shed = 12.0 + (zero >= 2 ? 2.0 : 0.0);
    CHECK(static_cast<double>(on.model_state_bytes - off.model_state_bytes) ==
          doctest::Approx(shed * (dense / 8 + experts / 2)).epsilon(1e-9));
    // The host steps the same shards (38 bytes a parameter at 0.4 TB/s / 8)
    // and sends their 16-bit copy back over PCIe.
    const double owned = dense / 8 + experts / 2;
    const double expected = owned * 38.0 / (0.4e12 / 8) + owned * 2.0 / 25e9 +
                            (zero == 1 ? on.params * 2.0 / 1.6e12 : 0.0) + 3e-6;
    CHECK(off.optimizer_step.to_seconds() == doctest::Approx(expected).epsilon(1e-6));
    if (zero == 1) {
      // ZeRO-1: one 25 MiB bucket's reduced shard crosses PCIe, its experts'
      // share (their part of the stage's parameters) 1/2 of it, the rest 1/8.
      REQUIRE(on.grad_bucket_reduce.size() == off.grad_bucket_reduce.size());
      const double bucket = 25.0 * 1048576.0, share = experts / on.params;
      CHECK((off.grad_bucket_reduce[0] - on.grad_bucket_reduce[0]).to_seconds() ==
            doctest::Approx((bucket * (1.0 - share) / 8 + bucket * share / 2) / 25e9).epsilon(1e-6));
    } else {
      // ZeRO-3: a layer's unit (4,204,544 dense parameters and 12,582,912 of
      // experts, 2 bytes each) sends its reduced shards to the host.
      const ShardUnit& u_on = on.shard_units[1];
      const ShardUnit& u_off = off.shard_units[1];
      CHECK(u_on.params == 16'787'456.0);
      CHECK((u_off.grad_scatter - u_on.grad_scatter).to_seconds() ==
            doctest::Approx((2.0 * 4'204'544 / 8 + 2.0 * 12'582'912 / 2) / 25e9).epsilon(1e-6));
    }
  }
}

}  // namespace workload_offload_test
