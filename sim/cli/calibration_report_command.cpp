#include "cli/calibration_report_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "cli/run_command.hpp"
#include "config/calibration_load.hpp"
#include "config/gpu_match.hpp"
#include "config/load.hpp"
#include "config/presets.hpp"
#include "report/calibration_report.hpp"

namespace trainsim::cli {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

CLI::App* add_calibration_report_command(CLI::App& app, CalibrationReportArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "calibration-report", "Compare a calibration profile's measurements with the presets' figures (what calibration changes)");
  cmd->add_option("profile", args.profile, "Calibration profile (JSON) written by trainsim-calibrate")->required();
  cmd->add_option("--gpu", args.gpu, "GPU preset to compare with (default: the one the profile's GPU name names)");
  cmd->add_option("--node", args.node, "Node preset to compare collectives with (default: the first with that GPU)");
  cmd->footer(
      "Exit status: 0 printed; 2 a bad profile (the message names the file and the JSON path), an unknown preset,\n"
      "a GPU name that matches no preset without --gpu, or a --node preset whose GPUs are not the GPU compared with.");
  return cmd;
}

int calibration_report_command(const CalibrationReportArgs& args) {
  try {
    const auto profile = config::load_calibration_profile(args.profile);
    report::CalibrationBaseline b;
    b.gpu_preset = args.gpu.empty() ? config::gpu_preset_for(profile->header.gpu_name) : args.gpu;
    b.how_matched = args.gpu.empty() ? "matched by the GPU's name"
                    // A comparison only: a config with this GPU refuses the profile (config::same_gpu).
                    : config::same_gpu(profile->header.gpu_name, args.gpu)
                        ? "--gpu"
                        : "--gpu; not the profile's GPU: run, sweep and validate refuse the profile on it";
    const auto gpus = config::preset_names("gpu");
    if (b.gpu_preset.empty()) {
      throw config::ConfigError(fmt::format("{}: header.gpu_name: \"{}\" names no GPU preset; give one with --gpu ({})",
                                            args.profile, profile->header.gpu_name, joined(gpus)));
    }
    if (!config::find_preset("gpu", b.gpu_preset)) {
      throw config::ConfigError(fmt::format("--gpu {}: no such GPU preset; known: {}", b.gpu_preset, joined(gpus)));
    }
    b.node_preset = args.node;
    const auto nodes = config::preset_names("node");
    if (b.node_preset.empty()) {
      for (const std::string& n : nodes) {
        const auto node = nlohmann::json::parse(*config::find_preset("node", n));
        if (node.value("gpu", "") == b.gpu_preset) {
          b.node_preset = n;
          break;
        }
      }
      if (b.node_preset.empty()) {
        throw config::ConfigError(fmt::format("no node preset has GPU {}; give one with --node ({})", b.gpu_preset, joined(nodes)));
      }
    }
    const auto node_text = config::find_preset("node", b.node_preset);
    if (!node_text) throw config::ConfigError(fmt::format("--node {}: no such node preset; known: {}", b.node_preset, joined(nodes)));
    // The node preset as it is, read and checked as a config would be: its
    // own GPU must be the one compared with, or its figures would be of
    // another machine.
    const nlohmann::json node = nlohmann::json::parse(*node_text);
    if (node.value("gpu", "") != b.gpu_preset) {
      std::vector<std::string> fitting;
      for (const std::string& n : nodes) {
        if (nlohmann::json::parse(*config::find_preset("node", n)).value("gpu", "") == b.gpu_preset) fitting.push_back(n);
      }
      throw config::ConfigError(fmt::format(
          "--node {}: its GPUs are {}, but the report compares with GPU preset {} ({}); expected a node preset with "
          "{} ({}), or --gpu {}",
          b.node_preset, node.value("gpu", "?"), b.gpu_preset, b.how_matched, b.gpu_preset,
          fitting.empty() ? "none has it" : joined(fitting), node.value("gpu", "?")));
    }
    // One NVLink domain: a node preset whose domain spans trays needs all of them.
    const int domain_nodes = node.contains("nvlink_domain_nodes") && node["nvlink_domain_nodes"].is_number_integer()
                          ? std::max(1, node["nvlink_domain_nodes"].get<int>())
                          : 1;
    const nlohmann::json doc = {{"cluster", {{"node", node}, {"nodes", domain_nodes}}},
                                {"model", "gpt-1.7b"},
                                {"parallel", {{"global_batch", 1}}}};
    b.node = config::load_setting(doc, "node preset " + b.node_preset, ".").cluster.node;
    std::cout << report::calibration_report(*profile, b);
    return kOk;
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
}

}  // namespace trainsim::cli
