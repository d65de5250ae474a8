#include "hw/topology.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/nearest_name.hpp"
#include "hw/custom_network.hpp"

namespace trainsim::hw {

Topology::VertexId Topology::add_vertex(VertexKind kind, int a, int b) {
  const VertexId v = boost::add_vertex(Vertex{kind, a, b}, *graph_);
  vertex_of_key_.emplace(key_of(kind, a, b), v);
  return v;
}

std::string Topology::node_vertex_name(const Vertex& x) {
  switch (x.kind) {
    case VertexKind::kGpu: return "gpu" + std::to_string(x.a);
    case VertexKind::kNvSwitch: return "node" + std::to_string(x.a) + ".nvswitch";
    case VertexKind::kNic: return "node" + std::to_string(x.a) + ".nic" + std::to_string(x.b);
    default: return "?";
  }
}

std::string Topology::vertex_name(VertexId v) const {
  const Vertex& x = (*graph_)[v];
  switch (x.kind) {
    case VertexKind::kGpu:
    case VertexKind::kNvSwitch:
    case VertexKind::kNic: return node_vertex_name(x);
    case VertexKind::kLeaf:
      return "leaf" + std::to_string(x.a) + (x.b >= 0 ? ".rail" + std::to_string(x.b) : std::string());
    case VertexKind::kSpine: return cluster_.network.kind == NetworkKind::kFlat ? "core" : "spine";
    case VertexKind::kSwitch: return cluster_.network.custom.switches[static_cast<std::size_t>(x.a)];
  }
  return "?";
}

std::string Topology::link_name(LinkId link) const {
  return vertex_name(link_ends_[link].first) + "->" + vertex_name(link_ends_[link].second);
}

void Topology::connect(VertexId u, VertexId v, double bytes_per_s, core::Time latency_there, core::Time latency_back,
                       LinkClass cls) {
  const LinkId there = network_->add_link({bytes_per_s, latency_there});
  const LinkId back = network_->add_link({bytes_per_s, latency_back});
  boost::add_edge(u, v, Edge{there}, *graph_);
  boost::add_edge(v, u, Edge{back}, *graph_);
  link_class_.resize(network_->link_count(), LinkClass::kNic);
  link_ends_.resize(network_->link_count());
  link_class_[there] = link_class_[back] = cls;
  link_ends_[there] = {u, v};
  link_ends_[back] = {v, u};
  link_between_[static_cast<std::uint64_t>(u) << 32 | v] = there;
  link_between_[static_cast<std::uint64_t>(v) << 32 | u] = back;
}

Topology::Topology(const ClusterSpec& cluster, FlowNetwork& network, const std::vector<int>& gpus, bool whole_nodes)
    : cluster_(cluster), network_(&network) {
  const NodeSpec& n = cluster.node;
  if (n.gpus_per_node < 1 || n.nics_per_node < 1 || cluster.network.nodes_per_leaf < 1) {
    throw std::invalid_argument("Topology: a node needs at least one GPU and one NIC, a leaf at least one node");
  }
  const NetworkSpec& net = cluster.network;
  const double nvlink = n.nvlink_gb_per_s * 1e9;
  const double nic = n.nic_gbit_per_s / 8.0 * 1e9;
  const core::Time nvlink_latency = core::Time::microseconds(n.nvlink_latency_us);
  const core::Time nic_latency = core::Time::microseconds(n.nic_latency_us);
  const core::Time hop = core::Time::microseconds(net.switch_latency_us);
  const int groups = (cluster.nodes + net.nodes_per_leaf - 1) / net.nodes_per_leaf;
  const bool custom = net.kind == NetworkKind::kCustom;

  // Switches of the network.
  std::vector<VertexId> leaves;  // fat tree: by group; rail: by group * nics + rail
  VertexId core = 0;
  if (custom) {
    for (std::size_t k = 0; k < net.custom.switches.size(); ++k) add_vertex(VertexKind::kSwitch, static_cast<int>(k));
  } else if (net.kind == NetworkKind::kFlat) {
    core = add_vertex(VertexKind::kSpine);
  } else {
    core = add_vertex(VertexKind::kSpine);
    const int per_group = net.kind == NetworkKind::kRail ? n.nics_per_node : 1;
    for (int g = 0; g < groups; ++g) {
      const int nodes_here = std::min(net.nodes_per_leaf, cluster.nodes - g * net.nodes_per_leaf);
      for (int k = 0; k < per_group; ++k) {
        const VertexId leaf = add_vertex(VertexKind::kLeaf, g, net.kind == NetworkKind::kRail ? k : -1);
        leaves.push_back(leaf);
        const double down = nodes_here * (net.kind == NetworkKind::kRail ? 1 : n.nics_per_node) * nic;
        connect(leaf, core, down / net.oversubscription, hop, hop, LinkClass::kUplink);
      }
    }
  }

  // Nodes: GPUs, their NVSwitch and NICs.
  std::vector<char> wanted(static_cast<std::size_t>(cluster.nodes), gpus.empty() || custom ? 1 : 0);
  std::vector<char> gpu_wanted(static_cast<std::size_t>(cluster.gpus()), gpus.empty() || custom ? 1 : 0);
  for (int g : gpus) {
    if (g >= 0 && g < cluster.gpus()) wanted[cluster.node_of(g)] = gpu_wanted[g] = 1;
  }
  for (int g = 0; g < cluster.gpus() && whole_nodes; ++g) gpu_wanted[g] = wanted[cluster.node_of(g)];
  gpu_vertex_.assign(static_cast<std::size_t>(cluster.gpus()), -1);
  std::vector<VertexId> nvswitch_of;           // by node (custom networks only)
  std::vector<std::vector<VertexId>> nics_of;  // by node and NIC (custom networks only)
  for (int node = 0; node < cluster.nodes; ++node) {
    if (!wanted[node]) continue;
    const VertexId nvswitch = add_vertex(VertexKind::kNvSwitch, node);
    std::vector<VertexId> nics;
    const int group = node / net.nodes_per_leaf;
    std::vector<char> nic_wanted(static_cast<std::size_t>(n.nics_per_node), 0);  // used by a wanted GPU
    for (int l = 0; l < n.gpus_per_node; ++l) {
      const int gpu = node * n.gpus_per_node + l;
      if (gpu_wanted[gpu]) nic_wanted[n.nic_of(gpu)] = 1;
    }
    for (int k = 0; k < n.nics_per_node; ++k) {
      if (!nic_wanted[k]) {
        nics.push_back(0);  // never read: no built GPU uses it
        continue;
      }
      const VertexId v = add_vertex(VertexKind::kNic, node, k);
      nics.push_back(v);
      if (custom) continue;  // its cables come from the config
      const VertexId sw = net.kind == NetworkKind::kFlat      ? core
                          : net.kind == NetworkKind::kFatTree ? leaves[group]
                                                              : leaves[group * n.nics_per_node + k];
      connect(v, sw, nic, core::Time::zero(), core::Time::zero(), LinkClass::kNic);
    }
    for (int l = 0; l < n.gpus_per_node; ++l) {
      const int gpu = node * n.gpus_per_node + l;
      if (!gpu_wanted[gpu]) continue;
      const VertexId v = add_vertex(VertexKind::kGpu, gpu);
      gpu_vertex_[gpu] = static_cast<long long>(v);
      connect(v, nvswitch, nvlink, nvlink_latency, core::Time::zero(), LinkClass::kNvLink);
      connect(v, nics[static_cast<std::size_t>(n.nic_of(gpu))], nic, nic_latency, core::Time::zero(), LinkClass::kNic);
    }
    if (custom) {
      nvswitch_of.push_back(nvswitch);
      nics_of.push_back(std::move(nics));
    }
  }
  if (custom) wire_custom(nvswitch_of, nics_of);
}

void Topology::wire_custom(const std::vector<VertexId>& nvswitch_of,
                           const std::vector<std::vector<VertexId>>& nics_of) {
  const CustomNetwork& net = cluster_.network.custom;
  std::map<std::string, VertexId, std::less<>> switch_vertex;
  for (std::size_t k = 0; k < net.switches.size(); ++k) {
    const std::string& name = net.switches[k];
    if (name.empty() || node_vertex(name, cluster_)) {
      throw std::invalid_argument("custom network: switch \"" + name + "\" needs a name of its own");
    }
    // Switches were added first, so switch k is vertex k.
    if (!switch_vertex.emplace(name, static_cast<VertexId>(k)).second) {
      throw std::invalid_argument("custom network: switch \"" + name + "\" is listed twice");
    }
  }
  auto vertex_of = [&](const std::string& name) -> VertexId {
    if (const auto it = switch_vertex.find(name); it != switch_vertex.end()) return it->second;
    if (const auto v = node_vertex(name, cluster_)) {
      if (v->kind == VertexKind::kGpu) return static_cast<VertexId>(gpu_vertex_[static_cast<std::size_t>(v->a)]);
      if (v->kind == VertexKind::kNvSwitch) return nvswitch_of[static_cast<std::size_t>(v->a)];
      return nics_of[static_cast<std::size_t>(v->a)][static_cast<std::size_t>(v->b)];
    }
    throw std::invalid_argument("custom network: no vertex named \"" + name + "\"");
  };
  for (const CustomLink& c : net.links) {
    const VertexId u = vertex_of(c.from), v = vertex_of(c.to);
    if (u == v) throw std::invalid_argument("custom network: a cable from \"" + c.from + "\" to itself");
    if (!(c.gbit_per_s > 0.0) || !std::isfinite(c.gbit_per_s) || !(c.latency_us >= 0.0) ||
        !std::isfinite(c.latency_us)) {
      throw std::invalid_argument("custom network: the cable " + c.from + "<->" + c.to +
                                  " needs a positive bandwidth and a latency >= 0");
    }
    auto is = [this](VertexId x, VertexKind k) { return (*graph_)[x].kind == k; };
    const LinkClass cls = is(u, VertexKind::kGpu) || is(u, VertexKind::kNic) || is(v, VertexKind::kGpu) ||
                                  is(v, VertexKind::kNic)
                              ? LinkClass::kNic
                          : is(u, VertexKind::kNvSwitch) && is(v, VertexKind::kNvSwitch) ? LinkClass::kNvLink
                                                                                          : LinkClass::kUplink;
    const core::Time latency = core::Time::microseconds(c.latency_us);
    connect(u, v, c.gbit_per_s / 8.0 * 1e9, latency, latency, cls);
  }
}

const std::vector<LinkId>& Topology::route_links(int from, int to) { return network_->route(route(from, to)).links; }

std::vector<LinkId> Topology::searched_links(int from, int to) const {
  // Breadth-first search from `from`, keeping the edge each vertex was reached
  // by. It never passes through another GPU (no GPU forwards another's
  // traffic) nor over a failed link.
  const std::size_t nv = boost::num_vertices(*graph_);
  std::vector<Graph::edge_descriptor> reached_by(nv);
  std::vector<char> reached(nv, 0);
  const auto source = static_cast<VertexId>(gpu_vertex_[from]), target = static_cast<VertexId>(gpu_vertex_[to]);
  struct Usable {
    const Graph* g = nullptr;
    const std::vector<char>* failed = nullptr;
    VertexId source = 0;
    bool operator()(Graph::edge_descriptor e) const {
      const VertexId u = boost::source(e, *g);
      if (u != source && (*g)[u].kind == VertexKind::kGpu) return false;
      const LinkId l = (*g)[e].link;
      return l >= failed->size() || !(*failed)[l];
    }
  };
  using Usable_graph = boost::filtered_graph<Graph, Usable>;
  const Usable_graph usable(*graph_, Usable{graph_.get(), &failed_, source});
  struct Recorder : boost::default_bfs_visitor {
    std::vector<Graph::edge_descriptor>* by;
    std::vector<char>* seen;
    void tree_edge(Graph::edge_descriptor e, const Usable_graph& g) {
      (*by)[boost::target(e, g)] = e;
      (*seen)[boost::target(e, g)] = 1;
    }
  };
  Recorder rec;
  rec.by = &reached_by;
  rec.seen = &reached;
  boost::breadth_first_search(usable, source, boost::visitor(rec));
  if (!reached[target]) {
    std::string why;
    for (const std::string& f : failed_names_) why += (why.empty() ? " (failed: " : ", ") + f;
    throw NoRoute("no route in the topology from GPU " + std::to_string(from) + " to GPU " +
                             std::to_string(to) + (why.empty() ? "" : why + " in options.links)"));
  }
  std::vector<LinkId> links;
  for (VertexId v = target; v != source; v = boost::source(reached_by[v], *graph_)) links.push_back((*graph_)[reached_by[v]].link);
  std::reverse(links.begin(), links.end());
  return links;
}

std::vector<LinkId> Topology::direct_links(int from, int to) const {
  std::vector<LinkId> links;
  for (const auto& [a, b] : canonical_path(from, to)) {
    const auto u = vertex_of_key_.find(a), v = vertex_of_key_.find(b);
    if (u == vertex_of_key_.end() || v == vertex_of_key_.end()) return {};
    const auto link = link_between_.find(static_cast<std::uint64_t>(u->second) << 32 | v->second);
    if (link == link_between_.end()) return {};
    links.push_back(link->second);
  }
  return links;
}

std::uint32_t Topology::route(int from, int to) {
  const auto key = std::make_pair(from, to);
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  const int gpus = static_cast<int>(gpu_vertex_.size());
  if (from < 0 || to < 0 || from >= gpus || to >= gpus || from == to || gpu_vertex_[from] < 0 ||
      gpu_vertex_[to] < 0) {
    throw std::logic_error("Topology::route: no route from GPU " + std::to_string(from) + " to " + std::to_string(to));
  }
  // A search costs the whole graph, and a full-fidelity run asks for a route
  // per pair of GPUs that talk: where nothing failed, a built-in network's
  // path is known (the same one the search finds; tests hold it so).
  std::vector<LinkId> found;
  if (cluster_.network.kind != NetworkKind::kCustom && failed_names_.empty()) found = direct_links(from, to);
  if (found.empty()) found = searched_links(from, to);
  // A non-blocking up-link (oversubscription 1) carries at most what its
  // leaf's NICs feed it, so it never limits a flow: leaving it out of the
  // route keeps flows of different leaves from being re-solved together.
  std::vector<LinkId> links;
  core::Time skipped_latency;
  for (const LinkId link : found) {
    const bool faulty = link < touched_.size() && touched_[link];
    if (link_class_[link] == LinkClass::kUplink && cluster_.network.kind != NetworkKind::kCustom &&
        cluster_.network.oversubscription <= 1.0 && !faulty) {
      skipped_latency += network_->link(link).latency;
      continue;
    }
    links.push_back(link);
  }
  // Over NVLink alone inside one node, NCCL's send/recv sets the pace, not
  // the links (a custom network's NVLink cable between nodes is not capped).
  const bool nvlink_only = cluster_.node_of(from) == cluster_.node_of(to) &&
                           std::all_of(links.begin(), links.end(),
                                       [&](LinkId l) { return link_class_[l] == LinkClass::kNvLink; });
  const double cap = nvlink_only ? cluster_.node.nvlink_sendrecv_gb_per_s * 1e9 : 0.0;
  const std::uint32_t r = network_->add_route(std::move(links), skipped_latency, {}, cap);
  routes_.emplace(key, r);
  return r;
}

}  // namespace trainsim::hw

