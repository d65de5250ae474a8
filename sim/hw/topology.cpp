#include "hw/topology.hpp"

#include <stdexcept>
#include <string>

namespace trainsim::hw {

Topology::Topology(const ClusterSpec& cluster, const std::vector<int>& gpus, FlowNetwork& network)
    : cluster_(cluster), network_(network) {
  const NodeSpec& n = cluster.node;
  const double nvlink = n.nvlink_gb_per_s * 1e9;
  const double nic = n.nic_gbit_per_s / 8.0 * 1e9;
  for (int g : gpus) {
    // Latency sits on the outgoing port so that a route counts it once.
    if (!nvlink_.count(g)) {
      const std::string id = "gpu" + std::to_string(g) + ".nvlink";
      nvlink_[g] = {network.add_link({id + ".out", nvlink, core::Time::microseconds(n.nvlink_latency_us)}),
                    network.add_link({id + ".in", nvlink, core::Time::zero()})};
    }
    const auto key = nic_of(g);
    if (!nics_.count(key)) {
      const std::string id = "node" + std::to_string(key.first) + ".nic" + std::to_string(key.second);
      nics_[key] = {network.add_link({id + ".out", nic, core::Time::microseconds(n.nic_latency_us)}),
                    network.add_link({id + ".in", nic, core::Time::zero()})};
    }
  }
}

std::pair<int, int> Topology::nic_of(int gpu) const {
  const NodeSpec& n = cluster_.node;
  const int local = gpu % n.gpus_per_node;
  return {cluster_.node_of(gpu), local * n.nics_per_node / n.gpus_per_node};
}

std::uint32_t Topology::route(int from, int to) {
  const auto key = std::make_pair(from, to);
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  if (!nvlink_.count(from) || !nvlink_.count(to) || from == to) {
    throw std::logic_error("Topology::route: no route from GPU " + std::to_string(from) + " to " +
                           std::to_string(to));
  }
  std::vector<LinkId> links;
  if (cluster_.node_of(from) == cluster_.node_of(to)) {
    links = {nvlink_.at(from).out, nvlink_.at(to).in};
  } else {
    links = {nics_.at(nic_of(from)).out, nics_.at(nic_of(to)).in};
  }
  const std::uint32_t r = network_.add_route(std::move(links));
  routes_.emplace(key, r);
  return r;
}

}  // namespace trainsim::hw
