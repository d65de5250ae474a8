// Point-to-point transfers as flows over routes of links.
//
// A transfer first waits out its route's latency, then becomes a flow that
// shares each link of its route with the other flows on it. One that finds
// every link of its route empty when it is ready takes its place at once,
// its bytes to move from the end of its latency: its rate then is already
// known, so its latency needs no event of its own; a flow that joins one of
// its links before then sends it back to a latency timer, and the rates come
// out as if it had waited. Rates follow
// max-min fairness, computed by progressive filling: raise every unfrozen
// flow's rate together until some link is full, freeze the flows crossing it,
// repeat. When a flow starts or ends only the flows that share links with it,
// directly or through others, are re-solved, visited in a fixed order so that
// results are reproducible. Links whose flows' caps they can carry all at
// once never limit a rate, so flows do not join through them: the thousands
// of capped flows of a collective over a whole cluster stay small components.
//
// Projected finish times sit in a min-heap (stale entries are skipped by a
// version stamp), and the network keeps one pending completion event in the
// engine: the earliest finish. It is moved only when that earliest finish
// changes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.hpp"

namespace trainsim::hw {

using LinkId = std::uint32_t;

struct Link {
  double bytes_per_s = 0.0;
  core::Time latency;
};

struct Route {
  std::vector<LinkId> links;
  // How many identical flows one flow on this route stands for, link by link
  // (empty: one everywhere). A simulated representative of several GPUs that
  // share a NIC weighs as many on it: max-min fairness counts it that often.
  std::vector<double> weights;
  core::Time latency;  // sum of the links' latencies
  // A transfer's own ceiling in bytes/s (0: none), below what its links
  // allow: the rate NCCL's send/recv reaches between two GPUs of a node.
  double max_bytes_per_s = 0.0;
  // The rate of an uncapped flow alone on the route (FlowNetwork::lone_rate),
  // found the first time one is; below zero until then.
  double lone_share = -1.0;

  double weight(std::size_t i) const { return weights.empty() ? 1.0 : weights[i]; }
};

// Told when a flow it started ends (see FlowNetwork::start_flow).
class FlowClient {
 public:
  virtual ~FlowClient() = default;
  virtual void on_flow_done(std::uint64_t token, core::Engine& engine) = 0;
};

class FlowNetwork final : public core::Resource {
 public:
  LinkId add_link(Link link);
  // Returns an index for Task::route. `extra_latency` is added to the links' own
  // (for hops left out of `links` because they can never be a bottleneck);
  // `max_bytes_per_s` (0 for none) caps every transfer on the route.
  std::uint32_t add_route(std::vector<LinkId> links, core::Time extra_latency = core::Time::zero(),
                          std::vector<double> weights = {}, double max_bytes_per_s = 0.0);

  void on_ready(core::TaskId task, core::Engine& engine) override;
  void on_event(std::uint64_t token, core::Engine& engine) override;

  // Starts a flow at once (the caller has paid any latency), for a client such
  // as a collective, not for a task of the graph. `max_bytes_per_s` (0 for
  // none) caps its rate, as a protocol's own overheads would.
  void start_flow(double bytes, std::uint32_t route, double max_bytes_per_s, FlowClient& client,
                  std::uint64_t token, core::Engine& engine);
  // Starts several flows at once for one client, solving rates once for all
  // (a burst of transfers that begin together: an all-to-all, a tree's level).
  struct FlowStart {
    double bytes = 0.0;
    std::uint32_t route = 0;
    double max_bytes_per_s = 0.0;
    std::uint64_t token = 0;
  };
  void start_flows(const std::vector<FlowStart>& flows, FlowClient& client, core::Engine& engine);

  // The network receives two kinds of events: route-latency expiries (one per
  // transfer that does not take its place at once) and its single completion
  // check, which is cancelled whenever the earliest finish moves. They need
  // separate engine owners so that cancelling the completion check leaves the
  // latency timers alone.
  void set_ids(core::ResourceId completion, core::ResourceId timers) {
    completion_id_ = completion;
    timer_id_ = timers;
  }
  const Link& link(LinkId id) const { return links_[id]; }
  // Bytes each link has carried (a weighted flow counts for all it stands for).
  const std::vector<double>& bytes_carried() const { return bytes_carried_; }
  // With recording on, every change of a link's total rate: (time, bytes/s).
  void record_rates(bool on) { record_rates_ = on; }
  const std::vector<std::vector<std::pair<core::Time, double>>>& rate_history() const { return rate_history_; }
  // Makes a link slower (a degraded cable): its bandwidth times `factor`.
  void scale_bandwidth(LinkId id, double factor) {
    links_[id].bytes_per_s *= factor;
    for (Route& r : routes_) r.lone_share = -1.0;
  }
  const Route& route(std::uint32_t id) const { return routes_[id]; }
  std::size_t link_count() const { return links_.size(); }
  // Flow rates solved so far, one per flow of each component re-solved: the
  // solver's work, which tests hold to the size of what a change can touch.
  std::uint64_t flows_solved() const { return flows_solved_; }

