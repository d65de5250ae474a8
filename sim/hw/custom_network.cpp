#include "hw/custom_network.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace trainsim::hw {

namespace {

// Reads a whole number at `at` (at most 9 digits, so it fits an int).
std::optional<int> number_at(std::string_view s, std::size_t& at) {
  const std::size_t start = at;
  while (at < s.size() && at - start < 10 && s[at] >= '0' && s[at] <= '9') ++at;
  if (at == start || at - start > 9) return std::nullopt;
  int v = 0;
  for (std::size_t k = start; k < at; ++k) v = v * 10 + (s[k] - '0');
  return v;
}

bool starts_with(std::string_view s, std::size_t at, std::string_view prefix) {
  return s.substr(at, prefix.size()) == prefix;
}

}  // namespace

std::optional<Topology::Vertex> node_vertex(std::string_view name, const ClusterSpec& cluster) {
  Topology::Vertex v;
  std::size_t at = 0;
  if (starts_with(name, 0, "gpu")) {
    at = 3;
    const auto gpu = number_at(name, at);
    if (!gpu || at != name.size() || *gpu >= cluster.gpus()) return std::nullopt;
    v = {VertexKind::kGpu, *gpu, -1};
  } else if (starts_with(name, 0, "node")) {
    at = 4;
    const auto node = number_at(name, at);
    if (!node || *node >= cluster.nodes) return std::nullopt;
    if (name.substr(at) == ".nvswitch") {
      v = {VertexKind::kNvSwitch, *node, -1};
    } else if (starts_with(name, at, ".nic")) {
      at += 4;
      const auto nic = number_at(name, at);
      if (!nic || at != name.size() || *nic >= cluster.node.nics_per_node) return std::nullopt;
      v = {VertexKind::kNic, *node, *nic};
    } else {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  // Only the spelling Topology gives (no leading zeros, "gpu03").
  if (Topology::node_vertex_name(v) != name) return std::nullopt;
  return v;
}

std::string node_vertex_ranges(const ClusterSpec& cluster) {
  auto range = [](const std::string& first, const std::string& last) {
    return first == last ? first : first + " to " + last;
  };
  const int last_node = cluster.nodes - 1;
  return range("gpu0", "gpu" + std::to_string(cluster.gpus() - 1)) + ", " +
         range("node0.nvswitch", "node" + std::to_string(last_node) + ".nvswitch") + ", " +
         range("node0.nic0", "node" + std::to_string(last_node) + ".nic" +
                                 std::to_string(cluster.node.nics_per_node - 1));
}

std::vector<std::string> node_vertex_names(const ClusterSpec& cluster, int max_nodes) {
  std::vector<std::string> names;
  const NodeSpec& n = cluster.node;
  for (int node = 0; node < std::min(cluster.nodes, max_nodes); ++node) {
    for (int l = 0; l < n.gpus_per_node; ++l) {
      names.push_back(Topology::node_vertex_name({VertexKind::kGpu, node * n.gpus_per_node + l, -1}));
    }
    names.push_back(Topology::node_vertex_name({VertexKind::kNvSwitch, node, -1}));
    for (int k = 0; k < n.nics_per_node; ++k) names.push_back(Topology::node_vertex_name({VertexKind::kNic, node, k}));
  }
  return names;
}

namespace {

// A text cut into literal pieces and placeholders.
struct Piece {
  std::string literal;
  char variable = 0;  // 'n' or 'i' for a placeholder
  char op = 0;        // '/', '%' or 0
  int by = 1;
};

std::vector<Piece> pieces_of(const std::string& text) {
  const std::string help = " (placeholders are {n} for a node and {i} for a NIC index, optionally {n/2} or {i%4})";
  std::vector<Piece> out;
  std::string literal;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text[at] == '}') throw std::invalid_argument("\"}\" without \"{\" in \"" + text + "\"" + help);
    if (text[at] != '{') {
      literal += text[at];
      continue;
    }
    const std::size_t close = text.find('}', at);
    if (close == std::string::npos) throw std::invalid_argument("\"{\" without \"}\" in \"" + text + "\"" + help);
    const std::string inside = text.substr(at + 1, close - at - 1);
    Piece p;
    bool ok = !inside.empty() && (inside[0] == 'n' || inside[0] == 'i');
    if (ok) {
      p.variable = inside[0];
      if (inside.size() > 1) {
        p.op = inside[1];
        std::size_t k = 2;
        const auto by = number_at(inside, k);
        ok = (p.op == '/' || p.op == '%') && by && *by > 0 && k == inside.size();
        if (ok) p.by = *by;
      }
    }
    if (!ok) throw std::invalid_argument("unknown placeholder \"{" + inside + "}\" in \"" + text + "\"" + help);
    out.push_back({literal});
    literal.clear();
    out.push_back(p);
    at = close;
  }
  out.push_back({literal});
  return out;
}

}  // namespace

