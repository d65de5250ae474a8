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

// std::push_heap builds a max-heap; this order puts the earliest (finish, slot) on top.
struct Later {
  template <class D>
  bool operator()(const D& a, const D& b) const {
    return a.finish > b.finish || (a.finish == b.finish && a.slot > b.slot);
  }
};
}  // namespace

LinkId FlowNetwork::add_link(Link link) {
  if (!(link.bytes_per_s > 0.0)) throw std::invalid_argument("a link needs a positive bandwidth");
  links_.push_back(link);
  flows_on_link_.emplace_back();
  cap_load_.push_back(0.0);
  uncapped_on_.push_back(0.0);
  early_on_link_.push_back(0);
  bytes_carried_.push_back(0.0);
  return static_cast<LinkId>(links_.size() - 1);
}

std::uint32_t FlowNetwork::add_route(std::vector<LinkId> links, core::Time extra_latency,
                                     std::vector<double> weights, double max_bytes_per_s) {
  if (max_bytes_per_s < 0.0) throw std::invalid_argument("a route's rate cap cannot be negative");
  Route r;
  r.latency = extra_latency;
  r.max_bytes_per_s = max_bytes_per_s;
  if (!weights.empty() && weights.size() != links.size()) throw std::invalid_argument("route weights do not match links");
  r.weights = std::move(weights);
  for (LinkId l : links) {
    if (l >= links_.size()) throw std::invalid_argument("route names a missing link");
    r.latency += links_[l].latency;
  }
  r.links = std::move(links);
  routes_.push_back(std::move(r));
  return static_cast<std::uint32_t>(routes_.size() - 1);
}

void FlowNetwork::on_ready(core::TaskId task, core::Engine& engine) {
  engine.start(task);
  const core::Task& t = engine.graph().task(task);
  if (t.route >= routes_.size()) throw std::runtime_error("transfer names a missing route");
  const Route& route = routes_[t.route];
  const core::Time begins = engine.now() + route.latency;
  // A transfer that finds its links empty takes its place now, its bytes
  // moving from `begins`: alone, its rate then is known now, so it needs no
  // event when its latency ends (most pipeline sends). Another flow that
  // joins one of its links before then sends it back to the timer
  // (insert_flow), so rates are solved as if it began at `begins`. Not while
  // the links' rates are recorded for a trace: each link's history is
  // written in time order, as rates change.
  if (!record_rates_ && t.amount > 0.0 && alone_on(route)) {
    Flow f = transfer_flow(task, t);
    f.early = true;
    const std::uint32_t slot = insert_flow(f, begins, engine);
    ++flows_solved_;
    flows_[slot].rate = lone_rate(slot);
    project_finish(slot, begins);
    reschedule(engine);
    return;
  }
  // Latency first (an event per transfer start: a timer, not a waiting list).
  engine.schedule(timer_id_, begins, latency_token(task));
}

void FlowNetwork::send_back_waiting(const Route& route, core::Engine& engine) {
  // A flow on these links whose bytes have yet to move goes back to its
  // latency timer: it joins the links when its latency ends, after the
  // flow now joining them, as it would have without taking its place early.
  waiting_.clear();
  for (LinkId l : route.links) {
    if (early_on_link_[l] == 0) continue;
    for (std::uint32_t s : flows_on_link_[l]) {
      if (flows_[s].updated > engine.now()) waiting_.push_back(s);
    }
  }
  for (std::uint32_t s : waiting_) {
    if (!flows_[s].active) continue;  // on two of these links: sent back already
    const core::TaskId task = flows_[s].task;
    const core::Time begins = flows_[s].updated;
    end_flow(s);
    engine.schedule(timer_id_, begins, latency_token(task));
  }
}

bool FlowNetwork::alone_on(const Route& route) const {
  for (LinkId l : route.links) {
    if (!flows_on_link_[l].empty()) return false;
  }
  return !route.links.empty();
}

