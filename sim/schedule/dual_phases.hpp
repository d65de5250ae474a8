// The eight phases one rank of DeepSeek's DualPipe runs (deepseek-ai/DualPipe
// dualpipe/dualpipe.py and dualpipev.py, commit 3da1bbe, step()): both
// schedules give a rank two chunks and the same order of work, only which
// stages the chunks are differs (dualpipe.hpp, dualpipe_v.hpp).
#pragma once

#include <array>
#include <vector>

#include "schedule/action.hpp"

namespace trainsim::schedule {

// One rank's actions. With n = half_ranks, h = the rank's place in its half,
// m = micro-batches through each chunk, F0/F1 the forward of chunk 0/1,
// B0/B1 a full backward, I0/I1 a backward whose weight gradient is deferred
// and W the oldest deferred one:
//   1  2(n - h - 1) x F0
//   2  (h + 1) x (F0 F1)
//   3  (n - h - 1) x (I1 W F1)
//   4  (m - 2n + h + 1) x (F0 B1 F1 B0)   each F beside the B after it
//   5  (n - h - 1) x (B1 F1 B0)            F1 beside B0
//   6  (h + 1) x (B1 B0)                   from the middle on as I's
//   7  (n - h - 1) x (W I0)
//   8  (h + 1) x W
// The pairs of phases 4 and 5 are DualPipe's overlapped forward-backward
// chunks: with a MoE model and options.moe_a2a_overlap each one's dispatch
// and combine runs under the other's compute (lower/a2a_pairs.hpp). The
// reference runs the middle rank's first F0 B1 of phase 4 one after the
// other to shorten its bubble; the pairing here overlaps them too.
// Needs m >= 2n.
std::vector<Action> dual_phases(int half_ranks, int half_rank, int microbatches, std::array<int, 2> chunk_stage);

}  // namespace trainsim::schedule
