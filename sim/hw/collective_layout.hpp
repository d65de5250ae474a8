// Where a collective's bytes go: a plan (collective.hpp) laid out on its
// members' GPUs as the phases the flow-level runner (collective_runner.hpp)
// executes, one after another. A phase is of one of two shapes:
//
// Ring steps, for ring all-reduce, reduce-scatter and all-gather: rings of
// GPUs, each position sending `steps` chunks to the next, step k + 1 once it
// has received step k (NCCL's ring). Several rings run at once: a ring's
// channels across nodes, or the rings of a hierarchical phase.
//
// Pipelined transfers, for trees, broadcast chains and all-to-all pairs: each
// transfer moves its whole share of the buffer between two GPUs as one flow.
// A transfer forwards what its inputs deliver, so it starts once they have
// started plus its hop's latency, and ends no earlier than they end (cut-
// through, as NCCL's chunked pipelines behave when chunks are small). Alone on
// the network a pipeline then takes its start latency, the hops' latencies
// along its deepest path and the time of one transfer, which is NCCL's model;
// under contention each transfer is a flow that slows down, and what it feeds
// waits for it.
//
// Every layout keeps each flow below its link's bandwidth when the collective
// is alone, by capping flows at the protocol's share of the bus bandwidth, so
// that flow and analytic times agree on an idle network.
#pragma once

#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"

namespace trainsim::hw {

// The most ring steps a phase simulates; a ring that takes more carries
// several of NCCL's steps in each (see ring_steps in collective_layout.cpp).
inline constexpr int kMaxRingSteps = 64;

struct RingSteps {
  std::vector<std::vector<int>> rings;  // GPU ids in ring order; every ring the same size
  int steps = 0;                        // chunks each position sends (at most kMaxRingSteps)
  double wire_bytes = 0.0;              // per chunk, inflated by the protocol's bandwidth share
  double cap = 0.0;                     // bytes/s per flow
  double nvlink_hop_us = 0.0;           // latency of a chunk's hop inside a node
  double network_hop_us = 0.0;          // and between nodes
};

struct PipelinedTransfer {
  int from = 0;  // GPU ids
  int to = 0;
  double bytes = 0.0;       // on the wire, inflated by the protocol's bandwidth share
  double cap = 0.0;         // bytes/s
  double latency_us = 0.0;  // its hop's latency, paid after its inputs have started
  double start_us = 0.0;    // when it starts on an idle network, from the phase's first sends
  std::vector<int> inputs;  // earlier transfers of the phase whose data it forwards
};

struct CollectiveStage {
  double start_us = 0.0;  // from the phase's start to its first sends (the protocol's launch latency)
  RingSteps ring;         // the phase's shape when `transfers` is empty
  std::vector<PipelinedTransfer> transfers;  // in an order where inputs come first
};

// The phases of `plan` (from plan_collective for this kind, size and group)
// over `members`, a group of at least two GPUs. A broadcast starts from
// members[0]; a send/recv goes from members[0] to members[1].
//
// `across_share` below 1 lays an all-to-all out as DeepEP's kernels move it
// (deepseek-ai/DeepEP, the normal kernels): what a member sends to another
// node crosses the NICs once, `across_share` of the all-to-all's bytes for
// that node (tokens deduplicated, workload/moe.hpp's deepep_network_share),
// to the member of that node at the sender's place in its node, which
// forwards each receiver's part over NVLink, pipelined with its arrival.
std::vector<CollectiveStage> lay_out(const ClusterSpec& cluster, CollectiveKind kind, double bytes,
                                     const std::vector<int>& members, const CollectivePlan& plan,
                                     double across_share = 1.0);

}  // namespace trainsim::hw
