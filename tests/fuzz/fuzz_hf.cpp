// libFuzzer target: bytes as a Hugging Face config.json, through what a
// config's "model": {"hf": PATH, "seq": N} does with it: parse_json ->
// model_from_hf -> the mapped model (with a sequence length) in place of the
// default example's -> the scenario read and checked, and simulated.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/hf_config.hpp"
#include "config/load.hpp"
#include "fuzz_outcomes.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  fuzz::quiet_logs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const nlohmann::json example =
      config::parse_json(config::read_text(fuzz::base_dir() + "/gpt-1.7b-8xa100.json", "example"), "example");
  fuzz::with_documented_errors([&] {
    config::HfModel mapped = config::model_from_hf(config::parse_json(text, "fuzz.json"), "fuzz.json");
    mapped.model["seq"] = 1024;
    nlohmann::json doc = example;
    doc["model"] = mapped.model;
    const config::Scenario sc = config::load_document(doc, "fuzz-config.json", fuzz::base_dir());
    (void)driver::simulate(sc, fuzz::controls());
  });
  return 0;
}