std::vector<Filling> fill_placeholders(const std::vector<std::string>& texts, int nodes, int nics_per_node,
                                       std::size_t limit) {
  std::vector<std::vector<Piece>> parsed;
  bool uses_node = false, uses_nic = false;
  for (const std::string& t : texts) {
    parsed.push_back(pieces_of(t));
    for (const Piece& p : parsed.back()) {
      uses_node = uses_node || p.variable == 'n';
      uses_nic = uses_nic || p.variable == 'i';
    }
  }
  const std::size_t node_values = uses_node ? static_cast<std::size_t>(std::max(nodes, 0)) : 1;
  const std::size_t nic_values = uses_nic ? static_cast<std::size_t>(std::max(nics_per_node, 0)) : 1;
  if (node_values * nic_values > limit) {
    throw std::invalid_argument("gives " + std::to_string(node_values * nic_values) + ", more than the " +
                                std::to_string(limit) + " allowed");
  }
  std::vector<Filling> out;
  std::set<std::vector<std::string>> seen;  // membership only: the order is the loops'
  for (std::size_t n = 0; n < node_values; ++n) {
    for (std::size_t i = 0; i < nic_values; ++i) {
      Filling f;
      f.node = uses_node ? static_cast<int>(n) : -1;
      f.nic = uses_nic ? static_cast<int>(i) : -1;
      for (const auto& pieces : parsed) {
        std::string s;
        for (const Piece& p : pieces) {
          if (!p.variable) {
            s += p.literal;
            continue;
          }
          const int v = p.variable == 'n' ? f.node : f.nic;
          s += std::to_string(p.op == '/' ? v / p.by : p.op == '%' ? v % p.by : v);
        }
        f.texts.push_back(std::move(s));
      }
      if (seen.insert(f.texts).second) out.push_back(std::move(f));
    }
  }
  return out;
}

GpuReach::GpuReach(const Topology& topology) {
  const Topology::Graph& g = topology.graph();
  const std::size_t nv = boost::num_vertices(g);
  // Parts of the network without GPUs: union-find over the cables between
  // non-GPU vertices.
  std::vector<std::size_t> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&parent](std::size_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  auto is_gpu = [&g](std::size_t v) { return g[v].kind == VertexKind::kGpu; };
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const std::size_t u = boost::source(*e, g), v = boost::target(*e, g);
    if (!is_gpu(u) && !is_gpu(v)) parent[root(u)] = root(v);
  }
  // A GPU touches the parts of its neighbours; two GPUs meet in a shared part.
  for (std::size_t v = 0; v < nv; ++v) {
    if (!is_gpu(v)) continue;
    const auto gpu = static_cast<std::size_t>(g[v].a);
    if (parts_.size() <= gpu) parts_.resize(gpu + 1);
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const std::size_t w = boost::target(*e, g);
      if (is_gpu(w)) {
        direct_.emplace_back(std::min(g[v].a, g[w].a), std::max(g[v].a, g[w].a));
      } else {
        parts_[gpu].push_back(root(w));
      }
    }
    std::sort(parts_[gpu].begin(), parts_[gpu].end());
    parts_[gpu].erase(std::unique(parts_[gpu].begin(), parts_[gpu].end()), parts_[gpu].end());
  }
  std::sort(direct_.begin(), direct_.end());
}

bool GpuReach::connected(int a, int b) const {
  if (a == b) return true;
  if (a < 0 || b < 0 || static_cast<std::size_t>(std::max(a, b)) >= parts_.size()) return false;
  if (std::binary_search(direct_.begin(), direct_.end(), std::make_pair(std::min(a, b), std::max(a, b)))) return true;
  const auto& x = parts_[static_cast<std::size_t>(a)];
  const auto& y = parts_[static_cast<std::size_t>(b)];
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j]) return true;
    if (x[i] < y[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

}  // namespace trainsim::hw
