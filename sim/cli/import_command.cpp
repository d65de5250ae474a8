#include "cli/import_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/run_command.hpp"
#include "cli/whole_number.hpp"
#include "config/error.hpp"
#include "config/hf_config.hpp"
#include "config/sections.hpp"
#include "config/json_text.hpp"
#include "config/load.hpp"
#include "config/megatron_args.hpp"
#include "config/torchtitan_toml.hpp"

namespace trainsim::cli {

ImportCommands add_import_command(CLI::App& app, ImportHfArgs& args, ImportMegatronArgs& megatron_args,
                                  ImportTorchTitanArgs& torchtitan_args) {
  CLI::App* import = app.add_subcommand("import", "Turn settings written for other tools into trainsim's");
  import->require_subcommand(1);
  import->footer("Example: trainsim import hf config.json --seq 4096 > my-model.json");
  CLI::App* hf = import->add_subcommand(
      "hf", "Print a Hugging Face config.json as a trainsim model object (the value of a config's \"model\")");
  hf->add_option("file", args.file, "The model's config.json")->required();
  hf->add_option("--seq", args.seq,
                 "Training sequence length to add as model.seq (a Hugging Face config does not give it)")
      ->check(whole_number(1, 1'000'000'000));
  std::string known;
  for (const std::string& n : config::hf_architectures()) known += (known.empty() ? "" : ", ") + n;
  hf->footer("Maps " + known +
             ".\nA config can also name the file: \"model\": {\"hf\": \"config.json\", \"seq\": 4096}.\n"
             "Exit status: 0 success; 2 a file that cannot be read or mapped; 5 stdout could not be written.\n"
             "Example: trainsim import hf config.json --seq 4096 > my-model.json");
  CLI::App* megatron = import->add_subcommand(
      "megatron", "Print Megatron-LM's arguments (after --, or a launch script's) as a trainsim config");
  megatron->add_option("--cluster", megatron_args.node, "Node preset the run is on, e.g. dgx-h100 (see `trainsim presets`)")
      ->required();
  megatron->add_option("--nodes", megatron_args.nodes, "How many nodes")->required()->check(whole_number(1, 10'000'000));
  megatron->add_option("--network", megatron_args.network, "Network preset (default: the node's own)");
  megatron->add_option("--nvlink-domain-nodes", megatron_args.nvlink_domain_nodes,
                       "Nodes the job takes of each NVLink domain, as cluster.nvlink_domain_nodes (e.g. 16 trays of "
                       "a GB200 NVL72 rack; default: the node's whole domain)")
      ->check(whole_number(1, 1024));
  megatron->add_option("--script", megatron_args.script,
                       "A launch script: the arguments it passes to pretrain_*.py (its variables and arrays expanded); "
                       "arguments after -- are added to them");
  megatron->add_option("args", megatron_args.args, "Megatron-LM's arguments, after --");
  megatron->footer(
      "Data parallelism takes the GPUs tp x cp x pp leave. Flags with no bearing on a step's cost are listed as\n"
      "ignored on stderr, flags it does not model as not modelled.\n"
      "Exit status: 0 success; 2 arguments or a script it cannot map, or a config that does not check.\n"
      "Example: trainsim import megatron --cluster dgx-h100 --nodes 16 --script train.sh > run.json");
  CLI::App* torchtitan =
      import->add_subcommand("torchtitan", "Print a TorchTitan job config (its TOML file) as a trainsim config");
  torchtitan->add_option("file", torchtitan_args.file, "The job's TOML file")->required();
  torchtitan->add_option("--cluster", torchtitan_args.node, "Node preset the run is on, e.g. dgx-h100")->required();
  torchtitan->add_option("--nodes", torchtitan_args.nodes, "How many nodes")->required()->check(whole_number(1, 10'000'000));
  torchtitan->add_option("--network", torchtitan_args.network, "Network preset (default: the node's own)");
  torchtitan->add_option("--nvlink-domain-nodes", torchtitan_args.nvlink_domain_nodes,
                         "Nodes the job takes of each NVLink domain, as cluster.nvlink_domain_nodes (e.g. 16 trays "
                         "of a GB200 NVL72 rack; default: the node's whole domain)")
      ->check(whole_number(1, 1024));
  torchtitan->footer(
      "FSDP takes the GPUs tp x pp x cp x replication leave (data_parallel_shard_degree -1). Keys with no bearing on a\n"
      "step's cost are listed as ignored on stderr, keys it does not model as not modelled.\n"
      "Exit status: 0 success; 2 a file it cannot read or map, or a config that does not check.\n"
      "Example: trainsim import torchtitan llama3_8b.toml --cluster dgx-h100 --nodes 8 > run.json");
  return {hf, megatron, torchtitan};
}

int import_hf_command(const ImportHfArgs& args) {
  try {
    const nlohmann::json hf = config::parse_json(config::read_text(args.file, "Hugging Face config"), args.file);
    config::HfModel mapped = config::model_from_hf(hf, args.file);
    for (const std::string& w : mapped.warnings) spdlog::warn("{}", w);
    if (args.seq > 0) {
      mapped.model["seq"] = args.seq;
    } else {
      spdlog::warn("no --seq: the model has no \"seq\" (a Hugging Face config does not give the training sequence "
                   "length); add it to the object, or import again with --seq N");
    }
    // Checked as `trainsim run` reads a model (a shape it would refuse is
    // refused here, not when a config first uses it); without --seq, a
    // placeholder length stands in for the check alone.
    nlohmann::json as_config = {{"model", mapped.model}};
    if (!as_config["model"].contains("seq")) as_config["model"]["seq"] = 4096;
    config::detail::Context context;
    context.file = args.file + " (imported)";
    context.base_dir = ".";
    (void)config::detail::read_model(as_config, context);
    std::cout << mapped.model.dump(2) << '\n';
    return kOk;
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
}

}  // namespace trainsim::cli

namespace trainsim::cli {

namespace {

// An imported config on stdout once it checks as `trainsim run` reads it;
// what was ignored, not modelled or worth a warning on stderr.
int print_import(const nlohmann::json& config, const std::vector<std::string>& warnings,
                 const std::vector<std::string>& ignored, const std::vector<std::string>& not_modelled,
                 const std::string& where) {
  for (const std::string& w : warnings) spdlog::warn("{}", w);
  auto list = [](const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
  };
  if (!ignored.empty()) fmt::print(stderr, "ignored (no bearing on a step's cost): {}\n", list(ignored));
  if (!not_modelled.empty()) fmt::print(stderr, "not modelled: {}\n", list(not_modelled));
  (void)config::load_document(config, where, ".");
  std::cout << config.dump(2) << '\n';
  return kOk;
}

}  // namespace

int import_megatron_command(const ImportMegatronArgs& args) {
  try {
    std::vector<std::string> argv;
    std::string where = "the arguments after --";
    if (!args.script.empty()) {
      argv = config::megatron_args_from_script(config::read_text(args.script, "launch script"), args.script);
      where = args.script;
    }
    argv.insert(argv.end(), args.args.begin(), args.args.end());
    const config::MegatronImport imported = config::config_from_megatron(
        argv, {args.node, args.nodes, args.network, args.nvlink_domain_nodes}, where);
    return print_import(imported.config, imported.warnings, imported.ignored, imported.not_modelled, where);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
}

int import_torchtitan_command(const ImportTorchTitanArgs& args) {
  try {
    const config::TorchTitanImport imported = config::config_from_torchtitan(
        config::read_text(args.file, "TorchTitan job"), args.file,
        {args.node, args.nodes, args.network, args.nvlink_domain_nodes});
    return print_import(imported.config, imported.warnings, imported.ignored, imported.not_modelled, args.file);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
}

}  // namespace trainsim::cli