namespace trainsim::hw {

Topology::CanonicalPath Topology::canonical_path(int from, int to) const {
  const NetworkSpec& net = cluster_.network;
  auto key = [](VertexKind kind, int a, int b = -1) { return key_of(kind, a, b); };
  const int node_a = cluster_.node_of(from), node_b = cluster_.node_of(to);
  CanonicalPath path;
  if (node_a == node_b) {
    path.push_back({key(VertexKind::kGpu, from), key(VertexKind::kNvSwitch, node_a)});
    path.push_back({key(VertexKind::kNvSwitch, node_a), key(VertexKind::kGpu, to)});
    return path;
  }
  const int nic_a = cluster_.nic_of(from);
  const int nic_b = cluster_.nic_of(to);
  auto switch_of = [&](int node, int nic) {
    switch (net.kind) {
      case NetworkKind::kFlat: return key(VertexKind::kSpine, 0);
      case NetworkKind::kFatTree: return key(VertexKind::kLeaf, node / net.nodes_per_leaf);
      case NetworkKind::kRail: return key(VertexKind::kLeaf, node / net.nodes_per_leaf, nic);
      case NetworkKind::kCustom: break;  // shared_route refuses a custom network before asking
    }
    return key(VertexKind::kSpine, 0);
  };
  const VertexKey sw_a = switch_of(node_a, nic_a), sw_b = switch_of(node_b, nic_b);
  path.push_back({key(VertexKind::kGpu, from), key(VertexKind::kNic, node_a, nic_a)});
  path.push_back({key(VertexKind::kNic, node_a, nic_a), sw_a});
  if (sw_a != sw_b) {
    path.push_back({sw_a, key(VertexKind::kSpine, 0)});
    path.push_back({key(VertexKind::kSpine, 0), sw_b});
  }
  path.push_back({sw_b, key(VertexKind::kNic, node_b, nic_b)});
  path.push_back({key(VertexKind::kNic, node_b, nic_b), key(VertexKind::kGpu, to)});
  return path;
}

namespace {

// What a shared route's weights depend on: the shape of the network that
// canonical paths read, the plain route's hops and the copies.
struct WeightsKey {
  int gpus_per_node = 0, nics_per_node = 0, nodes_per_leaf = 0;
  NetworkKind kind = NetworkKind::kFlat;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> hops;
  std::vector<std::pair<int, int>> copies;
  bool operator==(const WeightsKey&) const = default;
};

struct WeightsKeyHash {
  std::size_t operator()(const WeightsKey& k) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields, word by word
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(k.gpus_per_node) << 32 | static_cast<std::uint32_t>(k.nics_per_node));
    mix(static_cast<std::uint64_t>(k.nodes_per_leaf) << 8 | static_cast<std::uint64_t>(k.kind));
    for (const auto& [a, b] : k.hops) mix(a ^ (b * 31));
    for (const auto& [a, b] : k.copies) mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 | static_cast<std::uint32_t>(b));
    return static_cast<std::size_t>(h);
  }
};

}  // namespace

