#include "hw/topology.hpp"

#include <stdexcept>
#include <string>

namespace trainsim::hw {

Topology::Topology(const ClusterSpec& cluster, const std::vector<int>& gpus, FlowNetwork& network)
    : cluster_(cluster), network_(network) {
  const NodeSpec& n = cluster.node;
  for (int g : gpus) {
    if (ports_.count(g)) continue;
    const std::string id = "gpu" + std::to_string(g);
    // Latency sits on the outgoing port so that a route counts it once.
    Ports p{};
    p.nvlink_out = network.add_link({id + ".nvlink.out", n.nvlink_gb_per_s * 1e9,
                                     core::Time::microseconds(n.nvlink_latency_us)});
    p.nvlink_in = network.add_link({id + ".nvlink.in", n.nvlink_gb_per_s * 1e9, core::Time::zero()});
    p.nic_out = network.add_link({id + ".nic.out", n.nic_gbit_per_s / 8.0 * 1e9,
                                  core::Time::microseconds(n.nic_latency_us)});
    p.nic_in = network.add_link({id + ".nic.in", n.nic_gbit_per_s / 8.0 * 1e9, core::Time::zero()});
    ports_.emplace(g, p);
  }
}

std::uint32_t Topology::route(int from, int to) {
  const auto key = std::make_pair(from, to);
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  const auto a = ports_.find(from);
  const auto b = ports_.find(to);
  if (a == ports_.end() || b == ports_.end() || from == to) {
    throw std::logic_error("Topology::route: no route from GPU " + std::to_string(from) + " to " +
                           std::to_string(to));
  }
  std::vector<LinkId> links;
  if (cluster_.node_of(from) == cluster_.node_of(to)) {
    links = {a->second.nvlink_out, b->second.nvlink_in};
  } else {
    links = {a->second.nic_out, b->second.nic_in};
  }
  const std::uint32_t r = network_.add_route(std::move(links));
  routes_.emplace(key, r);
  return r;
}

}  // namespace trainsim::hw