void FlowNetwork::on_event(std::uint64_t token, core::Engine& engine) {
  if ((token & 1) == 0) {
    begin_flow(static_cast<core::TaskId>(token >> 1), engine);
    return;
  }
  scheduled_ = core::Time::max();
  const core::Time now = engine.now();
  // Scratch kept between events: this handler is never re-entered (telling
  // clients below may start flows, but not handle an event).
  done_.clear();
  while (!due_.empty() && (stale(due_.front()) || due_.front().finish <= now)) {
    const Due d = due_.front();
    std::pop_heap(due_.begin(), due_.end(), Later{});
    due_.pop_back();
    if (!stale(d)) done_.push_back(d.slot);
  }
  touched_.clear();
  ended_.clear();
  for (std::uint32_t s : done_) {
    const Route& route = routes_[flows_[s].route];
    for (std::size_t i = 0; i < route.links.size(); ++i) {
      touched_.push_back(route.links[i]);
      bytes_carried_[route.links[i]] += flows_[s].size * route.weight(i);
    }
    ended_.push_back({flows_[s].client, flows_[s].token, flows_[s].task});
    end_flow(s);
  }
  // Links left empty have no rate to solve (most pipeline sends end alone):
  // resolve() would find no flow to re-solve and, unless it records the
  // links' rates, change nothing.
  const bool emptied = std::all_of(touched_.begin(), touched_.end(), [&](LinkId l) { return flows_on_link_[l].empty(); });
  if (record_rates_ || !emptied) resolve(touched_, now);
  reschedule(engine);
  for (const Ended& e : ended_) {
    if (e.client != nullptr) {
      e.client->on_flow_done(e.token, engine);
    } else {
      engine.finish(e.task);
    }
  }
}

void FlowNetwork::begin_flow(core::TaskId task, core::Engine& engine) {
  const core::Task& t = engine.graph().task(task);
  if (!(t.amount > 0.0) || routes_[t.route].links.empty()) {
    engine.finish(task);
    return;
  }
  add_flow(transfer_flow(task, t), engine);
}

FlowNetwork::Flow FlowNetwork::transfer_flow(core::TaskId task, const core::Task& t) const {
  Flow f;
  f.task = task;
  f.route = t.route;
  f.remaining = f.size = t.amount;
  f.cap = routes_[t.route].max_bytes_per_s * 1e-12;  // bytes per picosecond; 0 for none
  return f;
}

void FlowNetwork::start_flow(double bytes, std::uint32_t route, double max_bytes_per_s, FlowClient& client,
                             std::uint64_t token, core::Engine& engine) {
  if (route >= routes_.size()) throw std::logic_error("start_flow: missing route");
  if (!(bytes > 0.0) || routes_[route].links.empty()) {
    client.on_flow_done(token, engine);
    return;
  }
  Flow f;
  f.route = route;
  f.remaining = f.size = bytes;
  f.cap = max_bytes_per_s > 0.0 ? max_bytes_per_s * 1e-12 : 0.0;
  f.client = &client;
  f.token = token;
  add_flow(f, engine);
}

void FlowNetwork::start_flows(const std::vector<FlowStart>& flows, FlowClient& client, core::Engine& engine) {
  std::vector<LinkId>& seeds = seeds_;  // scratch: unused by the time clients are told
  seeds.clear();
  std::vector<std::uint64_t> empty;  // told after the others have started
  for (const FlowStart& s : flows) {
    if (s.route >= routes_.size()) throw std::logic_error("start_flows: missing route");
    const Route& route = routes_[s.route];
    if (!(s.bytes > 0.0) || route.links.empty()) {
      empty.push_back(s.token);
      continue;
    }
    Flow f;
    f.route = s.route;
    f.remaining = f.size = s.bytes;
    f.cap = s.max_bytes_per_s > 0.0 ? s.max_bytes_per_s * 1e-12 : 0.0;
    f.client = &client;
    f.token = s.token;
    insert_flow(f, engine.now(), engine);
    seeds.insert(seeds.end(), route.links.begin(), route.links.end());
  }
  if (!seeds.empty()) {
    resolve(seeds, engine.now());
    reschedule(engine);
  }
  for (std::uint64_t token : empty) client.on_flow_done(token, engine);
}

void FlowNetwork::add_flow(const Flow& flow, core::Engine& engine) {
  insert_flow(flow, engine.now(), engine);
  resolve(routes_[flow.route].links, engine.now());
  reschedule(engine);
}

std::uint32_t FlowNetwork::insert_flow(const Flow& flow, core::Time now, core::Engine& engine) {
  const Route& route = routes_[flow.route];
  send_back_waiting(route, engine);
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[slot];
  const std::uint32_t version = f.version + 1;
  f = flow;
  f.rate = 0.0;
  f.updated = now;
  f.finish = core::Time::max();
  f.version = version;
  f.active = true;
  f.active_index = static_cast<std::uint32_t>(active_.size());
  active_.push_back(slot);
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const LinkId l = route.links[i];
    flows_on_link_[l].push_back(slot);
    if (f.early) ++early_on_link_[l];
    if (f.cap > 0.0) {
      cap_load_[l] += f.cap * route.weight(i);
    } else {
      uncapped_on_[l] += route.weight(i);
    }
  }
  return slot;
}

