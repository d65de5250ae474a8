#include "hw/collective_runner.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::hw {

namespace {

// Tokens: what (3 bits), index (29: a ring position, a wave or a transfer),
// instance (32; a solo collective's task).
enum : std::uint64_t { kBegin = 0, kHopDone = 1, kFlowDone = 2, kAnalyticDone = 3, kSoloDone = 4 };
constexpr std::uint64_t kIndexLimit = std::uint64_t{1} << 29;
std::uint64_t token(std::uint64_t what, std::uint32_t instance, std::size_t index = 0) {
  return what | (static_cast<std::uint64_t>(index) << 3) | (static_cast<std::uint64_t>(instance) << 32);
}
std::uint64_t what_of(std::uint64_t t) { return t & 7; }
int index_of(std::uint64_t t) { return static_cast<int>((t >> 3) & (kIndexLimit - 1)); }
std::uint32_t instance_of(std::uint64_t t) { return static_cast<std::uint32_t>(t >> 32); }

// A solo collective's route: the tag, its kind (3 bits) and its group (28).
constexpr std::uint32_t kSoloTag = 1u << 31;
constexpr std::uint32_t kSoloGroups = 1u << 28;
bool is_solo(std::uint32_t route) { return (route & kSoloTag) != 0; }
CollectiveRunner::GroupId solo_group(std::uint32_t route) { return route & (kSoloGroups - 1); }
CollectiveKind solo_kind(std::uint32_t route) { return static_cast<CollectiveKind>((route >> 28) & 7); }

}  // namespace

bool CollectiveRunner::moves_data(const Instance& in) {
  return in.analytic_time ? *in.analytic_time > core::Time::zero() : in.bytes > 0.0;
}

CollectiveRunner::CollectiveRunner(const CollectiveRunner& other, Topology& topology, FlowNetwork& network)
    : CollectiveRunner(other) {
  // Before a run no instance has launched: nothing of one's progress to copy.
  for (const Instance& in : instances_) {
    if (in.progress || in.arrived != 0) throw std::logic_error("CollectiveRunner: copied once it had run");
  }
  topology_ = &topology;
  network_ = &network;
  listener_ = nullptr;
  trains_ = nullptr;
}

CollectiveRunner::GroupId CollectiveRunner::add_group(std::vector<int> members, std::vector<std::vector<int>> copies) {
  if (members.size() > kMaxCollectiveRanks) throw std::logic_error("a collective of more than 4M ranks");
  for (const auto& copy : copies) {
    if (copy.size() != members.size()) throw std::logic_error("a copy of a collective with other members");
  }
  groups_.push_back({std::move(members), std::move(copies)});
  return static_cast<GroupId>(groups_.size() - 1);
}

std::uint32_t CollectiveRunner::add(CollectiveKind kind, double bytes, GroupId group, int participants,
                                    std::optional<core::Time> analytic_time, double across_share,
                                    core::Time host_copy) {
  if (participants < 1) throw std::logic_error("a collective needs a participant");
  if (group >= groups_.size()) throw std::logic_error("a collective over a missing group");
  Instance in;
  in.kind = kind;
  in.across_share = static_cast<float>(across_share);
  in.bytes = bytes;
  in.group = group;
  in.participants = participants;
  in.analytic_time = analytic_time;
  if (!analytic_time) in.host_copy = host_copy;
  if (participants > 1) {
    in.first_arrival = arrivals_.size();
    arrivals_.resize(arrivals_.size() + static_cast<std::size_t>(participants));
  }
  if (instances_.size() >= kSoloTag) throw std::length_error("more than 2^31 collectives in one simulation");
  instances_.push_back(std::move(in));
  return static_cast<std::uint32_t>(instances_.size() - 1);
}

std::optional<std::uint32_t> CollectiveRunner::solo_route(CollectiveKind kind, GroupId group) const {
  if (group >= groups_.size()) throw std::logic_error("a collective over a missing group");
  if (group >= kSoloGroups) return std::nullopt;
  return kSoloTag | static_cast<std::uint32_t>(kind) << 28 | group;
}

CollectiveRunner::Description CollectiveRunner::describe(const core::Task& task) const {
  if (is_solo(task.route)) {
    return {solo_kind(task.route), task.amount, static_cast<int>(groups_[solo_group(task.route)].members.size())};
  }
  const Instance& in = instances_.at(task.route);
  return {in.kind, in.bytes, static_cast<int>(groups_[in.group].members.size())};
}

