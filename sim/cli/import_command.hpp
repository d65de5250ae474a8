// `trainsim import hf CONFIG.json [--seq N]`: a Hugging Face model config as a
// trainsim model object on stdout (config/hf_config.hpp), to paste into a
// config or save as a model file; the fields it cannot honour are named on
// stderr.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ImportHfArgs {
  std::string file;
  int seq = 0;  // 0: leave model.seq out
};

// Adds `import` and its `hf` subcommand; returns `hf`.
CLI::App* add_import_command(CLI::App& app, ImportHfArgs& args);
int import_hf_command(const ImportHfArgs& args);

}  // namespace trainsim::cli
