// libFuzzer target: bytes as a TorchTitan job's TOML, through what
// `trainsim import torchtitan` does with it: config_from_torchtitan (the TOML
// parsed, the job mapped) on one DGX H100 node -> the config read and checked
// as `run` reads it -> simulated.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "config/torchtitan_toml.hpp"
#include "fuzz_outcomes.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::with_documented_errors([&] {
    const config::TorchTitanImport t = config::config_from_torchtitan(text, "fuzz.toml", {"dgx-h100", 1, ""});
    const config::Scenario sc = config::load_document(t.config, "fuzz.toml", fuzz::base_dir());
    (void)driver::simulate(sc, fuzz::controls());
  });
  return 0;
}
