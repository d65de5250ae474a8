// HSDP and the overlap keys end to end: what each changes in the timeline.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_overlap_test {

using namespace trainsim;
using lower::TaskKind;

namespace {

// GPT 1.7B on `nodes` DGX A100s with the plan given.
driver::WhatIf run(int nodes, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "cluster.nodes=" + std::to_string(nodes));
  return driver::simulate(config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", overrides));
}

// The most memory GPU 0 holds while its first compute task of `op` runs:
// what it held once the task had started (the last change at its start:
// what ended then gave its memory back first), or any level it reached
// before it ended.
std::int64_t held_during(const driver::WhatIf& w, schedule::Op op) {
  const auto& tl = w.sim->timeline;
  for (std::size_t id = 0; id < w.sim->info.size(); ++id) {
    const auto& info = w.sim->info[id];
    if (info.kind != TaskKind::kCompute || info.action.op != op || info.rank != 0) continue;
    std::int64_t most = 0;
    for (const auto& sample : w.sim->memory.pools()[0].timeline()) {
      if (sample.time <= tl.start[id]) most = sample.bytes_in_use;
      else if (sample.time < tl.end[id]) most = std::max(most, sample.bytes_in_use);
    }
    return most;
  }
  return -1;
}

int count(const driver::WhatIf& w, TaskKind kind) {
  int n = 0;
  for (const auto& info : w.sim->info) n += info.kind == kind;
  return n;
}

// ZeRO-3's per-unit gradient collectives (not the stage's empty bucket).
int unit_reductions(const driver::WhatIf& w) {
  int n = 0;
  for (const auto& info : w.sim->info) n += info.kind == TaskKind::kGradReduce && info.units > 0;
  return n;
}

core::Time makespan(const driver::WhatIf& w) { return w.sim->timeline.makespan; }

}  // namespace

TEST_CASE("HSDP: every unit's scatter is followed by an all-reduce across the groups; both fidelities agree") {
  // 16 replicas on 2 nodes, each node a shard group.
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=1", "parallel.dp=16",
                                         "parallel.microbatch_size=1", "parallel.global_batch=16",
                                         "parallel.zero_stage=3"};
  std::vector<std::string> hsdp = plan;
  hsdp.push_back("parallel.fsdp_shard_size=8");
  const driver::WhatIf fsdp = run(2, plan), sharded = run(2, hsdp);
  // 24 layer units + embedding + head: 26 reduce-scatters, and 26 all-reduces with HSDP.
  CHECK(unit_reductions(fsdp) == 26);
  CHECK(unit_reductions(sharded) == 52);
  int across = 0;
  for (const auto& info : sharded.sim->info) across += info.across_shard_groups;
  CHECK(across == 26);
  // Sharded over 8, not 16: more model state per GPU.
  CHECK(sharded.sim->memory.pools()[0].peak() > fsdp.sim->memory.pools()[0].peak());
  // One representative stands for all 16 GPUs, in both collective modes.
  for (const char* mode : {"analytic", "flow"}) {
    CAPTURE(mode);
    std::vector<std::string> symmetric = hsdp, full = hsdp;
    symmetric.push_back(std::string("options.collectives=") + mode);
    full.push_back(std::string("options.collectives=") + mode);
    full.push_back("options.fidelity=full");
    const driver::WhatIf one = run(2, symmetric), every = run(2, full);
    CHECK(every.sim->pipelines == 16);
    CHECK(makespan(one).to_seconds() == doctest::Approx(makespan(every).to_seconds()).epsilon(1e-6));
  }
}

TEST_CASE("overlap_grad_reduce off: no bucket is reduced before the rank's backward has ended") {
  // 2 pipeline stages x 4 replicas, several buckets a stage.
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=2", "parallel.dp=4",
                                         "parallel.microbatch_size=1", "parallel.global_batch=16"};
  std::vector<std::string> off = plan;
  off.push_back("options.overlap_grad_reduce=false");
  const driver::WhatIf on = run(1, plan), later = run(1, off);
  for (const driver::WhatIf* w : {&on, &later}) {
    const auto& info = w->sim->info;
    const auto& tl = w->sim->timeline;
    for (int rank = 0; rank < 2; ++rank) {
      core::Time backward_end, first_reduce = tl.makespan;
      for (std::size_t id = 0; id < info.size(); ++id) {
        if (info[id].rank != rank) continue;
        if (info[id].kind == TaskKind::kCompute) backward_end = std::max(backward_end, tl.end[id]);
        if (info[id].kind == TaskKind::kGradReduce) first_reduce = std::min(first_reduce, tl.start[id]);
      }
      CAPTURE(rank);
      if (w == &later) {
        CHECK(first_reduce >= backward_end);
      } else {
        CHECK(first_reduce < backward_end);  // overlapped: the first bucket goes during the last backward
      }
    }
  }
  CHECK(makespan(later) > makespan(on));
  // Not overlapped, the last backward is one piece, not one per bucket.
  CHECK(count(later, TaskKind::kCompute) < count(on, TaskKind::kCompute));
}