std::vector<double> Topology::copy_weights(const std::vector<std::pair<VertexKey, VertexKey>>& hops,
                                           const std::vector<std::pair<int, int>>& copies) const {
  // A sweep asks the same of every schedule, ZeRO stage and recompute mode of
  // one layout: the answers are kept, per thread (no lock), a bounded number.
  thread_local std::unordered_map<WeightsKey, std::vector<double>, WeightsKeyHash> known;
  thread_local std::size_t known_copies = 0;  // pairs the keys hold, all told
  WeightsKey key{cluster_.node.gpus_per_node, cluster_.node.nics_per_node, cluster_.network.nodes_per_leaf,
                 cluster_.network.kind, hops, copies};
  if (const auto it = known.find(key); it != known.end()) return it->second;
  std::vector<int> uses(hops.size(), 0);
  for (const auto& [a, b] : copies) {
    if (a == b) continue;
    for (const auto& hop : canonical_path(a, b)) {
      for (std::size_t i = 0; i < hops.size(); ++i) {
        if (hops[i] == hop) ++uses[i];
      }
    }
  }
  std::vector<double> weights;
  for (int u : uses) weights.push_back(std::max(1, u));
  if (known_copies + copies.size() > kKnownCopies) {
    known.clear();
    known_copies = 0;
  }
  known_copies += copies.size();
  known.emplace(std::move(key), weights);
  return weights;
}

