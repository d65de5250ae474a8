// Overlapped tensor-parallel communication and HSDP's groups, as the stage
// costs see them.
#include <doctest/doctest.h>

#include "hw/collective.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "workload/tp_overlap.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_overlap_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;

namespace {
// One micro-batch of one sequence, `tp` tensor ranks with sequence parallelism.
Plan sequence_parallel_plan(int tp) {
  Plan p;
  p.tp = tp;
  p.global_batch = 1;
  p.sequence_parallel = true;
  return p;
}

// A tensor-parallel collective op's all-gather and reduce-scatter, each alone, in seconds.
struct GatherScatter {
  double ag, rs;
};
GatherScatter gather_scatter(const Op& op, const hw::CollectiveGroup& g, const hw::NodeSpec& node) {
  return {hw::collective_time(hw::CollectiveKind::kAllGather, op.collective_bytes, g, node).to_seconds(),
          hw::collective_time(hw::CollectiveKind::kReduceScatter, op.collective_bytes, g, node).to_seconds()};
}
}  // namespace


TEST_CASE("a collective pipelined with its GEMM in tp chunks: what cannot hide stays exposed") {
  // GEMM-bound: C = 6, G = 8, 4 chunks, GEMM 25% slower while overlapped.
  // Each of the 3 overlapped steps takes max(6 / 3, 8 x 1.25 / 4) = 2.5, then
  // the last GEMM chunk alone 8 / 4 = 2: 9.5 in all, 1.5 beyond the GEMM.
  CHECK(overlapped_seconds(6.0, 8.0, 4, 0.25) == doctest::Approx(9.5));
  // Communication-bound, no slowdown: steps of max(12 / 3, 4 / 4) = 4, then
  // 1: 13; exposed 13 - 4 = 9 = C - 3/4 G.
  CHECK(overlapped_seconds(12.0, 4.0, 4, 0.0) == doctest::Approx(13.0));
  // Two chunks: one overlapped step and one GEMM half alone.
  CHECK(overlapped_seconds(1.0, 4.0, 2, 0.0) == doctest::Approx(2.0 + 2.0));
  CHECK_THROWS_AS(overlapped_seconds(1.0, 1.0, 1), std::invalid_argument);
  // The default slowdown is the published average.
  CHECK(kOverlapComputeSlowdown == 0.189);
}

TEST_CASE("tp_comm_overlap: a layer's exposed tensor-parallel time is what its GEMMs cannot cover") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = sequence_parallel_plan(4);
  const StageCosts alone = stage_costs(m, p, c);
  p.overlap.tp_comm = true;
  const StageCosts overlapped = stage_costs(m, p, c);
  // By hand from the op list: per block, forward gathers into the
  // column-parallel GEMM and scatters after the row-parallel one; backward
  // the other way round.
  const std::vector<Op> ops = layer_ops(m, 1, 4, true);
  const hw::CollectiveGroup g = hw::group_of(c, {0, 1, 2, 3});
  double forward = 0.0, backward = 0.0, forward_alone = 0.0;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kTpCollective) continue;
    REQUIRE(op.column_gemm >= 0);
    REQUIRE(op.row_gemm >= 0);
    const auto [ag, rs] = gather_scatter(op, g, c.node);
    auto gemm = [&](int k, Pass pass) { return op_time(ops[static_cast<std::size_t>(k)], pass, c.node, m.seq, g).compute_s; };
    const double col_f = gemm(op.column_gemm, Pass::kForward), row_f = gemm(op.row_gemm, Pass::kForward);
    const double col_i = gemm(op.column_gemm, Pass::kInputGrad), row_i = gemm(op.row_gemm, Pass::kInputGrad);
    forward += overlapped_seconds(ag, col_f, 4) - col_f + overlapped_seconds(rs, row_f, 4) - row_f;
    backward += overlapped_seconds(ag, row_i, 4) - row_i + overlapped_seconds(rs, col_i, 4) - col_i;
    forward_alone += ag + rs;
  }
  // The stage: 8 layers; the embedding's and head's collectives stay alone.
  const double ends_forward = alone.stages[0].tp_comm_forward.to_seconds() - 8 * forward_alone;
  CHECK(overlapped.stages[0].tp_comm_forward.to_seconds() ==
        doctest::Approx(8 * forward + ends_forward).epsilon(1e-9));
  CHECK(overlapped.stages[0].tp_comm_forward < alone.stages[0].tp_comm_forward);
  CHECK(overlapped.stages[0].tp_comm_backward < alone.stages[0].tp_comm_backward);
  CHECK(backward > 0.0);
  // F shrinks by exactly what the collectives no longer expose.
  const double saved = alone.stages[0].tp_comm_forward.to_seconds() - overlapped.stages[0].tp_comm_forward.to_seconds();
  CHECK(alone.stages[0].forward.to_seconds() - overlapped.stages[0].forward.to_seconds() ==
        doctest::Approx(saved).epsilon(1e-6));
}

