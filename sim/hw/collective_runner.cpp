#include "hw/collective_runner.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace trainsim::hw {

namespace {

// Tokens: what (2 bits), channel (8), position (22), instance (32).
enum : std::uint64_t { kBegin = 0, kHopDone = 1, kFlowDone = 2, kAnalyticDone = 3 };
std::uint64_t token(std::uint64_t what, std::uint32_t instance, int channel = 0, int position = 0) {
  return what | (static_cast<std::uint64_t>(channel) << 2) | (static_cast<std::uint64_t>(position) << 10) |
         (static_cast<std::uint64_t>(instance) << 32);
}
std::uint64_t what_of(std::uint64_t t) { return t & 3; }
int channel_of(std::uint64_t t) { return static_cast<int>((t >> 2) & 0xff); }
int position_of(std::uint64_t t) { return static_cast<int>((t >> 10) & 0x3fffff); }
std::uint32_t instance_of(std::uint64_t t) { return static_cast<std::uint32_t>(t >> 32); }

}  // namespace

bool CollectiveRunner::moves_data(const Instance& in) {
  return in.analytic_time ? *in.analytic_time > core::Time::zero() : in.bytes > 0.0;
}

std::uint32_t CollectiveRunner::add(CollectiveKind kind, double bytes, std::vector<int> members, int participants,
                                    std::optional<core::Time> analytic_time, std::vector<std::vector<int>> copies) {
  if (participants < 1) throw std::logic_error("a collective needs a participant");
  if (members.size() > 0x3fffff) throw std::logic_error("a collective of more than 4M ranks");
  Instance in;
  in.kind = kind;
  in.bytes = bytes;
  in.members = std::move(members);
  in.participants = participants;
  in.analytic_time = analytic_time;
  for (const auto& copy : copies) {
    if (copy.size() != in.members.size()) throw std::logic_error("a copy of a collective with other members");
  }
  in.copies = std::move(copies);
  instances_.push_back(std::move(in));
  return static_cast<std::uint32_t>(instances_.size() - 1);
}

void CollectiveRunner::on_ready(core::TaskId task, core::Engine& engine) {
  // A participant's task starts when the collective does, not while it waits
  // for the others: the wait is idle time, not communication.
  const std::uint32_t id = engine.graph().task(task).route;
  if (id >= instances_.size()) throw std::logic_error("task names a missing collective");
  Instance& in = instances_[id];
  in.arrived.push_back(task);
  if (static_cast<int>(in.arrived.size()) == in.participants) launch(id, engine);
}

