// Flow-level collectives: a ring collective run as the steps of NCCL's ring
// algorithm, each step a flow over the topology, so that collectives contend
// with each other and with pipeline transfers on shared links.
//
// When NCCL's model prefers its tree (small all-reduces across many nodes,
// plan_collective), the collective takes the tree's modelled time instead:
// trees are not run as flows.
//
// The ring follows NCCL's tuning model (plan_ring): the protocol chosen for
// the size, its launch latency once, its per-step latency on each hop (NVLink
// inside a node, network across), and its share of the bus bandwidth, which
// caps each step's flow. A ring that spans nodes runs as several channels
// (one per NIC its members can drive), each leaving a node through a GPU on
// that channel's NIC, as NCCL's rings do. Each rank sends step k + 1 once it has
// received step k (its earlier sends may still be in flight), each send
// paying its hop's latency. Along the chain of receives a collective then pays
// base + the hops' latencies + steps x chunk time, NCCL's own model: alone on
// the network the two agree; under contention, flows slow down.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hw/collective.hpp"
#include "hw/flow_network.hpp"
#include "hw/topology.hpp"

namespace trainsim::hw {

// Told when a collective starts moving data and when it ends (e.g. to slow the
// members' compute while it runs).
class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void on_collective(const std::vector<int>& members, bool running, core::Engine& engine) = 0;
};

class CollectiveRunner final : public core::Resource, public FlowClient {
 public:
  CollectiveRunner(const ClusterSpec& cluster, Topology& topology, FlowNetwork& network)
      : cluster_(cluster), topology_(topology), network_(network) {}

  // Registers a collective over `members` (GPU ids) and returns the index for
  // Task::route. `participants` tasks take part: it starts when all are ready
  // and they finish together. With `analytic_time` set it takes that long
  // once all have arrived, and moves no flows (the analytic fidelity).
  // `copies` lists the members of identical collectives that run at the same
  // time but are not simulated (a symmetric representative's peers): each
  // step's flow weighs them on the links they share (Topology::shared_route).
  std::uint32_t add(CollectiveKind kind, double bytes, std::vector<int> members, int participants,
                    std::optional<core::Time> analytic_time = std::nullopt,
                    std::vector<std::vector<int>> copies = {});

  void set_id(core::ResourceId id) { id_ = id; }
  void set_listener(CollectiveListener* listener) { listener_ = listener; }
  void on_ready(core::TaskId task, core::Engine& engine) override;
  void on_event(std::uint64_t token, core::Engine& engine) override;
  void on_flow_done(std::uint64_t token, core::Engine& engine) override;

 private:
  struct Ring {
    std::vector<int> gpus;              // in ring order
    std::vector<std::uint32_t> routes;  // position i -> i + 1 (built at launch)
    std::vector<char> crosses;          // that hop leaves the node
  };
  struct Instance {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    double bytes = 0.0;
    std::vector<int> members;
    int participants = 1;
    std::optional<core::Time> analytic_time;
    std::vector<std::vector<int>> copies;
    std::vector<core::TaskId> arrived;
    RingPlan plan;
    std::vector<Ring> rings;  // one per channel
    double wire_bytes = 0.0;  // per step per channel, inflated by the protocol's share
    double network_hop_us = 0.0;  // latency of a hop between nodes (see launch)
    double cap = 0.0;         // bytes/s per channel
    // Per (channel, position): steps whose send has started, steps received.
    std::vector<int> started, received;
    int complete = 0;  // (channel, position) pairs that received every step
  };

  void launch(std::uint32_t id, core::Engine& engine);
  static bool moves_data(const Instance& in);  // takes time, so slows compute beside it
  void try_send(std::uint32_t id, int channel, int position, core::Engine& engine);
  void finish(std::uint32_t id, core::Engine& engine);

  const ClusterSpec& cluster_;
  Topology& topology_;
  FlowNetwork& network_;
  std::vector<Instance> instances_;
  core::ResourceId id_ = 0;
  CollectiveListener* listener_ = nullptr;
};

}  // namespace trainsim::hw