TEST_CASE("tp_comm_overlap: options.comm_slowdown's figure slows the GEMM chunks beside communication") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = sequence_parallel_plan(4);
  p.overlap.tp_comm = true;
  const StageCosts published = stage_costs(m, p, c);  // 0.189
  p.overlap.compute_slowdown = 0.0;
  const StageCosts none = stage_costs(m, p, c);
  p.overlap.compute_slowdown = 0.5;
  const StageCosts half = stage_costs(m, p, c);
  // By hand: each pipelined pair takes (tp - 1) max(C / (tp - 1), G (1 + s) / tp) + G / tp,
  // summed over a layer's collectives as the stage's forward sums them.
  const std::vector<Op> ops = layer_ops(m, 1, 4, true);
  const hw::CollectiveGroup g = hw::group_of(c, {0, 1, 2, 3});
  auto forward_of = [&](double slowdown) {
    double forward = 0.0;
    for (const Op& op : ops) {
      if (op.kind != OpKind::kTpCollective) continue;
      const auto [ag, rs] = gather_scatter(op, g, c.node);
      auto chunked = [&](int k) {
        Op part = ops[static_cast<std::size_t>(k)];
        part.m /= 4;
        part.flops_forward /= 4;
        part.bytes_forward /= 4;
        return 4 * op_time(part, Pass::kForward, c.node, m.seq, g).compute_s;
      };
      auto whole = [&](int k) {
        return op_time(ops[static_cast<std::size_t>(k)], Pass::kForward, c.node, m.seq, g).compute_s;
      };
      const double col = whole(op.column_gemm), row = whole(op.row_gemm);
      forward += overlapped_seconds(ag, chunked(op.column_gemm), 4, slowdown) - col +
                 overlapped_seconds(rs, chunked(op.row_gemm), 4, slowdown) - row;
    }
    return forward;
  };
  // The 8 layers' difference between two slowdowns is the stage's: the
  // embedding's and head's collectives run alone, the same under both.
  const double stage_none = none.stages[0].tp_comm_forward.to_seconds();
  CHECK(half.stages[0].tp_comm_forward.to_seconds() - stage_none ==
        doctest::Approx(8 * (forward_of(0.5) - forward_of(0.0))).epsilon(1e-9));
  CHECK(published.stages[0].tp_comm_forward.to_seconds() - stage_none ==
        doctest::Approx(8 * (forward_of(0.189) - forward_of(0.0))).epsilon(1e-9));
  // This small GPT's steps are communication-bound at 18.9% (the slowed
  // GEMM chunk still shorter than the communication chunk), so the
  // published figure costs nothing more than none; at 50% the GEMM's chunks
  // outlast the communication's.
  CHECK(none.stages[0].tp_comm_forward == published.stages[0].tp_comm_forward);
  CHECK(published.stages[0].tp_comm_forward < half.stages[0].tp_comm_forward);
}

