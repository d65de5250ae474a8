// The action IR: a Program lists, for every pipeline rank, the actions it
// performs in order. It is pure order, no time: durations come later, when the
// program is lowered onto costs and hardware.
//
// The vocabulary follows torch.distributed.pipelining. Compute actions print as
// `<stage><op><micro-batch>` (`0F0`, `1B3`, `2I3`, `2W3`); communication as
// `<stage>SEND_F<mb>` and the like; `<stage>REDUCE_GRAD`, `<stage>UNSHARD`,
// `<stage>RESHARD`; `OPTIMIZER`.
//
// Schedule plugins emit compute actions only; with_communication() (see
// communication.hpp) adds the rest, as torch's lowering passes do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/placement.hpp"

namespace trainsim::schedule {

enum class Op : std::uint8_t {
  kForward,     // F: forward of (stage, micro-batch)
  kBackward,    // B: full backward (= I then W)
  kInputGrad,   // I: backward w.r.t. the stage's input only
  kWeightGrad,  // W: backward w.r.t. the stage's weights only
  kSendF,       // SEND_F: send F's output of (stage, mb) on to stage + 1
  kRecvF,       // RECV_F: receive the input of F of (stage, mb) from stage - 1
  kSendB,       // SEND_B: send the input gradient of (stage, mb) back to stage - 1
  kRecvB,       // RECV_B: receive the output gradient of (stage, mb) from stage + 1
  kReduceGrad,  // REDUCE_GRAD: all-reduce the stage's weight gradients across replicas
  kOptimizer,   // OPTIMIZER: the rank's optimizer step (stage and micro-batch unused)
  kUnshard,     // UNSHARD: all-gather the stage's sharded parameters (ZeRO-3) for the actions that follow
  kReshard,     // RESHARD: drop them again; after a backward, reduce-scatter the stage's gradients
};

struct Action {
  Op op = Op::kForward;
  int stage = 0;
  // F, B, I, W and the sends and receives: the micro-batch. UNSHARD and
  // RESHARD: the unit (unit()). Unused by REDUCE_GRAD and OPTIMIZER.
  int microbatch = 0;
  // UNSHARD and RESHARD: the ZeRO-3 unit of the stage (one transformer block
  // by default) that the action gathers or gives back, or -1 for every unit
  // of the stage at once; kept where the other actions keep their
  // micro-batch, as an action has one or the other (a task's info holds an
  // Action, and tens of millions of them must stay small).
  int unit() const { return microbatch; }
  static Action of_unit(Op op, int stage, int unit) { return {op, stage, unit}; }
  friend bool operator==(const Action&, const Action&) = default;
};

// Inline: the lowering asks these of every action of every plan a sweep runs.
inline bool is_compute(Op op) {  // F, B, I, W
  return op == Op::kForward || op == Op::kBackward || op == Op::kInputGrad || op == Op::kWeightGrad;
}
// The action whose end completes a backward: B or W.
inline bool is_backward_end(Op op) { return op == Op::kBackward || op == Op::kWeightGrad; }
std::string op_name(Op op);    // "F", "SEND_F", "REDUCE_GRAD", ...
std::string to_string(const Action& a);
// A rank's actions, space-separated: "0F0 0F1 0B0 ...".
std::string to_string(const std::vector<Action>& actions);

// What a schedule needs to know to lay out its program.
struct Shape {
  int ranks = 1;         // pipeline ranks
  int stages = 1;        // pipeline stages (ranks x virtual stages per rank, x pipelines)
  int microbatches = 1;  // per iteration, through each of the pipelines
  std::vector<int> stage_rank;  // stage -> rank that runs it
  // Independent pipelines over the stages, stages / pipelines each, in
  // order: DualPipe's two directions (Placement::kDual) are two, each with
  // half of the iteration's micro-batches; everything else one. A stage
  // feeds the next only inside its pipeline.
  // Durations per stage in any one unit, for schedules that place work by
  // time (zb-1p, zb-2p); empty when unknown (they then take F = I = W = 1 and
  // free communication). Other schedules ignore them: a Program stays order.
  struct StageTimes {
    double forward = 1.0, input_grad = 1.0, weight_grad = 1.0, transfer = 0.0;
  };
  std::vector<StageTimes> times;
  int pipelines = 1;
  // Forwards each rank runs ahead beyond its schedule's own warm-up (1f1b,
  // 2bp through 1f1b, and interleaved-1f1b read it; 0 elsewhere). Megatron-Core runs one more
  // under its MoE A2A overlap, so that the forward and the backward of each
  // steady step, run as one, never wait for each other
  // (megatron/core/pipeline_parallel/schedules.py, get_pp_rank_microbatches).
  int extra_warmup = 0;

  int pipeline_length() const { return stages / pipelines; }
  // Whether a stage before / after `stage` in its pipeline feeds / takes its output.
  bool has_previous(int stage) const { return stage % pipeline_length() != 0; }
  bool has_next(int stage) const { return (stage + 1) % pipeline_length() != 0; }
  // The stage holding the same layers in the other pipeline (DualPipe's
  // copy); the stage itself with one pipeline.
  int copy_of(int stage) const { return pipelines == 1 ? stage : (stage + stages / 2) % stages; }

  // The usual placement: stage s on rank s.
  static Shape linear(int ranks, int microbatches);
  // Looped placement of ranks x virtual_stages stages: stage s on rank
  // s mod ranks (Megatron-LM's interleaving, breadth-first's looping).
  static Shape looped(int ranks, int virtual_stages, int microbatches);
  // ranks x virtual_stages stages placed as `placement` says, for
  // `microbatches` micro-batches an iteration. Placement::kDual
  // doubles the stages and halves the micro-batches between its two
  // pipelines; it throws std::invalid_argument when they are odd.
  static Shape placed(Placement placement, int ranks, int virtual_stages, int microbatches);
  int virtual_stages() const { return stages / (ranks * pipelines); }
};

struct Program {
  std::vector<std::vector<Action>> ranks;  // actions per rank, in issue order
};

}  // namespace trainsim::schedule
