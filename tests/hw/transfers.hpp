// Test helper shared by the topology tests: transfers of 1e6 bytes, all
// started at once between the given GPU pairs, on a cluster's topology.
#pragma once

#include <utility>
#include <vector>

#include "core/engine.hpp"
#include "hw/topology.hpp"

namespace trainsim::test {

// Their end times in microseconds.
inline std::vector<double> transfers(const hw::ClusterSpec& c, const std::vector<std::pair<int, int>>& pairs) {
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  core::TaskGraph g;
  for (const auto& [a, b] : pairs) g.add({0, topo.route(a, b), core::Time::zero(), 1e6});
  g.finalize();
  core::Engine e(g);
  const auto completion = e.add_resource(net);
  const auto timers = e.add_resource(net);
  net.set_ids(completion, timers);
  const auto tl = e.run();
  std::vector<double> ends;
  for (std::size_t i = 0; i < pairs.size(); ++i) ends.push_back(tl.end[i].to_microseconds());
  return ends;
}

}  // namespace trainsim::test
