#include "cli/calibration_report_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iostream>

#include "cli/run_command.hpp"
#include "config/calibration_load.hpp"
#include "config/load.hpp"
#include "config/presets.hpp"
#include "report/calibration_report.hpp"

namespace trainsim::cli {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The GPU preset a device name stands for: the preset of that very name
// ("NVIDIA A100-SXM4-80GB"), else the one preset whose model ("H200" of
// "H200-SXM-141GB") is a word of the name ("NVIDIA H200"); empty if none or
// several.
std::string match_gpu(const std::string& device) {
  const std::string name = lower(device);
  std::vector<std::string> found;
  for (const std::string& preset : config::preset_names("gpu")) {
    const std::string p = lower(preset);
    if (name == p || name == "nvidia " + p) return preset;
    const std::string model = p.substr(0, p.find('-'));
    for (std::size_t at = name.find(model); at != std::string::npos; at = name.find(model, at + 1)) {
      const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
      const std::size_t end = at + model.size();
      const bool ends = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
      if (starts && ends) {
        found.push_back(preset);
        break;
      }
    }
  }
  return found.size() == 1 ? found.front() : std::string();
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
      "or a GPU name that matches no preset without --gpu.");
  return cmd;
}

int calibration_report_command(const CalibrationReportArgs& args) {
  try {
    const auto profile = config::load_calibration_profile(args.profile);
    report::CalibrationBaseline b;
    b.gpu_preset = args.gpu.empty() ? match_gpu(profile->header.gpu_name) : args.gpu;
    b.how_matched = args.gpu.empty() ? "matched by the GPU's name" : "--gpu";
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
    // The node preset with the GPU preset, read and checked as a config would be.
    nlohmann::json node = nlohmann::json::parse(*node_text);
    node["gpu"] = b.gpu_preset;
    const nlohmann::json doc = {{"cluster", {{"node", node}, {"nodes", 1}}},
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
