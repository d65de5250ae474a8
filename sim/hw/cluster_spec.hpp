// A cluster: identical nodes, each of `gpus_per_node` GPUs on an NVLink
// switch, their NICs joined by a network of switches (see NetworkSpec and
// Topology).
#pragma once

#include <string>
#include <vector>

#include "hw/gpu_spec.hpp"

namespace trainsim::hw {

struct NodeSpec {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 0;
  double nvlink_gb_per_s = 0.0;      // per GPU, per direction (spec)
  double nvlink_latency_us = 0.0;    // GPU to GPU through the switch
  double nvlink_bus_gb_per_s = 0.0;  // NCCL's effective bus bandwidth inside a node
  // NCCL send/recv between two GPUs of the node (pipeline sends): point-to-point
  // runs on fewer channels than a collective and stays well below the NVLink
  // line rate. 0: sends move at nvlink_gb_per_s.
  double nvlink_sendrecv_gb_per_s = 0.0;
  int nics_per_node = 0;
  double nic_gbit_per_s = 0.0;       // line rate of one NIC (spec)
  double nic_bus_gb_per_s = 0.0;     // bandwidth NCCL achieves through one NIC (measured)
  double nic_latency_us = 0.0;       // NIC to NIC, end to end
  // The host, for offloading to it (workload::Offload); 0 where the node
  // does not say, which refuses offloading.
  double host_memory_gb = 0.0;        // the node's DRAM
  double host_memory_tb_per_s = 0.0;  // DRAM bandwidth the CPUs reach, all sockets together
  int host_cores = 0;                 // physical CPU cores, all sockets together
  // How many parameters one core takes through an AdamW step a second: from
  // a calibration profile's host_step only (no preset can source it); 0 for
  // unknown, when only the DRAM bandwidth bounds an offloaded step.
  double host_adam_params_per_s_per_core = 0.0;
  double pcie_gb_per_s = 0.0;         // between the host and one GPU, each way, achievable
  // How many of the config's nodes share one NVLink switch domain (a GB200
  // NVL72 rack: 18 trays of 4 GPUs). The loader folds them into one node of
  // the domain's GPUs, NICs and hosts, so from then on a node is an NVLink
  // domain and this records how many config nodes each one stands for.
  int nodes_per_nvlink_domain = 1;

  // The NIC of its node a GPU (by cluster-wide id) reaches the network
  // through: the node's NICs shared out evenly over its GPUs in order.
  int nic_of(int gpu) const { return (gpu % gpus_per_node) * nics_per_node / gpus_per_node; }
};

// How the nodes' NICs are wired together.
enum class NetworkKind {
  kFlat,     // one non-blocking switch
  kFatTree,  // all NICs of a group of nodes on one leaf switch; leaves joined by a spine
  kRail,     // NIC i of every node in a group on leaf ("rail") i; leaves joined by a spine
  kCustom,   // switches and cables as the config lists them (CustomNetwork)
};

// A cable of a custom network, between two vertices named as Topology names
// them ("node0.nic0", "gpu3", "node1.nvswitch") or a switch of the network.
// It carries `gbit_per_s` each way, and each way has `latency_us`.
struct CustomLink {
  std::string from;
  std::string to;
  double gbit_per_s = 0.0;
  double latency_us = 0.0;
};

// The switches and cables of a custom network; the nodes (GPUs, NVSwitch,
// NICs and the cables between them) are built as for every network.
struct CustomNetwork {
  std::vector<std::string> switches;
  std::vector<CustomLink> links;
};

struct NetworkSpec {
  NetworkKind kind = NetworkKind::kFlat;
  int nodes_per_leaf = 1;         // fat tree: nodes per leaf; rail: nodes per rail group
  double oversubscription = 1.0;  // leaf down-links : up-links capacity (1 = non-blocking)
  double switch_latency_us = 0.0; // added on each leaf-spine hop
  CustomNetwork custom;           // kind custom only; the three above are then unused
};

struct ClusterSpec {
  NodeSpec node;
  int nodes = 0;
  NetworkSpec network;
  // The loader caps nodes x gpus_per_node well inside int.
  int gpus() const { return node.gpus_per_node * nodes; }
  int node_of(int gpu) const { return gpu / node.gpus_per_node; }
  int nic_of(int gpu) const { return node.nic_of(gpu); }
};

}  // namespace trainsim::hw
