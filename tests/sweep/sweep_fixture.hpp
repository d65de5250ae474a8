// A small sweep for the tests: GPT 1.7B (24 layers, 24 heads, ffn 9216) on one
// DGX A100 node (8 GPUs) at global batch 64, with axes given as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sweep/spec.hpp"

namespace trainsim::sweep::testing {

inline Spec small_spec(const std::string& axes_json, const std::string& extra = "") {
  const nlohmann::json doc = nlohmann::json::parse(R"({"model": "gpt-1.7b", "cluster": {"node": "dgx-a100", "nodes": 1},
      "global_batch": 64)" + extra + R"(, "axes": )" + axes_json + "}");
  return parse_spec(doc, "small.json", ".");
}

}  // namespace trainsim::sweep::testing
