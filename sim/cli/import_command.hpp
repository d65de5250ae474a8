// `trainsim import hf CONFIG.json [--seq N]`: a Hugging Face model config as a
// trainsim model object on stdout (config/hf_config.hpp), to paste into a
// config or save as a model file; the fields it cannot honour are named on
// stderr.
// `trainsim import megatron --cluster NODE --nodes N [--script FILE] [-- ARGS]`:
// Megatron-LM's arguments as a trainsim config (config/megatron_args.hpp),
// checked as `trainsim run` would read it; the flags it ignores and those it
// does not model are named on stderr.
// `trainsim import torchtitan JOB.toml --cluster NODE --nodes N`: a TorchTitan
// job config as a trainsim config (config/torchtitan_toml.hpp), the same way.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ImportHfArgs {
  std::string file;
  int seq = 0;  // 0: leave model.seq out
};

struct ImportMegatronArgs {
  std::string node;
  int nodes = 0;
  std::string network;
  int nvlink_domain_nodes = 0;
  std::string script;             // a launch script to read the arguments from
  std::vector<std::string> args;  // what follows `--`
};

struct ImportTorchTitanArgs {
  std::string file;  // the job's TOML
  std::string node;
  int nodes = 0;
  std::string network;
  int nvlink_domain_nodes = 0;
};

struct ImportCommands {
  CLI::App* hf = nullptr;
  CLI::App* megatron = nullptr;
  CLI::App* torchtitan = nullptr;
};

// Adds `import` and its subcommands.
ImportCommands add_import_command(CLI::App& app, ImportHfArgs& hf, ImportMegatronArgs& megatron,
                                  ImportTorchTitanArgs& torchtitan);
int import_hf_command(const ImportHfArgs& args);
int import_megatron_command(const ImportMegatronArgs& args);
int import_torchtitan_command(const ImportTorchTitanArgs& args);

}  // namespace trainsim::cli