TEST_CASE("overlap_param_gather: the updated parameters are gathered bucket by bucket under the first forward") {
  const std::vector<std::string> plan = {"parallel.tp=1",         "parallel.pp=2",
                                         "parallel.dp=4",         "parallel.microbatch_size=1",
                                         "parallel.global_batch=16", "parallel.distributed_optimizer=true"};
  std::vector<std::string> overlapped = plan;
  overlapped.push_back("options.overlap_param_gather=true");
  const driver::WhatIf after = run(1, plan), under = run(1, overlapped);
  // Exposed: one gather a stage, after the optimizer step.
  CHECK(count(after, TaskKind::kParamAllGather) == 2);
  const auto& info = under.sim->info;
  const auto& tl = under.sim->timeline;
  int gathers = 0;
  for (std::size_t id = 0; id < info.size(); ++id) {
    if (info[id].kind != TaskKind::kParamAllGather) continue;
    ++gathers;
    CHECK(info[id].on_gather_stream());
    CHECK(info[id].parts > 1);  // 12 layers of 1.7B / 2 stages: more than 25 MiB a stage
  }
  // As many gathers as pieces of the stages' first forwards, each piece
  // after its own gather.
  int pieces = 0;
  for (std::size_t id = 0; id < info.size(); ++id) {
    if (info[id].kind != TaskKind::kCompute || info[id].action.op != schedule::Op::kForward ||
        info[id].action.microbatch != 0 || info[id].parts == 1) {
      continue;
    }
    ++pieces;
    for (std::size_t g = 0; g < info.size(); ++g) {
      if (info[g].kind == TaskKind::kParamAllGather && info[g].rank == info[id].rank &&
          info[g].part == info[id].part) {
        CHECK(tl.start[id] >= tl.end[g]);
      }
    }
  }
  CHECK(gathers == pieces);
  CHECK(gathers > 2);
  // Nothing is gathered after the optimizer step any more.
  for (std::size_t id = 0; id < info.size(); ++id) {
    if (info[id].kind == TaskKind::kParamAllGather) CHECK(info[id].action.op == schedule::Op::kUnshard);
  }
}

TEST_CASE("the loss's passing tensors raise the peak of a GPU whose peak is its loss") {
  // Llama 2 7B on one GPU's worth of a pipeline's last stage: tp 8, pp 1, one
  // sequence of 4096 tokens, vocabulary 32000 over 8 ranks, PyTorch's eager
  // loss under loss_parallel: 12 x 4096 x 4000 bytes more than Megatron's as
  // its backward starts, where every activation is still held (its forward
  // holds 10 a logit more, less). Its backward's eager ops move 38 bytes a
  // logit where Megatron's move 14: 24 x 4096 x 4000 bytes more at the
  // A100's 1.62 TB/s.
  const std::vector<std::string> plan = {"model=llama2-7b", "parallel.tp=8", "parallel.pp=1", "parallel.dp=1",
                                         "parallel.microbatch_size=1", "parallel.global_batch=1"};
  std::vector<std::string> pytorch = plan;
  pytorch.push_back("parallel.loss=pytorch");
  const driver::WhatIf megatron = run(1, plan), torch = run(1, pytorch);
  CHECK(torch.sim->memory.pools()[0].peak() - megatron.sim->memory.pools()[0].peak() == 12LL * 4096 * 4000);
  CHECK((torch.sim->timeline.makespan - megatron.sim->timeline.makespan).to_seconds() ==
        doctest::Approx(24.0 * 4096 * 4000 / 1.62e12).epsilon(1e-6));
  // Each pass holds its own: 10 x 4096 x 4000 bytes more through the
  // forward, 12 x 4096 x 4000 through the backward (both keep 4 a logit).
  CHECK(held_during(torch, schedule::Op::kForward) - held_during(megatron, schedule::Op::kForward) ==
        10LL * 4096 * 4000);
  CHECK(held_during(torch, schedule::Op::kBackward) - held_during(megatron, schedule::Op::kBackward) ==
        12LL * 4096 * 4000);
  // A split backward: its input-gradient half (I) computes the loss's
  // gradient and holds the 12; its weight-gradient half (W) holds nothing
  // of the loss.
  std::vector<std::string> split = plan, split_torch = pytorch;
  split.push_back("parallel.schedule=zb-h1");
  split_torch.push_back("parallel.schedule=zb-h1");
  const driver::WhatIf m_split = run(1, split), t_split = run(1, split_torch);
  CHECK(held_during(t_split, schedule::Op::kInputGrad) - held_during(m_split, schedule::Op::kInputGrad) ==
        12LL * 4096 * 4000);
  CHECK(held_during(t_split, schedule::Op::kWeightGrad) == held_during(m_split, schedule::Op::kWeightGrad));
  CHECK(held_during(m_split, schedule::Op::kWeightGrad) > 0);
}

TEST_CASE("compute under an overlapping collective runs 18.9% slower unless the config says otherwise") {
  // FSDP over 16 GPUs on two nodes: every unit's gather and scatter runs
  // beside compute. The default is arXiv 2507.03114's average slowdown.
  const std::vector<std::string> fsdp = {"parallel.tp=1", "parallel.pp=1", "parallel.dp=16", "parallel.zero_stage=3"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> o = fsdp;
    o.insert(o.end(), extra.begin(), extra.end());
    return makespan(run(2, o));
  };
  const core::Time by_default = with({});
  CHECK(by_default == with({"options.comm_slowdown=0.189"}));
  CHECK(by_default > with({"options.comm_slowdown=0"}));
  // A layer-table model (its interference is parallel.burst.interference) takes no default.
  CHECK_NOTHROW(config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/vgg16-dp-16xa100.json"));
}

}  // namespace driver_overlap_test
