// Flow-level collectives: a collective run as the phases of its algorithm
// (collective_layout.hpp), each moving its bytes as flows over the topology,
// so that collectives contend with each other and with pipeline transfers on
// shared links.
//
// The plan is NCCL's tuning model's (plan_collective, for the algorithm the
// runner was given): the protocol chosen for the size, its launch latency at
// the start of each phase, its per-hop latencies, and its share of the bus
// bandwidth, which caps each flow.
//
// Ring phases (ring all-reduce, reduce-scatter, all-gather, and the phases of
// a hierarchical one) run NCCL's ring steps. A ring that spans nodes runs as
// several channels (one per NIC its members can drive), each leaving a node
// through a GPU on that channel's NIC, as NCCL's rings do. Each rank sends
// step k + 1 once it has received step k (its earlier sends may still be in
// flight), each send paying its hop's latency. Along the chain of receives a
// collective then pays base + the hops' latencies + steps x chunk time,
// NCCL's own model: alone on the network the two agree; under contention,
// flows slow down.
//
// Pipelined phases (NCCL's tree all-reduce, broadcast, all-to-all, send/recv)
// start their transfers in waves, at the times their inputs' latencies set
// (independent of bandwidth), each wave's flows together; a transfer is done
// when its flow and its inputs are.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hw/bucket_train.hpp"
#include "hw/collective.hpp"
#include "hw/collective_layout.hpp"
#include "hw/flow_network.hpp"
#include "hw/topology.hpp"

namespace trainsim::hw {

// The most members one collective takes: 2^22 - 1 (4,194,303).
inline constexpr std::size_t kMaxCollectiveRanks = 0x3fffff;

// Told when a collective starts moving data and when it ends (e.g. to slow the
// members' compute while it runs).
// `group` is the collective's CollectiveRunner::GroupId: the same for every
// collective over the same registered group, so a listener can keep what it
// derives from the members per group. `ends` is when the collective ends,
// where that is known as it starts (an analytic time; at its end, now), and
// Time::max() for both calls where it is not (flows, a bucket train's
// reductions).
class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void on_collective(std::uint32_t group, const std::vector<int>& members, bool running,
                             core::Engine& engine, core::Time ends) = 0;
};

class CollectiveRunner final : public core::Resource, public FlowClient {
 public:
  CollectiveRunner(const ClusterSpec& cluster, Topology& topology, FlowNetwork& network,
                   CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto)
      : cluster_(cluster), topology_(&topology), network_(&network), algorithm_(algorithm) {}
  // A copy of `other`, not yet run, over copies of its topology and network
  // (lower::copy_unrun); its listener and trains are set again by the caller.
  CollectiveRunner(const CollectiveRunner& other, Topology& topology, FlowNetwork& network);

  // Registers a group of `members` (GPU ids) that collectives run over, and
  // returns its id. `copies` lists the members of identical collectives that
  // run at the same time but are not simulated (a symmetric representative's
  // peers): each flow weighs them on the links they share
  // (Topology::shared_route). Many collectives share one group (a stage's
  // data-parallel group reduces every bucket), so it is held once.
  using GroupId = std::uint32_t;
  GroupId add_group(std::vector<int> members, std::vector<std::vector<int>> copies = {});
  const std::vector<int>& members(GroupId group) const { return groups_[group].members; }

  // Registers a collective over a group and returns the index for
  // Task::route. `participants` tasks take part: it starts when all are ready
  // and they finish together. With `analytic_time` set it takes that long
  // once all have arrived, and moves no flows (the analytic fidelity).
  // `across_share` below 1: an all-to-all as DeepEP moves it (lay_out).
  // `host_copy`: run as flows, it ends that long after its data has moved (a
  // copy to or from the host that its stream makes next, as offloading
  // does); an analytic time includes it already.
  std::uint32_t add(CollectiveKind kind, double bytes, GroupId group, int participants,
                    std::optional<core::Time> analytic_time = std::nullopt, double across_share = 1.0,
                    core::Time host_copy = core::Time::zero());
  // The same over a group of its own.
  std::uint32_t add(CollectiveKind kind, double bytes, std::vector<int> members, int participants,
                    std::optional<core::Time> analytic_time = std::nullopt,
                    std::vector<std::vector<int>> copies = {}) {
    return add(kind, bytes, add_group(std::move(members), std::move(copies)), participants, analytic_time);
  }

  // A collective of one participant with an analytic time, registered by
  // the task alone: its route is what this returns, its duration the
  // analytic time and its amount the bytes. It runs as an instance of
  // add's would (the same calls in the same order), but no instance is
  // kept: a symmetric ZeRO-3 plan makes one for every gather and scatter.
  // Not for a collective a bucket train names (set_train, set_gate). Null
  // when `group`'s id is too large for a route (2^28 groups and more).
  std::optional<std::uint32_t> solo_route(CollectiveKind kind, GroupId group) const;

  // A collective task as reports show it: its kind, its bytes (add's: what
  // each member contributes, or receives in all for an all-gather) and how
  // many members its group has.
  struct Description {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    double bytes = 0.0;
    int members = 0;
  };
  Description describe(const core::Task& task) const;