void CollectiveRunner::on_ready(core::TaskId task, core::Engine& engine) {
  // A participant's task starts when the collective does, not while it waits
  // for the others: the wait is idle time, not communication.
  const core::Task& t = engine.graph().task(task);
  if (is_solo(t.route)) {
    // As launch runs an instance of one participant with an analytic time.
    engine.start(task);
    if (listener_ != nullptr && t.duration > core::Time::zero()) {
      const GroupId group = solo_group(t.route);
      listener_->on_collective(group, groups_[group].members, true, engine, engine.now() + t.duration);
    }
    engine.schedule(id_, engine.now() + t.duration, token(kSoloDone, task));
    return;
  }
  const std::uint32_t id = t.route;
  if (id >= instances_.size()) throw std::logic_error("task names a missing collective");
  Instance& in = instances_[id];
  if (in.arrived == in.participants) throw std::logic_error("a collective has more tasks than participants");
  if (in.participants == 1) {
    in.solo = task;
    in.arrived = 1;
  } else {
    arrivals_[in.first_arrival + static_cast<std::size_t>(in.arrived++)] = task;
  }
  if (in.arrived == in.participants) launch(id, engine);
}

void CollectiveRunner::launch(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  for (core::TaskId task : arrived(in)) engine.start(task);
  if (listener_ != nullptr && moves_data(in)) {
    listener_->on_collective(in.group, groups_[in.group].members, true, engine,
                             end_known(in) ? engine.now() + *in.analytic_time : core::Time::max());
  }
  if (in.train >= 0) {
    BucketTrain& train = (*trains_)[static_cast<std::size_t>(in.train)];
    if (train.tail_from_start) {
      // Back to back from now: the tail as times.
      if (engine.now() < train.compute_end) throw TrainBroken("a bucket train's reductions start before its pieces end");
      for (core::Time& at : train.tail) at += engine.now();
      train.tail_from_start = false;
    } else if (engine.now() != train.tail_start) {
      throw TrainBroken("a bucket train's reductions start other than when its play says");
    }
    if (train.tail.empty()) throw std::logic_error("a bucket train without reductions");
    train.tail_passed = 0;
    engine.schedule(id_, train.tail.front(), token(kAnalyticDone, id));
    return;
  }
  if (in.analytic_time) {
    engine.schedule(id_, engine.now() + *in.analytic_time, token(kAnalyticDone, id));
    if (in.gates) {
      for (const auto& [instance, train] : gates_) {
        if (instance == id) (*trains_)[train].after_end = engine.now() + *in.analytic_time;
      }
    }
    return;
  }
  const std::vector<int>& members = groups_[in.group].members;
  const CollectivePlan plan = plan_collective(in.kind, in.bytes, group_of(cluster_, members), cluster_.node, algorithm_);
  in.progress = std::make_shared<Instance::Progress>();
  in.progress->stages = lay_out(cluster_, in.kind, in.bytes, members, plan, in.across_share);
  if (in.progress->stages.empty()) {
    data_moved(id, engine);
    return;
  }
  in.progress->stage = 0;
  begin_stage(id, engine);
}

std::uint32_t CollectiveRunner::route_of(const Instance& in, int from, int to) {
  const Group& group = groups_[in.group];
  if (group.copies.empty()) return topology_->route(from, to);
  const auto at = [&](int gpu) {
    return static_cast<std::size_t>(std::find(group.members.begin(), group.members.end(), gpu) - group.members.begin());
  };
  std::vector<std::pair<int, int>> pairs = {{from, to}};
  for (const auto& copy : group.copies) pairs.emplace_back(copy[at(from)], copy[at(to)]);
  return topology_->shared_route(from, to, pairs);
}

