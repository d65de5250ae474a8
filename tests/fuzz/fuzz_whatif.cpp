// libFuzzer target: bytes as a config file, through what `trainsim run` does
// with it: parse_json -> load_document -> simulate -> summarize -> the text
// and JSON summaries, one layer op by op (--ops) and the Chrome trace.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "fuzz_outcomes.hpp"
#include "report/chrome_trace.hpp"
#include "report/layer_ops.hpp"
#include "report/summary.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::with_documented_errors([&] {
    const config::Scenario sc =
        config::load_document(config::parse_json(text, "fuzz.json"), "fuzz.json", fuzz::base_dir());
    driver::Controls controls = fuzz::controls();
    controls.layer_ops = true;
    const driver::WhatIf w = driver::simulate(sc, controls);
    const report::Summary s = driver::summarize(sc, w, "fuzz.json");
    (void)report::to_text(s);
    (void)report::to_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)report::layer_ops_text(*w.costs);
    (void)report::layer_ops_json(*w.costs).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)report::chrome_trace(*w.sim, sc.cluster);
  });
  return 0;
}