void FlowNetwork::end_flow(std::uint32_t slot) {
  Flow& f = flows_[slot];
  f.active = false;
  ++f.version;
  const Route& route = routes_[f.route];
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const LinkId l = route.links[i];
    auto& on = flows_on_link_[l];
    on.erase(std::find(on.begin(), on.end(), slot));
    if (f.early) --early_on_link_[l];
    if (on.empty()) {
      cap_load_[l] = uncapped_on_[l] = 0.0;  // exact again, whatever rounding the sums gathered
    } else if (f.cap > 0.0) {
      cap_load_[l] -= f.cap * route.weight(i);
    } else {
      uncapped_on_[l] -= route.weight(i);
    }
  }
  const std::uint32_t moved = active_.back();
  active_[f.active_index] = moved;
  flows_[moved].active_index = f.active_index;
  active_.pop_back();
  free_slots_.push_back(slot);
}

bool FlowNetwork::stale(const Due& d) const {
  const Flow& f = flows_[d.slot];
  return !f.active || f.version != d.version;
}

void FlowNetwork::push_due(std::uint32_t slot) {
  const Flow& f = flows_[slot];
  due_.push_back({f.finish, slot, f.version});
  std::push_heap(due_.begin(), due_.end(), Later{});
}

bool FlowNetwork::can_limit(LinkId l) const {
  // A margin of 1e-9 of the bandwidth keeps a link whose caps nearly fill it
  // (or fill it exactly, up to the sums' rounding) in the solve.
  return uncapped_on_[l] > 0.0 || cap_load_[l] > links_[l].bytes_per_s * 1e-12 * (1.0 - 1e-9);
}

void FlowNetwork::resolve(const std::vector<LinkId>& seed_links, core::Time now) {
  // Gather the component of links and flows reachable from the seed links.
  link_seen_.resize(links_.size(), 0);
  flow_seen_.resize(flows_.size(), 0);
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  for (LinkId l : seed_links) {
    if (!link_seen_[l]) {
      link_seen_[l] = 1;
      stack_.push_back(l);
    }
  }
  // Every flow on a seed link is re-solved; beyond them, only links that can
  // limit a flow join the component (a slack link cannot carry rates from one
  // flow to another), so that flows whose caps their links can all carry at
  // once stay components of their own however many of them share the links.
  while (!stack_.empty()) {
    const LinkId l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (std::uint32_t s : flows_on_link_[l]) {
      if (flow_seen_[s]) continue;
      flow_seen_[s] = 1;
      comp_flows_.push_back(s);
      for (LinkId l2 : routes_[flows_[s].route].links) {
        if (link_seen_[l2]) continue;
        link_seen_[l2] = 1;
        if (can_limit(l2)) {
          stack_.push_back(l2);
        } else {
          comp_links_.push_back(l2);  // for the rate history; not expanded
        }
      }
    }
  }
  for (LinkId l : comp_links_) link_seen_[l] = 0;
  for (std::uint32_t s : comp_flows_) flow_seen_[s] = 0;
  if (comp_flows_.empty()) {
    if (record_rates_) {
      rate_history_.resize(links_.size());
      for (LinkId l : comp_links_) {
        auto& h = rate_history_[l];
        if (!h.empty() && h.back().first == now) {
          h.back().second = 0.0;
        } else if (!h.empty() && h.back().second != 0.0) {
          h.emplace_back(now, 0.0);
        }
      }
    }
    return;
  }
  // The gathering's order depends only on the seeds and on the order flows
  // joined each link: the same for the same run, so no sort is needed.
  flows_solved_ += comp_flows_.size();

  // Bring every affected flow's remaining bytes up to now at its old rate.
  old_rates_.clear();
  for (std::uint32_t s : comp_flows_) {
    Flow& f = flows_[s];
    if (f.updated > now) throw std::logic_error("FlowNetwork: a flow was re-solved before its bytes began to move");
    f.remaining -= f.rate * static_cast<double>((now - f.updated).ps());
    if (f.remaining < 0.0) f.remaining = 0.0;
    f.updated = now;
    old_rates_.push_back(f.rate);
  }

  if (comp_flows_.size() == 1) {
    frozen_.resize(flows_.size(), 0);  // read below, as after fill()
    flows_[comp_flows_[0]].rate = lone_rate(comp_flows_[0]);
  } else {
    fill();
  }

  if (record_rates_) {
    rate_history_.resize(links_.size());
    for (LinkId l : comp_links_) {
      // Every flow on the link, re-solved or not (a slack link's flows may lie outside the component).
      double total = 0.0;
      for (std::uint32_t s : flows_on_link_[l]) {
        const Route& route = routes_[flows_[s].route];
        for (std::size_t i = 0; i < route.links.size(); ++i) {
          if (route.links[i] == l) total += flows_[s].rate * route.weight(i);
        }
      }
      auto& h = rate_history_[l];
      const double rate = total * 1e12;
      if (!h.empty() && h.back().first == now) {
        h.back().second = rate;
      } else if (h.empty() || h.back().second != rate) {
        h.emplace_back(now, rate);
      }
    }
  }
  for (std::size_t k = 0; k < comp_flows_.size(); ++k) {
    const std::uint32_t s = comp_flows_[k];
    frozen_[s] = 0;
    Flow& f = flows_[s];
    // A flow whose rate came out the same still ends when it was due to: its
    // entry in the due-heap stands. (Most flows of a large all-to-all keep
    // their rate when one of them ends; re-timing them all filled the heap
    // with stale entries.)
    if (f.rate == old_rates_[k]) continue;
    project_finish(s, now);
  }
}

