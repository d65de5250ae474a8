// cluster: nodes, the node and its GPU (presets, inline values or a
// calibration profile), and the network (a built-in kind, or a custom one
// of switches and links with placeholders).
#include "config/sections.hpp"

#include <filesystem>
#include <map>

#include "config/calibration_load.hpp"
#include "config/gpu_match.hpp"
#include "hw/calibration_profile.hpp"
#include "hw/custom_network.hpp"

namespace trainsim::config::detail {

namespace {

// gemm_grid, gemm_fp8_grid: {"m": [...], "n": [...], "k": [...], "tflops": [...]},
// each axis ascending, tflops flattened m-major ((i_m * |n| + i_n) * |k| + i_k),
// none above `peak` (`peak_key` names it in the error).
std::shared_ptr<const hw::GemmGrid> read_gemm_grid(const Section& s, const char* key, double peak, const char* peak_key,
                                                   const Context& ctx) {
  const json& v = s.required(key, "an object with m, n, k and tflops");
  const std::string path = s.path(key);
  if (!v.is_object()) ctx.fail(path, "expected an object with m, n, k and tflops, got " + show(v));
  for (const auto& [key, value] : v.items()) {
    if (key != "m" && key != "n" && key != "k" && key != "tflops") {
      ctx.fail(path + "." + excerpt(key), "unknown key; expected m, n, k and tflops");
    }
  }
  auto grid = std::make_shared<hw::GemmGrid>();
  auto numbers = [&](const char* key, std::vector<double>& out, bool ascending) {
    if (!v.contains(key) || !v[key].is_array() || v[key].empty()) {
      ctx.fail(path + "." + key, "expected a non-empty list of positive numbers");
    }
    for (std::size_t i = 0; i < v[key].size(); ++i) {
      const json& x = v[key][i];
      if (!x.is_number() || !(x.get<double>() > 0.0) || x.get<double>() > 1e9) {
        ctx.fail(fmt::format("{}.{}[{}]", path, key, i), "expected a positive number, got " + show(x));
      }
      if (ascending && !out.empty() && !(x.get<double>() > out.back())) {
        ctx.fail(fmt::format("{}.{}[{}]", path, key, i), "expected sizes in ascending order");
      }
      out.push_back(x.get<double>());
    }
  };
  numbers("m", grid->m, true);
  numbers("n", grid->n, true);
  numbers("k", grid->k, true);
  numbers("tflops", grid->tflops, false);
  const std::size_t want = grid->m.size() * grid->n.size() * grid->k.size();
  if (grid->tflops.size() != want) {
    ctx.fail(path + ".tflops", fmt::format("expected |m| x |n| x |k| = {} values, got {}", want, grid->tflops.size()));
  }
  for (std::size_t i = 0; i < grid->tflops.size(); ++i) {
    if (grid->tflops[i] > peak) {
      ctx.fail(fmt::format("{}.tflops[{}]", path, i),
               fmt::format("{} TFLOP/s exceeds {} = {}", grid->tflops[i], peak_key, peak));
    }
  }
  return grid;
}

hw::GpuSpec read_gpu(const json& doc, const Context& ctx) {
  const Section s(doc, "cluster.node.gpu", ctx);
  hw::GpuSpec g;
  g.name = s.string_or("name", "custom GPU");
  g.peak_tflops = s.positive_number("peak_tflops", kMinRate, kMaxTflops);
  g.memory_gb = s.positive_number("memory_gb", 1e-3, kMaxMemoryGb);
  g.hbm_tb_per_s = s.positive_number("hbm_tb_per_s", kMinRate, kMaxTbPerS);
  g.hbm_achievable_tb_per_s = s.positive_number("hbm_achievable_tb_per_s", kMinRate, kMaxTbPerS);
  g.gemm_tflops = s.curve("gemm_tflops");
  g.gemm_max_tflops = s.positive_number("gemm_max_tflops", kMinRate, kMaxTflops);
  if (s.has("gemm_grid")) g.gemm_grid = read_gemm_grid(s, "gemm_grid", g.peak_tflops, "peak_tflops", ctx);
  g.attention_tflops = s.curve("attention_tflops");
  if (s.has("attention_v1_tflops")) g.attention_v1_tflops = s.curve("attention_v1_tflops");
  if (s.has("attention_cudnn_tflops")) g.attention_cudnn_tflops = s.curve("attention_cudnn_tflops");
  g.kernel_overhead_us = s.non_negative_number("kernel_overhead_us", kMaxMicroseconds);
  // Spec figures that nothing times yet; a lower-precision peak below the BF16 one is a typo.
  if (s.has("peak_fp8_tflops")) g.peak_fp8_tflops = s.positive_number("peak_fp8_tflops", g.peak_tflops, 2 * kMaxTflops);
  if (s.has("peak_fp4_tflops")) g.peak_fp4_tflops = s.positive_number("peak_fp4_tflops", g.peak_tflops, 4 * kMaxTflops);
  if (s.has("power_w")) g.power_w = s.positive_number("power_w", 1.0, 1e5);
  if (s.has("sustained_tensor_fraction")) {
    g.sustained_tensor_fraction = s.positive_number("sustained_tensor_fraction", 0.05, 1.0);
  }
  // FP8 GEMM figures: both or neither, and only beside an FP8 peak they stay under.
  const bool fp8_curve = s.has("gemm_fp8_tflops"), fp8_max = s.has("gemm_fp8_max_tflops");
  if (fp8_curve != fp8_max) {
    ctx.fail(s.path(fp8_curve ? "gemm_fp8_max_tflops" : "gemm_fp8_tflops"),
             "missing: FP8 GEMM throughput takes both gemm_fp8_tflops (the curve) and gemm_fp8_max_tflops (its ceiling)");
  }
  if (fp8_curve) {
    if (g.peak_fp8_tflops <= 0.0) {
      ctx.fail(s.path("gemm_fp8_tflops"), "needs peak_fp8_tflops, the FP8 peak the measured throughput stays under");
    }
    g.gemm_fp8_tflops = s.curve("gemm_fp8_tflops");
    g.gemm_fp8_max_tflops = s.positive_number("gemm_fp8_max_tflops", kMinRate, g.peak_fp8_tflops);
    for (std::size_t i = 0; i < g.gemm_fp8_tflops.size(); ++i) {
      if (g.gemm_fp8_tflops[i].tflops > g.peak_fp8_tflops) {
        ctx.fail(fmt::format("{}[{}]", s.path("gemm_fp8_tflops"), i),
                 fmt::format("{} TFLOP/s exceeds peak_fp8_tflops = {}", g.gemm_fp8_tflops[i].tflops, g.peak_fp8_tflops));
      }
    }
  }
  // An FP8 shape grid refines the FP8 curve, so it comes only beside it.
  if (s.has("gemm_fp8_grid")) {
    if (!fp8_curve) {
      ctx.fail(s.path("gemm_fp8_grid"), "needs gemm_fp8_tflops and gemm_fp8_max_tflops, the FP8 curve and ceiling it refines");
    }
    g.gemm_fp8_grid = read_gemm_grid(s, "gemm_fp8_grid", g.peak_fp8_tflops, "peak_fp8_tflops", ctx);
  }
  s.free_text("sources");
  if (g.hbm_achievable_tb_per_s > g.hbm_tb_per_s) {
    ctx.fail(s.path("hbm_achievable_tb_per_s"), "cannot exceed hbm_tb_per_s");
  }
  // Measured throughput cannot beat the peak; a point that does is a typo.
  if (g.gemm_max_tflops > g.peak_tflops) ctx.fail(s.path("gemm_max_tflops"), "cannot exceed peak_tflops");
  for (const char* key : {"gemm_tflops", "attention_tflops", "attention_v1_tflops", "attention_cudnn_tflops"}) {
    const std::string name = key;
    const auto& curve = name == "gemm_tflops"           ? g.gemm_tflops
                        : name == "attention_tflops"    ? g.attention_tflops
                        : name == "attention_v1_tflops" ? g.attention_v1_tflops
                                                        : g.attention_cudnn_tflops;
    for (std::size_t i = 0; i < curve.size(); ++i) {
      if (curve[i].tflops > g.peak_tflops) {
        ctx.fail(fmt::format("{}[{}]", s.path(key), i),
                 fmt::format("{} TFLOP/s exceeds peak_tflops = {}", curve[i].tflops, g.peak_tflops));
      }
    }
  }
  return g;
}

// A custom network's switches and links with their placeholders filled (see
// hw::fill_placeholders), every name checked against the switches and the
// nodes' vertices. A switch or cable that a placeholder entry gives more than
// once counts once; given again by another entry, it is an error.
hw::CustomNetwork read_custom_network(const Section& w, const hw::ClusterSpec& cluster, const Context& ctx) {
  constexpr std::size_t kMaxEntries = 1'000'000;  // switches, or links, after filling
  hw::CustomNetwork net;
  auto list_at = [&](const std::string& key) -> const json& {
    const json& v = w.required(key, "a list of objects");
    if (!v.is_array()) ctx.fail(w.path(key), "expected a list of objects, got " + show(v));
    return v;
  };
  auto fill = [&](const std::vector<std::string>& texts, const std::string& where) -> std::vector<hw::Filling> {
    try {
      return hw::fill_placeholders(texts, cluster.nodes, cluster.node.nics_per_node, kMaxEntries);
    } catch (const std::invalid_argument& e) {
      ctx.fail(where, e.what());
    }
  };
  // " (\"leaf{n/2}\" with n = 4)" for a name a placeholder made.
  auto filled_from = [](const std::string& pattern, const hw::Filling& f) -> std::string {
    std::string values;
    if (pattern.find("{n") != std::string::npos) values = fmt::format("n = {}", f.node);
    if (pattern.find("{i") != std::string::npos) values += (values.empty() ? "" : ", ") + fmt::format("i = {}", f.nic);
    return values.empty() ? "" : fmt::format(" (\"{}\" with {})", pattern, values);
  };

  std::map<std::string, std::string> switch_at;  // name -> where it is listed
  if (w.has("switches")) {
    const json& list = list_at("switches");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Section e(list[k], fmt::format("{}[{}]", w.path("switches"), k), {"name"}, ctx);
      const std::string pattern = e.string("name");
      for (const hw::Filling& f : fill({pattern}, e.path("name"))) {
        const std::string& name = f.texts[0];
        if (name.empty()) ctx.fail(e.path("name"), "expected a non-empty name");
        if (name.find("->") != std::string::npos) {
          ctx.fail(e.path("name"), fmt::format("\"{}\": a name may not hold \"->\" (link names use it)", name));
        }
        if (hw::node_vertex(name, cluster)) {
          ctx.fail(e.path("name"),
                   fmt::format("\"{}\" is the name of a node's vertex; a switch needs a name of its own", name));
        }
        if (const auto it = switch_at.find(name); it != switch_at.end()) {
          ctx.fail(e.path("name"), fmt::format("switch \"{}\"{} is already listed at {}", name, filled_from(pattern, f),
                                               it->second));
        }
        switch_at.emplace(name, e.path("name"));
        net.switches.push_back(name);
      }
      if (net.switches.size() > kMaxEntries) {
        ctx.fail(w.path("switches"), fmt::format("more than {} switches", kMaxEntries));
      }
    }
  }