TEST_CASE("HSDP: shards within a group, gradient shards all-reduced across the groups") {
  // small_gpt on 2 nodes, tp 1 x dp 16, ZeRO-3 sharded within groups of 8
  // (one node each) and replicated across the 2.
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(2);
  Plan p;
  p.dp = 16;
  p.global_batch = 16;
  p.zero_stage = 3;
  const StageCosts full = stage_costs(m, p, c);
  p.fsdp_shard_size = 8;
  const StageCosts hsdp = stage_costs(m, p, c);
  const StageCost& s = hsdp.stages[0];
  // Model state (2 + 2 + 12) / 8 bytes a parameter, not / 16.
  CHECK(s.model_state_bytes == std::llround(16.0 / 8 * s.params));
  CHECK(full.stages[0].model_state_bytes == std::llround(16.0 / 16 * full.stages[0].params));
  std::vector<int> shard_group, replica_group = {0, 8};
  for (int d = 0; d < 8; ++d) shard_group.push_back(d);
  for (const ShardUnit& u : s.shard_units) {
    // Gathers and scatters inside one node...
    CHECK(u.gather == hw::collective_time(hw::CollectiveKind::kAllGather, u.gather_bytes, hw::group_of(c, shard_group), c.node));
    CHECK(u.grad_scatter ==
          hw::collective_time(hw::CollectiveKind::kReduceScatter, u.grad_bytes, hw::group_of(c, shard_group), c.node));
    // ...then the 1/8 shard all-reduced between the two nodes, whose 8 pairs
    // (one per GPU, each with its NIC) run at once.
    CHECK(u.grad_replicate ==
          hw::collective_time(hw::CollectiveKind::kAllReduce, u.grad_bytes / 8, hw::group_of(c, replica_group), c.node));
    CHECK(u.grad_replicate > core::Time::zero());
  }
  for (const ShardUnit& u : full.stages[0].shard_units) CHECK(u.grad_replicate == core::Time::zero());
  // Inside NVLink, a shard group gathers faster than one spanning the NICs.
  CHECK(s.shard_units[1].gather < full.stages[0].shard_units[1].gather);
}

TEST_CASE("tp_comm_overlap: the pipelined GEMM runs as tp smaller GEMMs, each at its own shape's rate") {
  const TransformerSpec m = small_gpt();
  hw::ClusterSpec c = small_cluster(1);
  // A curve that rises over the chunks' sizes: a quarter of the tokens is a
  // GEMM of a quarter the volume, 4^(1/3) = 1.59 times smaller in size, and so slower.
  c.node.gpu.gemm_tflops = {{256, 50}, {4096, 200}};
  c.node.gpu.gemm_max_tflops = 200;
  Plan p = sequence_parallel_plan(4);
  p.overlap.tp_comm = true;
  const StageCosts overlapped = stage_costs(m, p, c);
  // The exposure the whole GEMM's rate would give (the first test's sum): the chunks' is larger.
  const std::vector<Op> ops = layer_ops(m, 1, 4, true);
  const hw::CollectiveGroup g = hw::group_of(c, {0, 1, 2, 3});
  double whole_rate = 0.0;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kTpCollective) continue;
    const auto [ag, rs] = gather_scatter(op, g, c.node);
    auto gemm = [&](int k) { return op_time(ops[static_cast<std::size_t>(k)], Pass::kForward, c.node, m.seq, g).compute_s; };
    whole_rate += overlapped_seconds(ag, gemm(op.column_gemm), 4) - gemm(op.column_gemm) +
                  overlapped_seconds(rs, gemm(op.row_gemm), 4) - gemm(op.row_gemm);
  }
  const StageCosts alone = [&] {
    Plan q = p;
    q.overlap.tp_comm = false;
    return stage_costs(m, q, c);
  }();
  double ends = alone.stages[0].tp_comm_forward.to_seconds();
  for (const Op& op : ops) {
    if (op.kind != OpKind::kTpCollective) continue;
    ends -= 8 * (hw::collective_time(hw::CollectiveKind::kAllGather, op.collective_bytes, g, c.node).to_seconds() +
                 hw::collective_time(hw::CollectiveKind::kReduceScatter, op.collective_bytes, g, c.node).to_seconds());
  }
  // The QKV chunk (256 x 1024 x 768, size 585) runs at 94.7 TFLOP/s where the
  // whole GEMM (size 929) runs at 119.8: each chunked GEMM takes about 26%
  // longer, and what it adds beyond the whole GEMM's time is exposed. More
  // than rounding apart: at least 1%.
  CHECK(overlapped.stages[0].tp_comm_forward.to_seconds() > 1.01 * (8 * whole_rate + ends));
}

