// Joins the JSON outputs of a sharded sweep (--shard K/N, one per shard) into
// the report a single run would have written: same results, same ranking.
#pragma once

#include <string>
#include <vector>

#include "sweep/report.hpp"

namespace trainsim::sweep {

// `files` names each report in messages. Throws config::ConfigError when the
// reports come from different sweeps (their sweep_hash, the sweep file's
// content, differs; the path it was given by may), or shards are missing or
// repeated.
Report merge(const std::vector<Report>& shards, const std::vector<std::string>& files);

// "K/N" with 1 <= K <= N; false otherwise.
bool parse_shard(const std::string& text, int& k, int& n);

}  // namespace trainsim::sweep
