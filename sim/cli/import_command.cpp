#include "cli/import_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/run_command.hpp"
#include "config/error.hpp"
#include "config/hf_config.hpp"
#include "config/json_text.hpp"

namespace trainsim::cli {

CLI::App* add_import_command(CLI::App& app, ImportHfArgs& args) {
  CLI::App* import = app.add_subcommand("import", "Turn settings written for other tools into trainsim's");
  import->require_subcommand(1);
  import->footer("Example: trainsim import hf config.json --seq 4096 > my-model.json");
  CLI::App* hf = import->add_subcommand(
      "hf", "Print a Hugging Face config.json as a trainsim model object (the value of a config's \"model\")");
  hf->add_option("file", args.file, "The model's config.json")->required();
  hf->add_option("--seq", args.seq,
                 "Training sequence length to add as model.seq (a Hugging Face config does not give it)")
      ->check(CLI::Range(1, 1'000'000'000));
  std::string known;
  for (const std::string& n : config::hf_architectures()) known += (known.empty() ? "" : ", ") + n;
  hf->footer("Maps " + known +
             ".\nA config can also name the file: \"model\": {\"hf\": \"config.json\", \"seq\": 4096}.\n"
             "Exit status: 0 success; 2 a file that cannot be read or mapped; 5 stdout could not be written.\n"
             "Example: trainsim import hf config.json --seq 4096 > my-model.json");
  return hf;
}

int import_hf_command(const ImportHfArgs& args) {
  try {
    const nlohmann::json hf = config::parse_json(config::read_text(args.file, "Hugging Face config"), args.file);
    config::HfModel mapped = config::model_from_hf(hf, args.file);
    for (const std::string& w : mapped.warnings) spdlog::warn("{}", w);
    if (args.seq > 0) mapped.model["seq"] = args.seq;
    std::cout << mapped.model.dump(2) << '\n';
    return kOk;
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
}

}  // namespace trainsim::cli
