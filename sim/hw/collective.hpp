// Analytic (alpha-beta) cost of collectives, in the manner of NCCL's own
// tuning model: time = base latency + steps x per-step latency
//                      + bus-bytes / bus bandwidth,
// taking the fastest of NCCL's three protocols (LL, LL128, Simple), for the
// algorithms NCCL runs (ring, tree) and a hierarchical all-reduce.
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

// How a collective is run. kAuto is what NCCL's tuner picks: the faster of
// ring and tree for an all-reduce, a ring otherwise. kTree applies to
// all-reduce only, and kHierarchical to all-reduce, reduce-scatter and
// all-gather over the same number of members on every node of two or more;
// elsewhere both fall back to a ring. Broadcast, all-to-all and send/recv have
// one algorithm each.
enum class CollectiveAlgorithm { kAuto, kRing, kTree, kHierarchical };

// Where the members of a group sit.
struct CollectiveGroup {
  int ranks = 1;
  int nodes = 1;           // distinct nodes spanned
  int ranks_per_node = 1;  // members on the busiest node
  int min_ranks_per_node = 1;  // and on the least busy
  // Distinct NICs the members sit on, on the node with fewest: as many as a
  // ring across nodes can drive in parallel (members sharing a NIC share it).
  int min_nics_per_node = 1;
  int ranks_per_nic = 1;   // members sharing the busiest NIC
  // All-to-all: on the busiest NIC, the pairs (member using that NIC, member on
  // another node); each sends and receives its share of the buffer through it.
  int nic_peers = 0;
  // Share of a NIC's bandwidth left when every NIC sends at once: below 1 when
  // the group spans leaf switches whose up-links are oversubscribed.
  double nic_share = 1.0;

  bool operator==(const CollectiveGroup&) const = default;
};

// The group formed by these GPU ids.
CollectiveGroup group_of(const ClusterSpec& cluster, const std::vector<int>& gpus);

// Share of its NICs' bandwidth each of `groups` keeps when all of them run a
// collective across nodes at once, as a stage's tensor-parallel ranks each
// reduce their own gradient shard over their data-parallel group. On every
// node, each group's rings want as many NICs as they drive (group_of's
// min_nics_per_node, never more than its own members sit on there); the node
// offers the NICs all the groups' members sit on. The share is the scarcest
// node's offer over demand, at most 1. Groups inside one node use no NIC and
// ask for none. Members of one group sharing a NIC are group_of's concern
// (min_nics_per_node, ranks_per_nic), not this share's. The groups are
// disjoint (no GPU in two of them) and hold GPU ids of the cluster;
// std::invalid_argument otherwise.
double concurrent_nic_share(const ClusterSpec& cluster, const std::vector<std::vector<int>>& groups);

// Bus bandwidth (bytes/s) of a ring over `group`: NVLink inside a node; across
// nodes, limited by the NICs the node's members can drive in parallel.
double ring_bus_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group);
// Bandwidth (bytes/s) of one send/recv over `group`'s pair: a ring's, but
// inside a node at most NCCL's send/recv rate (NodeSpec::nvlink_sendrecv_gb_per_s).
double send_recv_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group);

struct CollectivePhase;

// How NCCL would run a collective: the algorithm, the protocol that gives the
// shortest time, and what that time is made of:
//   seconds = base + (steps - network_steps) x NVLink step latency
//             + network_steps x network step latency + bus bytes / (bus bandwidth x share)
// (an all-to-all differs: see plan_point_to_point; a hierarchical plan is the
// sum of its phases).
struct CollectivePlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // never kAuto
  bool point_to_point = false;  // an all-to-all or send/recv: concurrent transfers, not a ring
  int steps = 0;          // ring steps: n - 1, twice for an all-reduce; tree: hops down and up the deepest path
  int network_steps = 0;  // of which cross the network: nodes - 1 (twice for an all-reduce)
  double base_us = 0.0;             // the protocol's launch latency
  double nvlink_step_us = 0.0;      // its latency per step inside a node
  double network_step_us = 0.0;     // and per step across nodes
  double bandwidth_share = 1.0;     // share of the bus bandwidth it reaches
  double bus_bytes_per_s = 0.0;     // the ring's bus bandwidth
  double bus_bytes = 0.0;           // bytes each rank moves in all (tree: twice the buffer, up and down)
  double seconds = 0.0;             // the whole collective
  std::vector<CollectivePhase> phases;  // hierarchical: its rings, in order
};

// One phase of a hierarchical collective: a ring inside every node (over the
// node's members, all nodes at once) or across nodes (one ring per local
// rank, over the members with that local rank, all at once).
struct CollectivePhase {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes = 0.0;         // per ring, as for plan_ring
  bool across_nodes = false;
  CollectivePlan plan;        // of one such ring
};

// `bytes` is the buffer each rank contributes (all-reduce, reduce-scatter) or
// receives in total (all-gather); for a broadcast, the buffer. All-to-all and
// send/recv are handed to plan_point_to_point.
CollectivePlan plan_ring(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node);
// NCCL's tree all-reduce: latency base + 2 x ((ranks per node - 1) x NVLink
// latency + log2(nodes) x network latency), bandwidth half the bus bandwidth
// x 0.92 x the protocol's share (LL 1/3.8; LL128 7/9 in one node, 120/128
// across; Simple 1), as NVIDIA/nccl src/graph/tuning.cc models it.
CollectivePlan plan_tree(double bytes, const CollectiveGroup& group, const NodeSpec& node);
// All-to-all and send/recv: concurrent transfers after the base latency and
// one step's latency (NVLink inside a node, network across). An all-to-all
// sends bytes/n to each other member: inside a node over NVLink ((ranks per
// node - 1) x bytes/n per rank at NVLink's bus bandwidth), across nodes through
// the NICs (nic_peers x bytes/n through the busiest NIC at its bus
// bandwidth); it takes the slower of the two. Send/recv moves the buffer once.
CollectivePlan plan_point_to_point(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                                   const NodeSpec& node);
// Reduce-scatter inside each node, then across nodes one ring per local rank
// (each over one NIC's share), then all-gather inside each node (for an
// all-reduce; a reduce-scatter stops after the rings across nodes, an
// all-gather starts with them). The sum of the phases' ring plans. Empty
// (steps 0) where it does not apply (see CollectiveAlgorithm).
CollectivePlan plan_hierarchical(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                                 const NodeSpec& node);
// The plan `algorithm` asks for (see CollectiveAlgorithm).
CollectivePlan plan_collective(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node,
                               CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);
core::Time collective_time(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node,
                           CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

}  // namespace trainsim::hw