std::uint32_t Topology::shared_route(int from, int to, const std::vector<std::pair<int, int>>& copies) {
  const auto cache_key = std::make_pair(from, to);
  if (auto it = shared_routes_.find(cache_key); it != shared_routes_.end()) return it->second;
  if (cluster_.network.kind == NetworkKind::kCustom) {
    throw std::logic_error("Topology::shared_route: a custom network is simulated at full fidelity");
  }
  const Route& plain = network_->route(route(from, to));
  auto key_of_vertex = [this](VertexId v) {
    const Vertex& x = (*graph_)[v];
    return key_of(x.kind, x.a, x.b);
  };
  // Count, for each link of the plain route, the copies whose path has that hop.
  std::vector<std::pair<VertexKey, VertexKey>> hops;
  for (LinkId link : plain.links) hops.push_back({key_of_vertex(link_ends_[link].first), key_of_vertex(link_ends_[link].second)});
  const std::vector<double> weights = copy_weights(hops, copies);
  const core::Time extra = plain.latency - [&] {
    core::Time own;
    for (LinkId l : plain.links) own += network_->link(l).latency;
    return own;
  }();
  const std::uint32_t r = network_->add_route(plain.links, extra, std::move(weights), plain.max_bytes_per_s);
  shared_routes_.emplace(cache_key, r);
  return r;
}

}  // namespace trainsim::hw