TEST_CASE("tp_comm_overlap \"forward\": the backward and what recompute redoes run their collectives alone") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = sequence_parallel_plan(4);
  p.recompute = Recompute::kFull;
  const StageCosts alone = stage_costs(m, p, c);
  p.overlap.tp_comm = true;
  const StageCosts both = stage_costs(m, p, c);
  p.overlap.tp_comm_backward = false;
  const StageCosts forward = stage_costs(m, p, c);
  // The forward is pipelined as with both passes; the backward (the redone
  // forward's collectives included) exposes what it does without overlap.
  CHECK(forward.stages[0].tp_comm_forward == both.stages[0].tp_comm_forward);
  CHECK(forward.stages[0].tp_comm_backward == alone.stages[0].tp_comm_backward);
  CHECK(both.stages[0].tp_comm_backward < alone.stages[0].tp_comm_backward);
  CHECK(forward.stages[0].input_grad == alone.stages[0].input_grad);
}

TEST_CASE("tp_comm_overlap: a reduce-scatter of separate projections' summed gradients is not pipelined") {
  TransformerSpec m = small_gpt();
  m.arch = Arch::kLlama;
  m.kv_heads = 4;
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = sequence_parallel_plan(4);
  p.overlap.tp_comm = true;
  p.separate_projections = true;
  const StageCosts separate = stage_costs(m, p, c);
  // By hand for one layer: the backward gathers into the row-parallel
  // dgrad, pipelined; the column-parallel inputs' summed gradients are
  // reduce-scattered whole after the sum.
  const std::vector<Op> ops = layer_ops(m, 1, 4, true, Attention::kFlash, Elementwise::kFused, 1, {},
                                        {.separate_projections = true});
  const hw::CollectiveGroup g = hw::group_of(c, {0, 1, 2, 3});
  double backward = 0.0;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kTpCollective) continue;
    REQUIRE(op.scatter_after_sum);
    const auto [ag, rs] = gather_scatter(op, g, c.node);
    const double row_i = op_time(ops[static_cast<std::size_t>(op.row_gemm)], Pass::kInputGrad, c.node, m.seq, g).compute_s;
    backward += overlapped_seconds(ag, row_i, 4) - row_i + rs;
  }
  p.overlap.tp_comm = false;
  const StageCosts alone = stage_costs(m, p, c);
  std::vector<Op> plain_ops = layer_ops(m, 1, 4, true, Attention::kFlash, Elementwise::kFused, 1, {},
                                        {.separate_projections = true});
  double backward_alone = 0.0;
  for (const Op& op : plain_ops) {
    if (op.kind == OpKind::kTpCollective) backward_alone += op_time(op, Pass::kInputGrad, c.node, m.seq, g).tp_comm_s;
  }
  // The stage's 8 layers; the embedding's and head's collectives as they are alone.
  const double ends = alone.stages[0].tp_comm_backward.to_seconds() - 8 * backward_alone;
  CHECK(separate.stages[0].tp_comm_backward.to_seconds() == doctest::Approx(8 * backward + ends).epsilon(1e-9));
}

}  // namespace workload_overlap_test
