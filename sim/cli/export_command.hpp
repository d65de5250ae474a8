// `trainsim schedules export NAME --pp P --microbatches M [--vp V]`: a schedule
// plugin's compute-only program as CSV (torch.distributed.pipelining's form),
// which `parallel.schedule: "csv:PATH"` reads back.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ExportArgs {
  std::string name;
  int pp = 1;
  int vp = 1;
  int microbatches = 1;
};

// Adds `export` under the `schedules` command; returns it.
CLI::App* add_export_command(CLI::App& schedules, ExportArgs& args);
int export_command(const ExportArgs& args);

}  // namespace trainsim::cli
