// options.moe_a2a_overlap's pairs of a forward and a backward on one rank
// (see paired_time in lower_compute.cpp): which of a rank's actions run as
// one overlapped step.
#pragma once

#include <string_view>
#include <vector>

#include "schedule/action.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

// The pairs options.moe_a2a_overlap makes on a rank, from the order its
// schedule gives: a forward with the backward (B) right after it, or a
// backward with the forward right after it when that forward has no
// backward of its own to pair with (DualPipe's B1 F1 B0 pairs F1 with B0;
// 1F1B's steady F B F B pairs each F with the next B, and with one stage
// each B with the next F). Never a chunk with its own micro-batch's other
// pass, which it depends on; a split backward's I or W between them breaks
// the pair. partner[k] = the other's index, -1 when unpaired (warm-up
// forwards, cool-down backwards).
std::vector<int> a2a_partners(const std::vector<schedule::Action>& actions);

// The program (its sends and receives added) with each pair's sends after
// both its passes, the forward's first: Megatron-Core's combined step sends
// the forward's output and then the backward's once the pair's last layer
// is done (TransformerModelChunkSchedulePlan.run, phase 5), as DualPipe's
// _forward_backward_chunk does (_send_forward, then _send_backward). The
// compute order, and so the pairs, stay as they were.
schedule::Program with_paired_sends(const schedule::Program& program);

// What the first of each pair waits for besides its own inputs: those of
// the other, as Megatron-Core's combined step waits for both the forward's
// and the backward's receives before either runs (model_chunk_schedule_plan.py,
// TransformerModelChunkSchedulePlan.run, phase 0) and DualPipe's overlapped
// chunks for both of theirs. A receive stands for the send it matches, so
// the first action waits for the data, not for a later action of its own
// rank. And what the first's sends wait for besides it: the second's end
// (with_paired_sends put them after it). `deps` are the program's
// (schedule::dependencies); schedule::acyclic over both tells whether the pairs
// can run at all.
std::vector<schedule::Dependency> a2a_pair_waits(const schedule::Program& program,
                                                 const std::vector<schedule::Dependency>& deps);

// Why options.moe_a2a_overlap cannot run a schedule's program, or kRuns.
// Megatron-Core takes the overlap over a pipeline only with virtual stages
// (transformer_config.py asserts virtual_pipeline_model_parallel_size when
// pipeline_model_parallel_size > 1; its best-practice runs turn it off at
// VPP=1): under 1F1B each steady pair waits for the next rank's pair, which
// waits for this rank's pair before, so the pairs would run every other step.
enum class A2aRefusal {
  kRuns,
  kNoWholeBackward,        // every backward split into I and W: nothing to pair
  kPipelineWithoutChunks,  // 1f1b or interleaved-1f1b over more than one rank, vp 1
  kPairsWaitOnThemselves,  // a pair needs its own output (a cycle)
};
// The overlap on a schedule's program for `shape` (sends and receives
// added, with_paired_sends applied): the waits a2a_pair_waits adds to
// schedule::dependencies', and whether the program can run with them.
struct A2aWaits {
  std::vector<schedule::Dependency> waits;
  A2aRefusal refusal = A2aRefusal::kRuns;
};
A2aWaits a2a_waits(std::string_view schedule, const schedule::Shape& shape, const schedule::Program& program);

}  // namespace trainsim::lower
