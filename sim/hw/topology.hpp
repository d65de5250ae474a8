// The cluster as a graph (Boost.Graph): GPUs, each node's NVLink switch, NICs,
// leaf and spine switches as vertices; every cable as two directed edges, each
// a link of the FlowNetwork with its own bandwidth and latency.
//
//   GPU <-> node's NVSwitch          NVLink bandwidth; the GPU's side carries
//                                    the NVLink latency
//   GPU <-> the NIC it uses          NIC bandwidth; the GPU's side carries the
//                                    NIC latency (GPU l of a node uses NIC
//                                    l * nics_per_node / gpus_per_node)
//   NIC <-> its switch               NIC bandwidth
//   leaf <-> spine                   the leaf's down-link capacity divided by
//                                    the oversubscription factor
//
// Flat: one non-blocking core switch. Fat tree: a leaf per group of
// nodes_per_leaf nodes, taking all their NICs. Rail-optimised: per group, a
// leaf per NIC index ("rail"). Custom: the switches and cables the config
// lists (CustomNetwork), each cable with its own bandwidth and latency; a
// cable to a NIC or GPU counts as a NIC link, one between NVSwitches as
// NVLink, any other as an up-link. Routes are shortest paths by hop count
// (breadth-first search, ties broken by vertex order), built on first use and
// cached; non-blocking up-links of the built-in networks are left out of them
// (they never limit a flow) but their latency is kept. A route over NVLink
// alone carries transfers at most at the node's NCCL send/recv rate
// (NodeSpec::nvlink_sendrecv_gb_per_s), when it has one.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <array>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/flow_network.hpp"

namespace trainsim::hw {

enum class VertexKind { kGpu, kNvSwitch, kNic, kLeaf, kSpine, kSwitch /* of a custom network */ };
enum class LinkClass { kNvLink, kNic, kUplink };

// Failed links (options.links) leave two GPUs that must talk without a way
// between them: the user's configuration, not a fault of the simulator.
class NoRoute : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Topology {
 public:
  struct Vertex {
    VertexKind kind = VertexKind::kGpu;
    int a = 0;   // GPU id; node (NVSwitch, NIC); group (leaf); index in CustomNetwork::switches
    int b = -1;  // NIC index; rail (rail leaf)
  };
  struct Edge {
    LinkId link = 0;
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Vertex, Edge>;

  // Builds the switches and the nodes holding `gpus` (every node when empty,
  // and always for a custom network, whose routes may cross any node's NICs)
  // and registers their links in `network`. Without `whole_nodes`, of each
  // such node only its NVSwitch, those GPUs and the NICs they use: for
  // routes between `gpus` alone (a symmetric run's pipeline sends, a GPU on
  // each of up to dozens of nodes), which never pass through another GPU or
  // its NIC; links keep their relative order, so ties between links resolve
  // as with the nodes whole. Throws std::invalid_argument when
  // a custom network names a vertex that does not exist, repeats a switch, or
  // gives a cable no bandwidth (the config loader says so first, by JSON path).
  Topology(const ClusterSpec& cluster, FlowNetwork& network, const std::vector<int>& gpus = {},
           bool whole_nodes = true);
  // A copy of `other` whose links are registered in `network`, a copy of
  // other's network made at the same point (lower::copy_unrun).
  Topology(const Topology& other, FlowNetwork& network) : Topology(other) { network_ = &network; }

  // Route index for Task::route, from GPU `from` to GPU `to`. In a built-in
  // network with no failed link it is the network's own path
  // (canonical_path), looked up hop by hop; otherwise a breadth-first search
  // finds it (searched_links), so that routes go around failed links.
  std::uint32_t route(int from, int to);
  // The links the search finds from `from` to `to`, in order (before route()
  // leaves non-blocking up-links out); for the tests that hold the built-in
  // paths to it. Throws NoRoute when none is left.
  std::vector<LinkId> searched_links(int from, int to) const;
  // The links of that route, in order.
  const std::vector<LinkId>& route_links(int from, int to);

  // The route from `from` to `to` for a flow that stands for identical flows
  // between each pair of `copies` (the pair itself among them, or not): each of
  // its links weighs the number of copies whose own path takes that link.
  // Copies need not be on built nodes. Cached per (from, to). Not for a custom
  // network: nothing says how the copies' paths run there without a search.
  std::uint32_t shared_route(int from, int to, const std::vector<std::pair<int, int>>& copies);

