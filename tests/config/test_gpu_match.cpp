#include <doctest/doctest.h>

#include "config/gpu_match.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_gpu_match_test {

using trainsim::config::gpu_preset_for;
using trainsim::config::same_gpu;

TEST_CASE("a device name is a GPU when the names agree or the GPU's model is one of its words") {
  CHECK(same_gpu("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"));  // "NVIDIA " + the name
  CHECK(same_gpu("nvidia a100-sxm4-80gb", "A100-SXM4-80GB"));  // case aside
  CHECK(same_gpu("NVIDIA H200", "H200-SXM-141GB"));            // model "h200" (first word with a digit)
  CHECK(same_gpu("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"));
  CHECK(same_gpu("NVIDIA A100-PCIE-40GB", "A100-SXM4-80GB"));  // the chip, not the board or the memory
  CHECK_FALSE(same_gpu("NVIDIA A100-SXM4-80GB", "H200-SXM-141GB"));
  CHECK_FALSE(same_gpu("NVIDIA H100 80GB HBM3", "H200-SXM-141GB"));
  CHECK_FALSE(same_gpu("NVIDIA GA100", "A100-SXM4-80GB"));  // a word, not a part of one
  // A name with no model (a config's inline "custom GPU") matches only itself.
  CHECK_FALSE(same_gpu("NVIDIA A100-SXM4-80GB", "custom GPU"));
  CHECK(same_gpu("custom GPU", "custom GPU"));
}

TEST_CASE("the GPU preset a device name names, if exactly one") {
  CHECK(gpu_preset_for("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB");
  CHECK(gpu_preset_for("NVIDIA H200") == "H200-SXM-141GB");
  // Two H100 presets: the one sharing "80gb" with the device name.
  CHECK(gpu_preset_for("NVIDIA H100 80GB HBM3") == "H100-SXM5-80GB");
  CHECK(gpu_preset_for("NVIDIA H100 96GB HBM2e") == "H100-HBM2e-96GB-500W");
  CHECK(gpu_preset_for("NVIDIA H100").empty());  // either: a tie
  CHECK(gpu_preset_for("NVIDIA GeForce RTX 4090").empty());
}

}  // namespace config_gpu_match_test