  // An unknown name is named with the closest known one and what is known.
  auto unknown = [&](const std::string& name, const std::string& from) {
    std::vector<std::string> known = net.switches;
    const std::vector<std::string> nodes = hw::node_vertex_names(cluster, 64);
    known.insert(known.end(), nodes.begin(), nodes.end());
    const auto near = closest(name, known);
    const auto listed = static_cast<std::ptrdiff_t>(std::min<std::size_t>(8, net.switches.size()));
    std::vector<std::string> shown(net.switches.begin(), net.switches.begin() + listed);
    if (net.switches.size() > shown.size()) shown.push_back("...");
    return fmt::format("no switch or node vertex named \"{}\"{}{}; switches: {}; node vertices: {}", name, from,
                       near ? fmt::format(" (did you mean \"{}\"?)", *near) : "",
                       shown.empty() ? "none" : join(shown, ", "), hw::node_vertex_ranges(cluster));
  };
  std::map<std::pair<std::string, std::string>, std::string> cable_at;  // (name, name) in order -> where
  const json& list = list_at("links");
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string where = fmt::format("{}[{}]", w.path("links"), k);
    const Section e(list[k], where, {"from", "to", "gbit_per_s", "latency_us"}, ctx);
    const std::string from = e.string("from"), to = e.string("to");
    const double gbit = e.positive_number("gbit_per_s", kMinRate, kMaxBandwidth);
    const double latency = e.has("latency_us") ? e.non_negative_number("latency_us", kMaxMicroseconds) : 0.0;
    for (const hw::Filling& f : fill({from, to}, where)) {
      for (int end = 0; end < 2; ++end) {
        const std::string& name = f.texts[end];
        if (!switch_at.count(name) && !hw::node_vertex(name, cluster)) {
          ctx.fail(e.path(end == 0 ? "from" : "to"), unknown(name, filled_from(end == 0 ? from : to, f)));
        }
      }
      if (f.texts[0] == f.texts[1]) ctx.fail(where, fmt::format("a link from \"{}\" to itself", f.texts[0]));
      const auto ends = std::minmax(f.texts[0], f.texts[1]);
      const auto [it, fresh] = cable_at.emplace(std::make_pair(ends.first, ends.second), where);
      if (!fresh) {
        ctx.fail(where, fmt::format("{} and {} are already joined by {} (give one link with the bandwidth of both)",
                                    f.texts[0], f.texts[1], it->second));
      }
      net.links.push_back({f.texts[0], f.texts[1], gbit, latency});
    }
    if (net.links.size() > kMaxEntries) ctx.fail(w.path("links"), fmt::format("more than {} links", kMaxEntries));
  }
  return net;
}

