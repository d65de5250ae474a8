// libFuzzer target: bytes as a Megatron-LM launch script, through what
// `trainsim import megatron --script` does with it: megatron_args_from_script
// (variables, arrays, continuations) -> config_from_megatron on one DGX H100
// node -> the config read and checked as `run` reads it -> simulated.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "config/megatron_args.hpp"
#include "fuzz_outcomes.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::with_documented_errors([&] {
    const auto args = config::megatron_args_from_script(text, "fuzz.sh");
    const config::MegatronImport m = config::config_from_megatron(args, {"dgx-h100", 1, ""}, "fuzz.sh");
    const config::Scenario sc = config::load_document(m.config, "fuzz.sh", fuzz::base_dir());
    (void)driver::simulate(sc, fuzz::controls());
  });
  return 0;
}