void FlowNetwork::project_finish(std::uint32_t slot, core::Time now) {
  Flow& f = flows_[slot];
  ++f.version;
  if (!(f.rate > 0.0)) {
    f.finish = core::Time::max();  // starved; re-solved when a neighbour ends
    return;
  }
  const double ps = std::ceil(f.remaining / f.rate);
  if (!(ps < static_cast<double>(core::Time::kLimitPs))) {
    throw std::overflow_error("a transfer of " + std::to_string(f.remaining) +
                              " bytes would take longer than the 53 days one duration may last");
  }
  f.finish = now + core::Time::ps(static_cast<std::int64_t>(ps));
  push_due(slot);
}

// What fill() gives a flow that shares no limiting link with another: the
// smallest share its limiting links offer (each link's bandwidth over the
// flow's weight on it, summed in route order as fill() sums it), or its cap
// when that is lower; nothing when neither bounds it. Most pipeline sends are
// alone on their links, and this skips the heaps.
double FlowNetwork::lone_rate(std::uint32_t slot) {
  const Flow& f = flows_[slot];
  Route& route = routes_[f.route];
  // Uncapped and alone, a flow's links all limit it: the share is the route's own.
  const bool uncapped = !(f.cap > 0.0);
  if (uncapped && route.lone_share >= 0.0) return route.lone_share;
  double share = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const LinkId l = route.links[i];
    if (!can_limit(l)) continue;
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = route.links[j] == l;
    if (seen) continue;  // summed at its first place
    double weight = 0.0;
    for (std::size_t j = i; j < route.links.size(); ++j) {
      if (route.links[j] == l) weight += route.weight(j);
    }
    if (weight > 1e-9) share = std::min(share, links_[l].bytes_per_s * 1e-12 / weight);
  }
  if (f.cap > 0.0 && f.cap < share) return f.cap;
  const double rate = share == std::numeric_limits<double>::infinity() ? 0.0 : share;
  if (uncapped) route.lone_share = rate;
  return rate;
}

