#include <doctest/doctest.h>

#include "sweep/fingerprint.hpp"
#include "sweep/spec.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_fingerprint_test {

using namespace trainsim;
using nlohmann::json;

namespace {

json small() {
  return json::parse(R"({"description": "x", "model": "gpt-1.7b", "cluster": {"node": "dgx-a100", "nodes": 1},
      "global_batch": 64, "axes": {"tp": [1, 2]}})");
}

std::string print(const json& doc, const std::string& file = "small.json", const std::string& base = ".") {
  return sweep::parse_spec(doc, file, base).fingerprint;
}

}  // namespace

TEST_CASE("FNV-1a 64 of the compact JSON, as 16 hex digits") {
  // By hand (offset basis 0xcbf29ce484222325, prime 0x100000001b3): "{}" is
  // two bytes, 0x7b then 0x7d; the value is pinned so that shards written by
  // one build merge with those of another.
  CHECK(sweep::fingerprint(json::object()) == "08f44b07b5901a25");
  CHECK(sweep::fingerprint(json{{"global_batch", 64}}) == "e125301d32ba7399");  // {"global_batch":64}
}

TEST_CASE("a sweep is its content: not its path, its description, nor how a preset is spelled") {
  const std::string base = print(small());
  CHECK(base.size() == 16);
  CHECK(print(small(), "./small.json") == base);
  CHECK(print(small(), "/somewhere/else/small.json") == base);
  json described = small();
  described["description"] = "another text";
  CHECK(print(described) == base);
  // The model preset by name, as a file, and inline: one model.
  json by_file = small();
  by_file["model"] = "models/gpt-1.7b.json";
  CHECK(print(by_file, "s.json", TRAINSIM_SOURCE_DIR) == base);
  json inline_model = small();
  inline_model["model"] = sweep::canonical_sweep(small(), "small.json", ".")["model"];
  CHECK(inline_model["model"].is_object());
  CHECK(print(inline_model) == base);
}

TEST_CASE("another global batch, axis, option or cluster is another sweep") {
  const std::string base = print(small());
  json batch = small();
  batch["global_batch"] = 128;
  CHECK(print(batch) != base);
  json axes = small();
  axes["axes"]["tp"] = json::array({1, 2, 4});
  CHECK(print(axes) != base);
  json options = small();
  options["options"] = {{"cuda_context_mib", 500}};
  CHECK(print(options) != base);
  json nodes = small();
  nodes["cluster"]["nodes"] = 2;
  CHECK(print(nodes) != base);
  // A preset's value changed inline is a change too.
  json gpu = small();
  gpu["cluster"]["node"] = sweep::canonical_sweep(small(), "small.json", ".")["cluster"]["node"];
  CHECK(print(gpu) == base);
  gpu["cluster"]["node"]["gpu"]["memory_gb"] = 40;
  CHECK(print(gpu) != base);
}

}  // namespace sweep_fingerprint_test