void CollectiveRunner::begin_stage(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  const CollectiveStage& st = in.progress->stages[in.progress->stage];
  in.progress->complete = 0;
  in.progress->routes.clear();
  if (st.transfers.empty()) {
    const RingSteps& r = st.ring;
    const std::size_t n = r.rings.front().size();
    if (r.rings.size() * n >= kIndexLimit) throw std::logic_error("too many ring positions in one collective");
    in.progress->crosses.clear();
    for (const auto& ring : r.rings) {
      for (std::size_t i = 0; i < n; ++i) {
        const int from = ring[i], to = ring[(i + 1) % n];
        in.progress->routes.push_back(route_of(in, from, to));
        in.progress->crosses.push_back(cluster_.node_of(from) != cluster_.node_of(to));
      }
    }
    in.progress->started.assign(in.progress->routes.size(), 0);
    in.progress->received.assign(in.progress->routes.size(), 0);
    engine.schedule(id_, engine.now() + core::Time::microseconds(st.start_us), token(kBegin, id));
    return;
  }
  const auto& ts = st.transfers;
  if (ts.size() >= kIndexLimit) throw std::logic_error("too many transfers in one collective");
  const int count = static_cast<int>(ts.size());
  // Who each transfer feeds, as offsets into one list.
  in.progress->waiting.assign(ts.size(), 1);
  in.progress->feeds_begin.assign(ts.size() + 1, 0);
  for (const PipelinedTransfer& t : ts) {
    for (int i : t.inputs) ++in.progress->feeds_begin[i + 1];
  }
  for (int e = 0; e < count; ++e) in.progress->feeds_begin[e + 1] += in.progress->feeds_begin[e];
  in.progress->feeds.assign(in.progress->feeds_begin.back(), 0);
  std::vector<int> fill(in.progress->feeds_begin.begin(), in.progress->feeds_begin.end() - 1);
  for (int e = 0; e < count; ++e) {
    in.progress->waiting[e] += static_cast<int>(ts[e].inputs.size());
    for (int i : ts[e].inputs) in.progress->feeds[fill[i]++] = e;
    in.progress->routes.push_back(route_of(in, ts[e].from, ts[e].to));
  }
  // Start times depend on latencies alone: known now. Transfers starting at
  // the same instant start as one wave, their rates solved once.
  std::vector<core::Time> at(ts.size());
  for (int e = 0; e < count; ++e) at[e] = engine.now() + core::Time::microseconds(st.start_us + ts[e].start_us);
  in.progress->by_start.resize(ts.size());
  for (int e = 0; e < count; ++e) in.progress->by_start[e] = e;
  std::stable_sort(in.progress->by_start.begin(), in.progress->by_start.end(), [&](int a, int b) { return at[a] < at[b]; });
  in.progress->wave_begin.clear();
  in.progress->wave_at.clear();
  for (int k = 0; k < count; ++k) {
    const core::Time t = at[in.progress->by_start[k]];
    if (in.progress->wave_at.empty() || in.progress->wave_at.back() != t) {
      in.progress->wave_begin.push_back(k);
      in.progress->wave_at.push_back(t);
    }
  }
  in.progress->wave_begin.push_back(count);
  for (std::size_t w = 0; w < in.progress->wave_at.size(); ++w) engine.schedule(id_, in.progress->wave_at[w], token(kHopDone, id, w));
}

void CollectiveRunner::try_send(std::uint32_t id, int ring, int position, core::Engine& engine) {
  Instance& in = instances_[id];
  const RingSteps& r = in.progress->stages[in.progress->stage].ring;
  const int n = static_cast<int>(r.rings.front().size());
  const std::size_t at = static_cast<std::size_t>(ring) * n + position;
  const int step = in.progress->started[at];
  if (step >= r.steps || in.progress->received[at] < step) return;
  ++in.progress->started[at];
  const double step_us = in.progress->crosses[at] ? r.network_hop_us : r.nvlink_hop_us;
  // Sends whose hops end at the same instant start their flows together, in
  // one event and one solve of rates: a ring in step sends from every position
  // at once.
  Instance::Progress& p = *in.progress;
  const core::Time due = engine.now() + core::Time::microseconds(step_us);
  for (const auto& [when, batch] : p.open_batches) {
    if (when == due) {
      p.batches[batch].push_back(static_cast<int>(at));
      return;
    }
  }
  int batch;
  if (!p.free_batches.empty()) {
    batch = p.free_batches.back();
    p.free_batches.pop_back();
  } else {
    batch = static_cast<int>(p.batches.size());
    p.batches.emplace_back();
  }
  p.batches[batch].push_back(static_cast<int>(at));
  p.open_batches.emplace_back(due, batch);
  engine.schedule(id_, due, token(kHopDone, id, batch));
}