namespace trainsim::hw {

std::vector<LinkId> Topology::links_named(const std::string& name) const {
  std::string there = name, back;
  if (const auto both = name.find("<->"); both != std::string::npos) {
    there = name.substr(0, both) + "->" + name.substr(both + 3);
    back = name.substr(both + 3) + "->" + name.substr(0, both);
  }
  if (links_by_name_.empty()) {
    for (LinkId l = 0; l < link_ends_.size(); ++l) links_by_name_[link_name(l)].push_back(l);
  }
  std::vector<LinkId> found;
  for (const std::string* n : {&there, &back}) {
    const auto it = links_by_name_.find(*n);
    if (!n->empty() && it != links_by_name_.end()) found.insert(found.end(), it->second.begin(), it->second.end());
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    // The nearest name of a link in use, else an example of the form.
    std::vector<std::string> names;
    names.reserve(links_by_name_.size());
    for (const auto& [known, ids] : links_by_name_) names.push_back(known);
    std::sort(names.begin(), names.end());  // the map's order is not the same from run to run
    if (const auto near = core::nearest_name(there, names)) {
      const std::string suggestion = back.empty() ? *near : near->substr(0, near->find("->")) + "<->" +
                                                               near->substr(near->find("->") + 2);
      throw std::invalid_argument("no link named \"" + name + "\" among the nodes in use (did you mean \"" +
                                  suggestion + "\"?)");
    }
    throw std::invalid_argument("no link named \"" + name + "\" among the nodes in use (names look like \"" +
                                (link_ends_.empty() ? std::string("gpu0->node0.nic0") : link_name(0)) + "\")");
  }
  return found;
}

void Topology::degrade(const std::string& name, double bandwidth_factor) {
  touched_.resize(link_ends_.size(), 0);
  for (LinkId l : links_named(name)) {
    network_->scale_bandwidth(l, bandwidth_factor);
    touched_[l] = 1;  // may now be a bottleneck: keep it in routes
  }
}

void Topology::fail(const std::string& name) {
  failed_.resize(link_ends_.size(), 0);
  for (LinkId l : links_named(name)) failed_[l] = 1;
  failed_names_.push_back(name);
}

}  // namespace trainsim::hw
