// What makes two sweep files the same sweep: their content, not their path.
// sweep-merge joins shards only when their fingerprints agree, so shards run
// from "s.json", "./s.json" or "/abs/s.json" merge, and shards of an edited
// file (another global batch, another axis) do not.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::sweep {

// The sweep document with what it refers to written out: the model and each
// cluster's node, GPU and network as objects (a preset name and the same
// values inline are alike), a calibration profile as its JSON, and the free
// text `description` left out (it changes no plan).
nlohmann::json canonical_sweep(const nlohmann::json& doc, const std::string& file, const std::string& base_dir);

// 64-bit FNV-1a of the canonical document's compact JSON (keys sorted), as 16
// hexadecimal digits: the same on every machine and every run.
std::string fingerprint(const nlohmann::json& canonical);

}  // namespace trainsim::sweep