// A network preset may name the NICs its rails are built of (ConnectX-7,
// ConnectX-8); they replace the node's. Both figures or neither.
void read_network_nics(const json& doc, hw::NodeSpec& node, const Context& ctx) {
  const Section w(doc, "cluster.network", ctx);
  const bool line = w.has("nic_gbit_per_s"), bus = w.has("nic_bus_gb_per_s");
  if (line != bus) {
    ctx.fail(w.path(line ? "nic_bus_gb_per_s" : "nic_gbit_per_s"),
             "missing: a network that names its NICs gives both nic_gbit_per_s (line rate) and nic_bus_gb_per_s "
             "(what NCCL reaches through one)");
  }
  if (!line) return;
  node.nic_gbit_per_s = w.positive_number("nic_gbit_per_s", kMinRate, kMaxBandwidth);
  node.nic_bus_gb_per_s = w.positive_number("nic_bus_gb_per_s", kMinRate, kMaxBandwidth);
  if (node.nic_bus_gb_per_s * 8.0 > node.nic_gbit_per_s * 1.0000001) {
    ctx.fail(w.path("nic_bus_gb_per_s"), fmt::format("{} GB/s is above the line rate nic_gbit_per_s = {} Gb/s ({} GB/s)",
                                                     node.nic_bus_gb_per_s, node.nic_gbit_per_s, node.nic_gbit_per_s / 8.0));
  }
}