  const Graph& graph() const { return *graph_; }
  LinkClass link_class(LinkId link) const { return link_class_[link]; }
  // "gpu0->node0.nic0" and the like (made on demand: names are for people).
  std::string vertex_name(Graph::vertex_descriptor v) const;
  // The name of a GPU, NVSwitch or NIC vertex (the part of the names that does
  // not depend on the network).
  static std::string node_vertex_name(const Vertex& v);
  std::string link_name(LinkId link) const;

  // Faults, before any route is asked for. `name` is one direction
  // ("gpu0->node0.nic0") or both ("gpu0<->node0.nic0"); throws
  // std::invalid_argument when no built link has that name.
  void degrade(const std::string& name, double bandwidth_factor);
  // A failed link carries nothing: routes go around it, or route() throws
  // NoRoute naming the failed links when no way is left.
  void fail(const std::string& name);
  // The links a fault's `name` covers (one, or two for "a<->b"); throws
  // std::invalid_argument when no built link has that name.
  std::vector<LinkId> links_named(const std::string& name) const;

 private:
  using VertexId = Graph::vertex_descriptor;
  VertexId add_vertex(VertexKind kind, int a = 0, int b = -1);
  // The cables of a custom network, given each node's NVSwitch and NICs.
  void wire_custom(const std::vector<VertexId>& nvswitch_of, const std::vector<std::vector<VertexId>>& nics_of);
  // A cable: two directed edges, each a link with its own latency.
  void connect(VertexId u, VertexId v, double bytes_per_s, core::Time latency_there, core::Time latency_back,
               LinkClass cls);

  Topology(const Topology&) = default;  // only with its network rebound (above)

  const ClusterSpec& cluster_;
  FlowNetwork* network_;  // never null
  // Built by the constructor alone, never changed after: a copy shares it.
  std::shared_ptr<Graph> graph_ = std::make_shared<Graph>();
  std::vector<long long> gpu_vertex_;  // -1 for GPUs of nodes not built
  std::vector<LinkClass> link_class_;                    // by LinkId
  std::vector<std::pair<VertexId, VertexId>> link_ends_;  // by LinkId
  std::vector<char> failed_;                              // by LinkId
  std::vector<char> touched_;                             // by LinkId: degraded by a fault
  std::vector<std::string> failed_names_;
  // Every link by name, made on the first lookup: faults are looked up in
  // time linear in their count.
  mutable std::unordered_map<std::string, std::vector<LinkId>> links_by_name_;
  // (kind, a, b) of a Vertex in one word: kind in the top 8 bits, a (a GPU,
  // node, group or switch index, never negative) in the next 32, b + 1 (a NIC
  // or rail, or -1) in the low 24.
  using VertexKey = std::uint64_t;
  static VertexKey key_of(VertexKind kind, int a, int b) {
    return static_cast<std::uint64_t>(kind) << 56 | static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 24 |
           static_cast<std::uint64_t>(static_cast<std::uint32_t>(b + 1) & 0xFFFFFFu);
  }
  // The path a transfer between two GPUs takes in the built-in networks, as
  // pairs of vertex keys (no search: the copies' nodes may not be built). At
  // most six hops (GPU, NIC, leaf, spine, leaf, NIC, GPU), held in place: a
  // symmetric run asks for one per copy of every pipeline send.
  struct CanonicalPath {
    using Hop = std::pair<VertexKey, VertexKey>;
    std::array<Hop, 6> hops;
    std::size_t size = 0;
    void push_back(const Hop& h) { hops[size++] = h; }
    const Hop* begin() const { return hops.data(); }
    const Hop* end() const { return hops.data() + size; }
  };
  CanonicalPath canonical_path(int from, int to) const;
  // For each of a route's hops, the copies whose canonical path takes it
  // (at least 1): shared_route's weights.
  std::vector<double> copy_weights(const std::vector<std::pair<VertexKey, VertexKey>>& hops,
                                   const std::vector<std::pair<int, int>>& copies) const;
  // copy_weights keeps its answers, per thread, while their keys hold at
  // most this many copies (8 bytes each): a few hundred plans' routes.
  static constexpr std::size_t kKnownCopies = std::size_t{1} << 20;

  // Built-in networks: the path's links without a search, in order; empty
  // when a vertex or link of it is not built.
  std::vector<LinkId> direct_links(int from, int to) const;
  std::unordered_map<VertexKey, VertexId> vertex_of_key_;      // every vertex by (kind, a, b)
  std::unordered_map<std::uint64_t, LinkId> link_between_;    // (u << 32 | v) -> the link u -> v

  std::map<std::pair<int, int>, std::uint32_t> routes_;
  std::map<std::pair<int, int>, std::uint32_t> shared_routes_;
};

}  // namespace trainsim::hw