  void set_id(core::ResourceId id) { id_ = id; }
  void set_listener(CollectiveListener* listener) { listener_ = listener; }
  // An analytic collective that runs a bucket train's reductions left at
  // the end of its pieces (hw/bucket_train.hpp): from the train's tail_start,
  // with a boundary at each instant of its tail (the listener told the
  // collective ends and starts again, as at one reduction's end and the
  // next's start), ending at the last. `trains` outlives the run.
  void set_trains(std::vector<BucketTrain>* trains) { trains_ = trains; }
  void set_train(std::uint32_t instance, std::uint32_t train) { instances_.at(instance).train = static_cast<std::int32_t>(train); }
  // An analytic collective that is `train`'s `after` (and no train's
  // reductions): as it launches, the train learns when it will end
  // (BucketTrain::after_end).
  void set_gate(std::uint32_t instance, std::uint32_t train) {
    instances_.at(instance).gates = true;
    gates_.emplace_back(instance, train);
  }
  void on_ready(core::TaskId task, core::Engine& engine) override;
  void on_event(std::uint64_t token, core::Engine& engine) override;
  void on_flow_done(std::uint64_t token, core::Engine& engine) override;

 private:
  struct Group {
    std::vector<int> members;
    std::vector<std::vector<int>> copies;
  };
  struct Instance {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    float across_share = 1.0f;  // lay_out's (in what padding after `kind` leaves)
    std::int32_t train = -1;    // set_train's, or -1
    bool gates = false;         // set_gate's
    double bytes = 0.0;
    GroupId group = 0;
    int participants = 1;
    std::optional<core::Time> analytic_time;
    core::Time host_copy;  // add's
    // The participants' tasks as they arrive: arrivals_[first_arrival ..
    // first_arrival + arrived), room for every participant made at add; a
    // collective of one participant (each in a symmetric run) keeps its
    // task here instead, with no room in arrivals_ (one cache miss less as
    // it starts and as it ends).
    std::size_t first_arrival = 0;
    int arrived = 0;
    core::TaskId solo = 0;
    // What a collective run as flows tracks while it runs; made at launch, so
    // the many collectives that only take their analytic time stay small.
    struct Progress {
      std::vector<CollectiveStage> stages;  // built at launch
      std::size_t stage = 0;                // the one running
      // The running stage. Ring steps: per (ring, position), the route and
      // whether it crosses nodes to the next position, the steps whose send has
      // started and the steps received. Pipelined: per transfer its route and
      // what it still waits for (its flow and its inputs), who waits for it,
      // and the transfers by start time, cut into waves.
      std::vector<std::uint32_t> routes;
      std::vector<char> crosses;
      std::vector<int> started, received;
      // Ring sends waiting out their hop's latency, batched by the instant it
      // ends (batch index in the event's token); batches not fired yet by time.
      std::vector<std::vector<int>> batches;
      std::vector<int> free_batches;
      std::vector<std::pair<core::Time, int>> open_batches;
      std::vector<int> waiting, feeds_begin, feeds;
      std::vector<int> by_start, wave_begin;
      std::vector<core::Time> wave_at;
      int complete = 0;  // (ring, position) pairs that received every step; transfers done
    };
    std::shared_ptr<Progress> progress;  // shared by no other instance: null until launch, never copied
  };

  std::span<const core::TaskId> arrived(const Instance& in) const {
    if (in.participants == 1) return {&in.solo, static_cast<std::size_t>(in.arrived)};
    return {arrivals_.data() + in.first_arrival, static_cast<std::size_t>(in.arrived)};
  }
  void launch(std::uint32_t id, core::Engine& engine);
  void begin_stage(std::uint32_t id, core::Engine& engine);
  void stage_done(std::uint32_t id, core::Engine& engine);
  void data_moved(std::uint32_t id, core::Engine& engine);  // its flows done: then its host copy, or the end
  std::uint32_t route_of(const Instance& in, int from, int to);
  static bool moves_data(const Instance& in);  // takes time, so slows compute beside it
  // Its end is known as it starts: an analytic time, not a bucket train's
  // reductions (which end where the train's play says).
  static bool end_known(const Instance& in) { return in.analytic_time && in.train < 0; }
  void try_send(std::uint32_t id, int ring, int position, core::Engine& engine);
  void transfer_done(std::uint32_t id, int transfer, core::Engine& engine);
  void finish(std::uint32_t id, core::Engine& engine);

  CollectiveRunner(const CollectiveRunner&) = default;  // only rebound (above)

  const ClusterSpec& cluster_;
  Topology* topology_;     // never null
  FlowNetwork* network_;   // never null
  CollectiveAlgorithm algorithm_;
  std::vector<Group> groups_;
  std::vector<Instance> instances_;
  std::vector<core::TaskId> arrivals_;  // every instance's, in one table (no allocation per instance)
  core::ResourceId id_ = 0;
  CollectiveListener* listener_ = nullptr;
  std::vector<BucketTrain>* trains_ = nullptr;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> gates_;  // (instance, train), set_gate's
};

}  // namespace trainsim::hw
