// Analytic (alpha-beta) cost of ring collectives, in the manner of NCCL's own
// tuning model: time = base latency + steps x per-step latency
//                      + bus-bytes / bus bandwidth,
// taking the fastest of NCCL's three protocols (LL, LL128, Simple).
#pragma once

#include <vector>

#include "core/time.hpp"
#include "hw/cluster_spec.hpp"

namespace trainsim::hw {

enum class CollectiveKind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,  // a ring, as NCCL runs it: n steps of latency, the buffer once over the bus
  kAllToAll,   // every rank sends 1/n of its buffer to each other rank (NCCL: grouped send/recv)
  kSendRecv,   // one rank to one other (the group holds the two)
};

// Where the members of a group sit.
struct CollectiveGroup {
  int ranks = 1;
  int nodes = 1;           // distinct nodes spanned
  int ranks_per_node = 1;  // members on the busiest node
  int min_ranks_per_node = 1;  // and on the least busy: a ring can drive only that many NICs in parallel
  // Share of a NIC's bandwidth left when every NIC sends at once: below 1 when
  // the group spans leaf switches whose up-links are oversubscribed.
  double nic_share = 1.0;
};

// The group formed by these GPU ids.
CollectiveGroup group_of(const ClusterSpec& cluster, const std::vector<int>& gpus);

// Bus bandwidth (bytes/s) of a ring over `group`: NVLink inside a node; across
// nodes, limited by the NICs the node's members can drive in parallel.
double ring_bus_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group);

// How NCCL would run a ring collective: the protocol that gives the shortest
// time, and what that time is made of.
struct RingPlan {
  bool tree = false;            // the plan is NCCL's tree all-reduce, not a ring (see plan_collective)
  bool point_to_point = false;  // an all-to-all or send/recv: concurrent transfers, not a ring
  int steps = 0;          // ring steps: n - 1, twice for an all-reduce
  int network_steps = 0;  // of which cross the network: nodes - 1 (twice for an all-reduce)
  double base_us = 0.0;             // the protocol's launch latency
  double nvlink_step_us = 0.0;      // its latency per step inside a node
  double network_step_us = 0.0;     // and per step across nodes
  double bandwidth_share = 1.0;     // share of the bus bandwidth it reaches
  double bus_bytes_per_s = 0.0;     // the ring's bus bandwidth
  double bus_bytes = 0.0;           // bytes each rank moves in all
  double seconds = 0.0;             // the whole collective
};

// `bytes` is the buffer each rank contributes (all-reduce, reduce-scatter) or
// receives in total (all-gather).
RingPlan plan_ring(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node);
// The faster of the ring and, for an all-reduce, NCCL's tree: latency
// base + 2 x ((ranks per node - 1) x NVLink latency + log2(nodes) x network
// latency), bandwidth half the bus bandwidth x 0.92 x the protocol's share
// (LL 1/3.8; LL128 7/9 in one node, 120/128 across; Simple 1), as
// NVIDIA/nccl src/graph/tuning.cc models it.
RingPlan plan_collective(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node);
core::Time collective_time(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                           const NodeSpec& node);

}  // namespace trainsim::hw