// Progressive filling, in O((links + flows x hops) log links): the links sit
// in a min-heap on their fair share (capacity left / weight of the unfrozen
// flows crossing them), the capped flows in a list sorted by cap. Freezing a
// flow at the smallest share never lowers another link's share, so an entry
// whose share no longer matches its link's is stale and skipped; the link's
// current share was pushed when it changed. Ties go to the lowest link id and
// the lowest slot, and each share is computed by the same expression in the
// same order as a scan of every link would, so rates come out bit for bit
// as a scan's.
void FlowNetwork::fill() {
  capacity_.resize(links_.size(), 0.0);
  unfrozen_.resize(links_.size(), 0);
  frozen_.resize(flows_.size(), 0);
  link_seen_.resize(links_.size(), 0);
  limiting_.resize(links_.size(), 0);
  // Only links that can limit a flow take part: every flow crossing one is in
  // the component. A slack link may carry flows outside it, and its caps hold
  // its flows below its bandwidth anyway.
  limiting_links_.clear();
  for (LinkId l : comp_links_) {
    if (!can_limit(l)) continue;
    limiting_[l] = 1;
    limiting_links_.push_back(l);
    capacity_[l] = links_[l].bytes_per_s * 1e-12;
    unfrozen_[l] = 0.0;
  }
  if (limiting_links_.empty()) {
    // No link can hold a flow back (so every flow here is capped): each runs
    // at its cap, as the filling below would set it.
    for (std::uint32_t s : comp_flows_) flows_[s].rate = flows_[s].cap;
    return;
  }
  capped_.clear();
  for (std::uint32_t s : comp_flows_) {
    const Route& route = routes_[flows_[s].route];
    for (std::size_t i = 0; i < route.links.size(); ++i) {
      if (limiting_[route.links[i]]) unfrozen_[route.links[i]] += route.weight(i);
    }
    if (flows_[s].cap > 0.0) capped_.push_back({flows_[s].cap, s});
  }
  std::sort(capped_.begin(), capped_.end(),
            [](const CapEntry& a, const CapEntry& b) { return a.cap < b.cap || (a.cap == b.cap && a.slot < b.slot); });
  // std::push_heap builds a max-heap; this order puts the smallest (share, link) on top.
  const auto larger = [](const ShareEntry& a, const ShareEntry& b) {
    return a.share > b.share || (a.share == b.share && a.link > b.link);
  };
  shares_.clear();
  for (LinkId l : limiting_links_) {
    if (unfrozen_[l] > 1e-9) shares_.push_back({capacity_[l] / unfrozen_[l], l});
  }
  std::make_heap(shares_.begin(), shares_.end(), larger);

  std::size_t left = comp_flows_.size();
  std::size_t next_capped = 0;
  changed_.clear();
  auto freeze = [&](std::uint32_t s, double rate) {
    frozen_[s] = 1;
    --left;
    flows_[s].rate = rate;
    const Route& route = routes_[flows_[s].route];
    for (std::size_t i = 0; i < route.links.size(); ++i) {
      const LinkId l2 = route.links[i];
      if (!limiting_[l2]) continue;
      capacity_[l2] = std::max(0.0, capacity_[l2] - rate * route.weight(i));
      unfrozen_[l2] = std::max(0.0, unfrozen_[l2] - route.weight(i));
      if (!link_seen_[l2]) {
        link_seen_[l2] = 1;
        changed_.push_back(l2);
      }
    }
  };
  // Pushes the current share of every link a freeze changed.
  auto push_changed = [&] {
    for (LinkId l : changed_) {
      link_seen_[l] = 0;
      if (unfrozen_[l] > 1e-9) {
        shares_.push_back({capacity_[l] / unfrozen_[l], l});
        std::push_heap(shares_.begin(), shares_.end(), larger);
      }
    }
    changed_.clear();
  };
  while (left > 0) {
    // The smallest current share; stale entries (and links left with only rounding) are dropped.
    while (!shares_.empty()) {
      const ShareEntry& top = shares_.front();
      if (unfrozen_[top.link] > 1e-9 && top.share == capacity_[top.link] / unfrozen_[top.link]) break;
      std::pop_heap(shares_.begin(), shares_.end(), larger);
      shares_.pop_back();
    }
    const double share = shares_.empty() ? std::numeric_limits<double>::infinity() : shares_.front().share;
    // A flow whose own cap is below every fair share is frozen at its cap first.
    while (next_capped < capped_.size() && frozen_[capped_[next_capped].slot]) ++next_capped;
    if (next_capped < capped_.size() && capped_[next_capped].cap < share) {
      freeze(capped_[next_capped].slot, capped_[next_capped].cap);
      push_changed();
      continue;
    }
    if (shares_.empty()) {
      // Only rounding is left on every link: what is still unfrozen starves
      // until a neighbour ends and the component is solved again.
      for (std::uint32_t s : comp_flows_) {
        if (!frozen_[s]) freeze(s, 0.0);
      }
      push_changed();
      break;
    }
    const LinkId bottleneck = shares_.front().link;
    bool froze = false;
    for (std::uint32_t s : flows_on_link_[bottleneck]) {
      if (!frozen_[s]) {
        freeze(s, share);
        froze = true;
      }
    }
    if (!froze) unfrozen_[bottleneck] = 0.0;  // only rounding was left on it
    push_changed();
  }
  for (LinkId l : limiting_links_) limiting_[l] = 0;
}

void FlowNetwork::reschedule(core::Engine& engine) {
  while (!due_.empty() && stale(due_.front())) {
    std::pop_heap(due_.begin(), due_.end(), Later{});
    due_.pop_back();
  }
  // Stale entries pile up when rates change often; rebuild from the live flows.
  if (due_.size() > 64 && due_.size() > 4 * active_.size()) {
    due_.clear();
    std::vector<std::uint32_t> live(active_);
    std::sort(live.begin(), live.end());
    for (std::uint32_t s : live) {
      if (flows_[s].finish != core::Time::max()) push_due(s);
    }
  }
  const core::Time earliest = due_.empty() ? core::Time::max() : due_.front().finish;
  if (earliest == scheduled_) return;
  engine.cancel_pending(completion_id_);
  scheduled_ = earliest;
  if (earliest != core::Time::max()) engine.schedule(completion_id_, earliest, kCompletion);
}

}  // namespace trainsim::hw
