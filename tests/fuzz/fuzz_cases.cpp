// libFuzzer target: bytes as a validation case file, through what `trainsim
// validate` does with it: parse_json -> parse_cases -> the first case's
// config loaded and simulated -> compared with its measurements.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "fuzz_outcomes.hpp"
#include "validate/output.hpp"
#include "validate/validate.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::with_documented_errors([&] {
    const validate::CaseFile file =
        validate::parse_cases(config::parse_json(text, "fuzz.json"), "fuzz.json", fuzz::base_dir());
    if (file.cases.empty()) return;
    // The first case, as validate::predict loads it, simulated under the fuzz work cap.
    const validate::Case& c = file.cases.front();
    const config::Scenario sc =
        c.config_file.empty() ? config::load_document(c.config, "fuzz.json", file.base_dir, c.set)
                              : config::load_file(c.config_file, c.set);
    const driver::WhatIf w = driver::simulate(sc, fuzz::controls());
    const report::Summary s = driver::summarize(sc, w, "fuzz.json");
    validate::Prediction p;
    p.values = validate::metric_values(s);
    p.gpus = s.info.gpus;
    p.oom = s.oom;
    const validate::Result result = validate::compare(file, {0}, {p});
    (void)validate::to_text(result, true);
    (void)validate::to_json(result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  });
  return 0;
}
