#include "hw/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace trainsim::hw {

namespace {
// Tokens: the low bit tells a latency expiry (carrying the task) from a
// completion check.
constexpr std::uint64_t kCompletion = 1;
std::uint64_t latency_token(core::TaskId t) { return static_cast<std::uint64_t>(t) << 1; }
}  // namespace

LinkId FlowNetwork::add_link(Link link) {
  if (!(link.bytes_per_s > 0.0)) throw std::invalid_argument("link '" + link.name + "' needs a positive bandwidth");
  links_.push_back(std::move(link));
  flows_on_link_.emplace_back();
  return static_cast<LinkId>(links_.size() - 1);
}

std::uint32_t FlowNetwork::add_route(std::vector<LinkId> links) {
  Route r;
  for (LinkId l : links) {
    if (l >= links_.size()) throw std::invalid_argument("route names a missing link");
    r.latency += links_[l].latency;
  }
  r.links = std::move(links);
  routes_.push_back(std::move(r));
  return static_cast<std::uint32_t>(routes_.size() - 1);
}

double FlowNetwork::rate_of(core::TaskId task) const {
  for (std::uint32_t s : active_) {
    if (flows_[s].task == task) return flows_[s].rate * 1e12;
  }
  return 0.0;
}

void FlowNetwork::on_ready(core::TaskId task, core::Engine& engine) {
  engine.start(task);
  const core::Task& t = engine.graph().task(task);
  if (t.route >= routes_.size()) throw std::runtime_error("transfer names a missing route");
  // Latency first (an event per transfer start is fine: it is not a waiting list).
  engine.schedule(timer_id_, engine.now() + routes_[t.route].latency, latency_token(task));
}

void FlowNetwork::on_event(std::uint64_t token, core::Engine& engine) {
  if ((token & 1) == 0) {
    begin_flow(static_cast<core::TaskId>(token >> 1), engine);
    return;
  }
  const core::Time now = engine.now();
  std::vector<std::uint32_t> done;
  for (std::uint32_t s : active_) {
    if (flows_[s].finish <= now) done.push_back(s);
  }
  std::vector<std::uint32_t> touched;
  for (std::uint32_t s : done) {
    Flow& f = flows_[s];
    f.active = false;
    for (LinkId l : routes_[f.route].links) {
      auto& on = flows_on_link_[l];
      on.erase(std::find(on.begin(), on.end(), s));
      touched.push_back(l);
    }
    active_.erase(std::find(active_.begin(), active_.end(), s));
    free_slots_.push_back(s);
  }
  resolve(std::move(touched), now);
  reschedule(engine);
  for (std::uint32_t s : done) engine.finish(flows_[s].task);
}

void FlowNetwork::begin_flow(core::TaskId task, core::Engine& engine) {
  const core::Task& t = engine.graph().task(task);
  const Route& route = routes_[t.route];
  if (!(t.amount > 0.0) || route.links.empty()) {
    engine.finish(task);
    return;
  }
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[slot];
  f = Flow{task, t.route, t.amount, 0.0, engine.now(), core::Time::max(), true};
  active_.push_back(slot);
  for (LinkId l : route.links) flows_on_link_[l].push_back(slot);
  resolve(route.links, engine.now());
  reschedule(engine);
}

void FlowNetwork::resolve(std::vector<std::uint32_t> seed_links, core::Time now) {
  // Gather the component of links and flows reachable from the seed links.
  link_seen_.resize(links_.size(), 0);
  flow_seen_.resize(flows_.size(), 0);
  auto& link_seen = link_seen_;
  auto& flow_seen = flow_seen_;
  std::vector<std::uint32_t> comp_links;
  std::vector<std::uint32_t> comp_flows;
  std::vector<std::uint32_t> stack;
  for (LinkId l : seed_links) {
    if (!link_seen[l]) {
      link_seen[l] = 1;
      stack.push_back(l);
    }
  }
  while (!stack.empty()) {
    const LinkId l = stack.back();
    stack.pop_back();
    comp_links.push_back(l);
    for (std::uint32_t s : flows_on_link_[l]) {
      if (flow_seen[s]) continue;
      flow_seen[s] = 1;
      comp_flows.push_back(s);
      for (LinkId l2 : routes_[flows_[s].route].links) {
        if (!link_seen[l2]) {
          link_seen[l2] = 1;
          stack.push_back(l2);
        }
      }
    }
  }
  for (std::uint32_t l : comp_links) link_seen[l] = 0;
  for (std::uint32_t s : comp_flows) flow_seen[s] = 0;
  if (comp_flows.empty()) return;
  std::sort(comp_links.begin(), comp_links.end());
  std::sort(comp_flows.begin(), comp_flows.end());

  // Bring every affected flow's remaining bytes up to now at its old rate.
  for (std::uint32_t s : comp_flows) {
    Flow& f = flows_[s];
    f.remaining -= f.rate * static_cast<double>((now - f.updated).ps());
    if (f.remaining < 0.0) f.remaining = 0.0;
    f.updated = now;
  }

  // Progressive filling.
  capacity_.resize(links_.size(), 0.0);
  unfrozen_.resize(links_.size(), 0);
  frozen_.resize(flows_.size(), 0);
  auto& capacity = capacity_;
  auto& unfrozen = unfrozen_;
  auto& frozen = frozen_;
  for (LinkId l : comp_links) {
    capacity[l] = links_[l].bytes_per_s * 1e-12;
    unfrozen[l] = static_cast<std::uint32_t>(flows_on_link_[l].size());
  }
  std::size_t left = comp_flows.size();
  while (left > 0) {
    LinkId bottleneck = 0;
    double share = std::numeric_limits<double>::infinity();
    for (LinkId l : comp_links) {
      if (unfrozen[l] == 0) continue;
      const double s = capacity[l] / unfrozen[l];
      if (s < share) {
        share = s;
        bottleneck = l;
      }
    }
    for (std::uint32_t s : flows_on_link_[bottleneck]) {
      if (frozen[s]) continue;
      frozen[s] = 1;
      --left;
      flows_[s].rate = share;
      for (LinkId l2 : routes_[flows_[s].route].links) {
        capacity[l2] = std::max(0.0, capacity[l2] - share);
        --unfrozen[l2];
      }
    }
  }

  for (std::uint32_t s : comp_flows) {
    frozen[s] = 0;
    Flow& f = flows_[s];
    if (!(f.rate > 0.0)) {
      f.finish = core::Time::max();  // starved; re-solved when a neighbour ends
      continue;
    }
    const double ps = std::ceil(f.remaining / f.rate);
    f.finish = now + core::Time::ps(static_cast<std::int64_t>(ps));
  }
}

void FlowNetwork::reschedule(core::Engine& engine) {
  engine.cancel_pending(completion_id_);
  core::Time earliest = core::Time::max();
  for (std::uint32_t s : active_) earliest = std::min(earliest, flows_[s].finish);
  if (earliest != core::Time::max()) engine.schedule(completion_id_, earliest, kCompletion);
}

}  // namespace trainsim::hw