// cluster.node.nvlink_domain_nodes = k: every k consecutive nodes share one
// NVLink switch domain, so their GPUs reach each other over NVLink; a job may
// take fewer of each domain's nodes (cluster.nvlink_domain_nodes, as Slurm's
// --segment places a job on 16 of a GB200 NVL72 rack's 18 trays). The
// simulator's node is the unit inside which traffic stays on NVLink, so the
// k nodes become one: k times the GPUs, NICs and host memory (the host share
// of a GPU, host memory over GPUs, is unchanged). Traces and link names then
// count domains; the summary's host memory is per node as given (driver/whatif.cpp).
void fold_nvlink_domains(const json& doc, hw::ClusterSpec& cluster, const Context& ctx) {
  const Section c(doc, "cluster", ctx);
  const Section n(doc, "cluster.node", ctx);
  const int physical = n.has("nvlink_domain_nodes") ? n.positive_int("nvlink_domain_nodes", 1024) : 1;
  int k = physical;
  if (c.has("nvlink_domain_nodes")) {
    k = c.positive_int("nvlink_domain_nodes", 1024);
    if (k > physical) {
      ctx.fail(c.path("nvlink_domain_nodes"),
               fmt::format("{} nodes a domain, but the node's NVLink domain holds {} (cluster.node.nvlink_domain_nodes); "
                           "expected at most {}",
                           k, physical, physical),
               {"cluster.node.nvlink_domain_nodes"});
    }
  }
  if (k == 1) return;
  hw::NodeSpec& node = cluster.node;
  const bool job_given = c.has("nvlink_domain_nodes");
  const std::string k_key = job_given ? "cluster.nvlink_domain_nodes" : "cluster.node.nvlink_domain_nodes";
  if (cluster.nodes % k != 0) {
    ctx.fail("cluster.nodes",
             job_given ? fmt::format("{} nodes do not make whole NVLink domains of {} nodes ({}); expected a multiple "
                                     "of {}",
                                     cluster.nodes, k, k_key, k)
                       : fmt::format("{} nodes do not make whole NVLink domains of {} nodes ({}); expected a multiple "
                                     "of {}, or cluster.nvlink_domain_nodes: the nodes the job takes of each domain "
                                     "(a divisor of cluster.nodes, at most {})",
                                     cluster.nodes, k, k_key, k, k),
             {k_key});
  }
  if (cluster.network.kind == hw::NetworkKind::kCustom) {
    ctx.fail(k_key,
             "an NVLink domain over several nodes is not supported with a custom network (its vertex names count "
             "nodes); expected nvlink_domain_nodes 1, or a built-in network kind",
             {"cluster.network.kind"});
  }
  // A leaf's nodes are the fabric's, whole racks however many of each a job
  // takes: it holds nodes_per_leaf / physical domains.
  if (cluster.network.kind != hw::NetworkKind::kFlat && cluster.network.nodes_per_leaf % physical != 0) {
    ctx.fail("cluster.network.nodes_per_leaf",
             fmt::format("{} nodes per leaf split the NVLink domains of {} nodes (cluster.node.nvlink_domain_nodes); "
                         "expected a multiple of {}",
                         cluster.network.nodes_per_leaf, physical, physical),
             {"cluster.node.nvlink_domain_nodes"});
  }
  if (cluster.network.kind != hw::NetworkKind::kFlat) cluster.network.nodes_per_leaf /= physical;
  node.gpus_per_node *= k;
  node.nics_per_node *= k;
  node.host_memory_gb *= k;
  node.host_memory_tb_per_s *= k;
  node.host_cores *= k;
  node.nodes_per_nvlink_domain = k;
  cluster.nodes /= k;
}

}  // namespace