void CollectiveRunner::launch(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  for (core::TaskId task : in.arrived) engine.start(task);
  if (listener_ != nullptr && moves_data(in)) listener_->on_collective(in.members, true, engine);
  if (in.analytic_time) {
    engine.schedule(id_, engine.now() + *in.analytic_time, token(kAnalyticDone, id));
    return;
  }
  const CollectiveGroup group = group_of(cluster_, in.members);
  in.plan = plan_collective(in.kind, in.bytes, group, cluster_.node);
  if (in.plan.steps == 0) {
    finish(id, engine);
    return;
  }
  if (in.plan.tree || in.plan.point_to_point) {
    // Only rings run as flows; a tree or an all-to-all takes its modelled time.
    engine.schedule(id_, engine.now() + core::Time::seconds(in.plan.seconds), token(kAnalyticDone, id));
    return;
  }
  // Members by node, in GPU order. Channel c leaves each node through the last
  // member on NIC c (or on the nearest NIC that has one), so channels use
  // different NICs; the next member, cyclically, is where it enters.
  std::map<int, std::vector<int>> by_node;
  std::vector<int> sorted = in.members;
  std::sort(sorted.begin(), sorted.end());
  for (int g : sorted) by_node[cluster_.node_of(g)].push_back(g);
  const NodeSpec& node = cluster_.node;
  auto nic_of = [&](int gpu) { return (gpu % node.gpus_per_node) * node.nics_per_node / node.gpus_per_node; };
  const int channels =
      group.nodes > 1 ? std::clamp(std::min(group.min_ranks_per_node, node.nics_per_node), 1, 255) : 1;
  in.rings.assign(channels, {});
  for (int c = 0; c < channels; ++c) {
    Ring& ring = in.rings[c];
    for (const auto& [n, block] : by_node) {
      const int k = static_cast<int>(block.size());
      int exit = -1;
      for (int shift = 0; shift < node.nics_per_node && exit < 0; ++shift) {
        for (int j = k - 1; j >= 0; --j) {
          if (nic_of(block[j]) == (c + shift) % node.nics_per_node) {
            exit = j;
            break;
          }
        }
      }
      if (exit < 0) exit = (c + k - 1) % k;
      for (int j = 1; j <= k; ++j) ring.gpus.push_back(block[(exit + j) % k]);
    }
    const int n = static_cast<int>(ring.gpus.size());
    for (int i = 0; i < n; ++i) {
      const int from = ring.gpus[i], to = ring.gpus[(i + 1) % n];
      if (in.copies.empty()) {
        ring.routes.push_back(topology_.route(from, to));
      } else {
        const auto at = [&](int gpu) {
          return static_cast<std::size_t>(std::find(in.members.begin(), in.members.end(), gpu) - in.members.begin());
        };
        std::vector<std::pair<int, int>> pairs = {{from, to}};
        for (const auto& copy : in.copies) pairs.emplace_back(copy[at(from)], copy[at(to)]);
        ring.routes.push_back(topology_.shared_route(from, to, pairs));
      }
      ring.crosses.push_back(cluster_.node_of(from) != cluster_.node_of(to));
    }
  }
  const int n = static_cast<int>(in.members.size());
  // NCCL's model charges the network latency on 2 (nodes - 1) steps of an
  // all-reduce (nodes - 1 otherwise); the chain of receives crosses a network
  // hop steps x nodes / n times. Spreading the model's extra network latency
  // over those crossings keeps their sum, so both fidelities agree when alone.
  const double crossings = static_cast<double>(in.plan.steps) * group.nodes / n;
  in.network_hop_us = in.plan.nvlink_step_us;
  if (crossings > 0.0 && group.nodes > 1) {
    in.network_hop_us += (in.plan.network_step_us - in.plan.nvlink_step_us) * in.plan.network_steps / crossings;
  }
  in.wire_bytes = in.bytes / channels / n / in.plan.bandwidth_share;
  // Cap each step at the bus bandwidth without any oversubscription discount:
  // here the up-links themselves are links, and contention on them slows the flows.
  CollectiveGroup unshared = group;
  unshared.nic_share = 1.0;
  in.cap = ring_bus_bytes_per_s(node, unshared) / channels;
  in.started.assign(static_cast<std::size_t>(channels) * n, 0);
  in.received.assign(in.started.size(), 0);
  engine.schedule(id_, engine.now() + core::Time::microseconds(in.plan.base_us), token(kBegin, id));
}

void CollectiveRunner::try_send(std::uint32_t id, int channel, int position, core::Engine& engine) {
  Instance& in = instances_[id];
  const int n = static_cast<int>(in.members.size());
  const std::size_t at = static_cast<std::size_t>(channel) * n + position;
  const int step = in.started[at];
  if (step >= in.plan.steps || in.received[at] < step) return;
  ++in.started[at];
  const Ring& ring = in.rings[channel];
  const double step_us = ring.crosses[position] ? in.network_hop_us : in.plan.nvlink_step_us;
  engine.schedule(id_, engine.now() + core::Time::microseconds(step_us), token(kHopDone, id, channel, position));
}

void CollectiveRunner::on_event(std::uint64_t t, core::Engine& engine) {
  const std::uint32_t id = instance_of(t);
  Instance& in = instances_[id];
  if (what_of(t) == kAnalyticDone) {
    finish(id, engine);
    return;
  }
  if (what_of(t) == kBegin) {
    for (int c = 0; c < static_cast<int>(in.rings.size()); ++c) {
      for (int i = 0; i < static_cast<int>(in.members.size()); ++i) try_send(id, c, i, engine);
    }
    return;
  }
  // A hop's latency has passed: the step's bytes start to flow.
  const int c = channel_of(t), i = position_of(t);
  network_.start_flow(in.wire_bytes, in.rings[c].routes[i], in.cap, *this, token(kFlowDone, id, c, i), engine);
}

void CollectiveRunner::on_flow_done(std::uint64_t t, core::Engine& engine) {
  const std::uint32_t id = instance_of(t);
  Instance& in = instances_[id];
  const int c = channel_of(t), i = position_of(t);
  const int n = static_cast<int>(in.members.size());
  const int next = (i + 1) % n;
  const std::size_t next_at = static_cast<std::size_t>(c) * n + next;
  if (++in.received[next_at] == in.plan.steps) ++in.complete;
  if (in.complete == static_cast<int>(in.received.size())) {
    finish(id, engine);
    return;
  }
  try_send(id, c, next, engine);
}

void CollectiveRunner::finish(std::uint32_t id, core::Engine& engine) {
  if (listener_ != nullptr && moves_data(instances_[id])) listener_->on_collective(instances_[id].members, false, engine);
  // Copy: finishing a task may make the next collective of a chain ready.
  const std::vector<core::TaskId> tasks = instances_[id].arrived;
  for (core::TaskId task : tasks) engine.finish(task);
}

}  // namespace trainsim::hw