 private:
  struct Flow {
    core::TaskId task = 0;
    std::uint32_t route = 0;
    double size = 0.0;       // bytes in all
    double remaining = 0.0;  // bytes
    double rate = 0.0;       // bytes per picosecond
    core::Time updated;      // when `remaining` was last brought up to date
    core::Time finish;       // projected finish at the current rate
    std::uint32_t version = 0;
    std::uint32_t active_index = 0;  // position in active_
    bool active = false;
    double cap = 0.0;                // bytes per picosecond; 0 for none
    bool early = false;              // took its place before its latency ended (on_ready)
    FlowClient* client = nullptr;    // told instead of finishing `task`
    std::uint64_t token = 0;
  };
  struct Due {
    core::Time finish;
    std::uint32_t slot;
    std::uint32_t version;
  };

  void begin_flow(core::TaskId task, core::Engine& engine);
  Flow transfer_flow(core::TaskId task, const core::Task& t) const;  // a task's transfer as a flow, not yet placed
  void add_flow(const Flow& flow, core::Engine& engine);
  // Takes a slot for `flow`, its bytes moving from `now` (later than the
  // engine's for a lone transfer that waits out its latency), without
  // solving rates.
  std::uint32_t insert_flow(const Flow& flow, core::Time now, core::Engine& engine);
  void end_flow(std::uint32_t slot);
  bool alone_on(const Route& route) const;  // no flow on any of its links
  // Sends the flows on `route`'s links that took their place early and have
  // yet to move back to their latency timers.
  void send_back_waiting(const Route& route, core::Engine& engine);
  // A flow's finish at its new rate from `now`, in the due-heap (none while starved).
  void project_finish(std::uint32_t slot, core::Time now);
  void resolve(const std::vector<LinkId>& seed_links, core::Time now);
  void fill();  // rates of the component resolve() gathered
  double lone_rate(std::uint32_t slot);  // fill()'s rate for a component of one flow (kept per route when uncapped)
  // Whether a link can hold a flow below its cap: it carries an uncapped flow,
  // or its flows' caps add up to (nearly) its bandwidth or more.
  bool can_limit(LinkId l) const;
  void push_due(std::uint32_t slot);
  bool stale(const Due& d) const;
  void reschedule(core::Engine& engine);

  std::vector<Link> links_;
  std::vector<Route> routes_;
  std::vector<std::vector<std::uint32_t>> flows_on_link_;  // active flow slots per link
  std::vector<Flow> flows_;                                // slots, reused
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> active_;  // active slots, any order
  std::vector<Due> due_;               // min-heap on (finish, slot)
  core::Time scheduled_ = core::Time::max();  // time of the pending completion event
  core::ResourceId completion_id_ = 0;
  core::ResourceId timer_id_ = 0;
  // Scratch space for resolve(), kept to avoid allocating on every event.
  std::vector<char> link_seen_, flow_seen_, frozen_;
  std::vector<double> capacity_;
  std::vector<double> unfrozen_;  // weight of the unfrozen flows on each link
  std::vector<std::uint32_t> comp_links_, comp_flows_, stack_;
  std::vector<double> old_rates_;  // the component's rates before a solve, by comp_flows_ position
  struct ShareEntry {
    double share;
    LinkId link;
  };
  struct CapEntry {
    double cap;
    std::uint32_t slot;
  };
  std::vector<ShareEntry> shares_;  // heap for fill()
  std::vector<CapEntry> capped_;
  std::vector<LinkId> changed_;
  // Scratch for on_event and start_flows.
  struct Ended {
    FlowClient* client;
    std::uint64_t token;
    core::TaskId task;
  };
  std::vector<std::uint32_t> done_;
  std::vector<std::uint32_t> waiting_;  // send_back_waiting's flows
  // By link: its flows that took their place before their latency ended
  // (moving by now or not), so that only their links are searched for one
  // still waiting.
  std::vector<std::uint32_t> early_on_link_;
  std::vector<LinkId> touched_, seeds_;
  std::vector<Ended> ended_;
  std::vector<char> limiting_;  // by link, during fill(): can limit, and in the component
  std::vector<LinkId> limiting_links_;
  // By link: the caps of its capped flows, and the weight of its uncapped
  // ones (bytes per picosecond; flows), for can_limit.
  std::vector<double> cap_load_, uncapped_on_;
  std::vector<double> bytes_carried_;
  bool record_rates_ = false;
  std::uint64_t flows_solved_ = 0;
  std::vector<std::vector<std::pair<core::Time, double>>> rate_history_;
};

}  // namespace trainsim::hw