hw::ClusterSpec read_cluster(const json& doc, const Context& ctx) {
  const Section c(doc, "cluster", ctx);
  const Section n(doc, "cluster.node", ctx);
  hw::ClusterSpec cluster;
  cluster.nodes = c.positive_int("nodes", kMaxCount);
  hw::NodeSpec& node = cluster.node;
  node.name = n.string_or("name", "custom node");
  node.gpu = read_gpu(doc, ctx);
  node.gpus_per_node = n.positive_int("gpus_per_node", 1024);
  node.nvlink_gb_per_s = n.positive_number("nvlink_gb_per_s", kMinRate, kMaxBandwidth);
  node.nvlink_latency_us = n.non_negative_number("nvlink_latency_us", kMaxMicroseconds);
  node.nvlink_bus_gb_per_s = n.positive_number("nvlink_bus_gb_per_s", kMinRate, kMaxBandwidth);
  if (n.has("nvlink_sendrecv_gb_per_s")) {
    node.nvlink_sendrecv_gb_per_s = n.positive_number("nvlink_sendrecv_gb_per_s", kMinRate, kMaxBandwidth);
    if (node.nvlink_sendrecv_gb_per_s > node.nvlink_gb_per_s) {
      ctx.fail(n.path("nvlink_sendrecv_gb_per_s"),
               fmt::format("{} GB/s is above the NVLink line rate nvlink_gb_per_s ({} GB/s); expected at most that "
                           "(when lowering nvlink_gb_per_s, lower this too)",
                           node.nvlink_sendrecv_gb_per_s, node.nvlink_gb_per_s));
    }
  }
  node.nics_per_node = n.positive_int("nics_per_node", 1024);
  node.nic_gbit_per_s = n.positive_number("nic_gbit_per_s", kMinRate, kMaxBandwidth);
  node.nic_bus_gb_per_s = n.positive_number("nic_bus_gb_per_s", kMinRate, kMaxBandwidth);
  node.nic_latency_us = n.non_negative_number("nic_latency_us", kMaxMicroseconds);
  // What NCCL reaches is at most what the wire carries.
  if (node.nvlink_bus_gb_per_s > node.nvlink_gb_per_s * 1.0000001) {
    ctx.fail(n.path("nvlink_bus_gb_per_s"),
             fmt::format("{} GB/s is above the NVLink line rate nvlink_gb_per_s ({} GB/s); expected at most that "
                         "(when lowering nvlink_gb_per_s, lower this too)",
                         node.nvlink_bus_gb_per_s, node.nvlink_gb_per_s));
  }
  if (node.nic_bus_gb_per_s * 8.0 > node.nic_gbit_per_s * 1.0000001) {
    ctx.fail(n.path("nic_bus_gb_per_s"),
             fmt::format("{} GB/s is above the NIC line rate nic_gbit_per_s = {} Gb/s ({} GB/s); expected at most that "
                         "(when lowering nic_gbit_per_s, lower this too)",
                         node.nic_bus_gb_per_s, node.nic_gbit_per_s, node.nic_gbit_per_s / 8.0));
  }
  // The host's figures are needed only to offload to it.
  if (n.has("host_memory_gb")) node.host_memory_gb = n.positive_number("host_memory_gb", 1.0, 1e9);
  if (n.has("host_memory_tb_per_s")) node.host_memory_tb_per_s = n.positive_number("host_memory_tb_per_s", 1e-3, 1e3);
  if (n.has("host_cores")) node.host_cores = n.positive_int("host_cores", 1'000'000);
  if (n.has("pcie_gb_per_s")) node.pcie_gb_per_s = n.positive_number("pcie_gb_per_s", kMinRate, kMaxBandwidth);
  n.free_text("sources");
  const long long gpus = static_cast<long long>(cluster.nodes) * node.gpus_per_node;
  if (gpus > kMaxGpus) {
    ctx.fail("cluster.nodes", fmt::format("{} nodes x {} GPUs = {} GPUs, more than the {} supported", cluster.nodes,
                                          node.gpus_per_node, gpus, kMaxGpus));
  }
  if (doc["cluster"].contains("network")) {
    const Section w(doc, "cluster.network", ctx);
    hw::NetworkSpec& net = cluster.network;
    net.kind = w.choice<hw::NetworkKind>("kind", hw::NetworkKind::kFlat,
                                         {{"flat", hw::NetworkKind::kFlat},
                                          {"fat-tree", hw::NetworkKind::kFatTree},
                                          {"rail", hw::NetworkKind::kRail},
                                          {"custom", hw::NetworkKind::kCustom}});
    if (net.kind == hw::NetworkKind::kCustom) {
      for (const char* key : {"nodes_per_leaf", "oversubscription", "switch_latency_us"}) {
        if (w.has(key)) {
          ctx.fail(w.path(key), "not used by a custom network (each of its links gives its own gbit_per_s and "
                                "latency_us)");
        }
      }
      net.custom = read_custom_network(w, cluster, ctx);
    } else {
      for (const char* key : {"switches", "links"}) {
        if (w.has(key)) ctx.fail(w.path(key), "only read when cluster.network.kind is \"custom\"");
      }
    }
    if (net.kind == hw::NetworkKind::kFlat) {
      // One non-blocking switch: no leaves, so nothing these keys describe.
      for (const char* key : {"nodes_per_leaf", "oversubscription", "switch_latency_us"}) {
        if (w.has(key)) {
          ctx.fail(w.path(key), "only read by a network of leaves: expected cluster.network.kind \"fat-tree\" or "
                                "\"rail\" (a flat network, the default kind, is one non-blocking switch)");
        }
      }
    }
    net.nodes_per_leaf = w.positive_int_or("nodes_per_leaf", 1, kMaxCount);
    net.oversubscription = w.has("oversubscription") ? w.positive_number("oversubscription", 1.0, 1e3) : 1.0;
    net.switch_latency_us = w.has("switch_latency_us") ? w.non_negative_number("switch_latency_us", kMaxMicroseconds) : 0.0;
    w.string_or("name", "");
    w.free_text("sources");
  }
  if (doc["cluster"].contains("network")) read_network_nics(doc, cluster.node, ctx);
  fold_nvlink_domains(doc, cluster, ctx);
  if (c.has("calibration")) {
    // A profile tools/calibrate wrote, relative to the config's folder; its
    // own errors name the profile's file and JSON path.
    std::filesystem::path file(c.string("calibration"));
    if (file.empty()) ctx.fail(c.path("calibration"), "expected the path of a calibration profile (JSON)");
    if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) ctx.fail(c.path("calibration"), "no such file: " + file.string());
    const auto profile = load_calibration_profile(file.string());
    // Another GPU's measurements would time this cluster as that GPU, silently.
    if (!same_gpu(profile->header.gpu_name, node.gpu.name)) {
      ctx.fail(c.path("calibration"),
               fmt::format("the profile {} was measured on {} (header.gpu_name), but the cluster's GPU is {} "
                           "(cluster.node.gpu.name); expected a profile of that GPU (if it is the same chip under "
                           "another name, set cluster.node.gpu.name to \"{}\")",
                           file.string(), profile->header.gpu_name, node.gpu.name, profile->header.gpu_name),
               {"cluster.node.gpu.name"});
    }
    cluster.node = calibrated(cluster.node, profile);
  }
  return cluster;
}

}  // namespace trainsim::config::detail
