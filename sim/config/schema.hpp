// The keys a config may contain, section by section. The loader rejects any
// other key, suggesting the closest known one; `--set` checks its paths here.
// docs/config-reference.md documents each key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::config {

// Sections by JSON path ("" is the top level). Keys whose value is itself a
// section ("cluster", "cluster.node", "model", ...) may instead hold a preset
// name, or a path to a .json file.
const std::vector<std::string>* section_keys(std::string_view section);
bool is_section(std::string_view path);

// The parallel keys that mean something only under ZeRO stage 3 (ZeRO-3 /
// FSDP unit by unit): a config refuses them under another stage; a sweep
// reads them under stage 3 and checks each plan's own.
const std::vector<std::string>& zero3_plan_keys();

// The known name closest to `key`, if any is close enough
// (core::nearest_name). Every "did you mean" of the config uses it.
std::optional<std::string> closest(std::string_view key, const std::vector<std::string>& candidates);

// `unknown key (did you mean "x"?); known keys here: a, b, c`: the message
// for a key that is not among `known`, the same in every file trainsim reads.
std::string unknown_key_message(std::string_view key, const std::vector<std::string>& known);

}  // namespace trainsim::config