void CollectiveRunner::on_event(std::uint64_t t, core::Engine& engine) {
  if (what_of(t) == kSoloDone) {
    // As finish ends an instance of one participant with an analytic time.
    const core::TaskId task = instance_of(t);
    const core::Task& solo = engine.graph().task(task);
    if (listener_ != nullptr && solo.duration > core::Time::zero()) {
      const GroupId group = solo_group(solo.route);
      listener_->on_collective(group, groups_[group].members, false, engine, engine.now());
    }
    engine.finish(task);
    return;
  }
  const std::uint32_t id = instance_of(t);
  Instance& in = instances_[id];
  if (what_of(t) == kAnalyticDone) {
    if (in.train >= 0) {
      BucketTrain& train = (*trains_)[static_cast<std::size_t>(in.train)];
      const auto next = static_cast<std::size_t>(index_of(t)) + 1;
      train.tail_passed = next;
      if (next < train.tail.size()) {
        // One reduction of the train ends and the next starts.
        if (listener_ != nullptr) {
          listener_->on_collective(in.group, groups_[in.group].members, false, engine, core::Time::max());
          listener_->on_collective(in.group, groups_[in.group].members, true, engine, core::Time::max());
        }
        engine.schedule(id_, train.tail[next], token(kAnalyticDone, id, next));
        return;
      }
    }
    finish(id, engine);
    return;
  }
  const CollectiveStage& st = in.progress->stages[in.progress->stage];
  if (what_of(t) == kBegin) {
    const int n = static_cast<int>(st.ring.rings.front().size());
    for (int c = 0; c < static_cast<int>(st.ring.rings.size()); ++c) {
      for (int i = 0; i < n; ++i) try_send(id, c, i, engine);
    }
    return;
  }
  const int index = index_of(t);
  if (st.transfers.empty()) {
    // A batch of hops' latency has passed: their steps' bytes start to flow.
    Instance::Progress& p = *in.progress;
    p.open_batches.erase(std::find_if(p.open_batches.begin(), p.open_batches.end(),
                                      [&](const auto& open) { return open.second == index; }));
    std::vector<FlowNetwork::FlowStart> sends;
    for (int at : p.batches[index]) sends.push_back({st.ring.wire_bytes, p.routes[at], st.ring.cap, token(kFlowDone, id, at)});
    p.batches[index].clear();
    p.free_batches.push_back(index);
    network_->start_flows(sends, *this, engine);
    return;
  }
  std::vector<FlowNetwork::FlowStart> wave;
  for (int k = in.progress->wave_begin[index]; k < in.progress->wave_begin[index + 1]; ++k) {
    const int e = in.progress->by_start[k];
    const PipelinedTransfer& tr = st.transfers[e];
    wave.push_back({tr.bytes, in.progress->routes[e], tr.cap, token(kFlowDone, id, e)});
  }
  network_->start_flows(wave, *this, engine);
}

void CollectiveRunner::on_flow_done(std::uint64_t t, core::Engine& engine) {
  const std::uint32_t id = instance_of(t);
  Instance& in = instances_[id];
  const CollectiveStage& st = in.progress->stages[in.progress->stage];
  const int index = index_of(t);
  if (!st.transfers.empty()) {
    if (--in.progress->waiting[index] == 0) transfer_done(id, index, engine);
    return;
  }
  const int n = static_cast<int>(st.ring.rings.front().size());
  const int ring = index / n, next = (index % n + 1) % n;
  const std::size_t next_at = static_cast<std::size_t>(ring) * n + next;
  if (++in.progress->received[next_at] == st.ring.steps) ++in.progress->complete;
  if (in.progress->complete == static_cast<int>(in.progress->received.size())) {
    stage_done(id, engine);
    return;
  }
  try_send(id, ring, next, engine);
}

void CollectiveRunner::transfer_done(std::uint32_t id, int transfer, core::Engine& engine) {
  Instance& in = instances_[id];
  std::vector<int> done = {transfer};
  while (!done.empty()) {
    const int e = done.back();
    done.pop_back();
    ++in.progress->complete;
    for (int k = in.progress->feeds_begin[e]; k < in.progress->feeds_begin[e + 1]; ++k) {
      if (--in.progress->waiting[in.progress->feeds[k]] == 0) done.push_back(in.progress->feeds[k]);
    }
  }
  if (in.progress->complete == static_cast<int>(in.progress->stages[in.progress->stage].transfers.size())) stage_done(id, engine);
}

void CollectiveRunner::stage_done(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  if (++in.progress->stage < in.progress->stages.size()) {
    begin_stage(id, engine);
  } else {
    data_moved(id, engine);
  }
}

void CollectiveRunner::data_moved(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  if (in.host_copy > core::Time::zero()) {
    // The copy to or from the host follows, counted in the collective's time
    // as the analytic time counts it.
    in.progress.reset();
    engine.schedule(id_, engine.now() + in.host_copy, token(kAnalyticDone, id));
  } else {
    finish(id, engine);
  }
}

void CollectiveRunner::finish(std::uint32_t id, core::Engine& engine) {
  Instance& in = instances_[id];
  if (listener_ != nullptr && moves_data(in)) {
    listener_->on_collective(in.group, groups_[in.group].members, false, engine,
                             end_known(in) ? engine.now() : core::Time::max());
  }
  in.progress.reset();  // the layout and its state are no longer needed
  // Finishing a task may make other collectives ready, never this one again,
  // and instances are all added before the run: `in` stays where it is.
  for (core::TaskId task : arrived(in)) engine.finish(task);
}

}  // namespace trainsim::hw
