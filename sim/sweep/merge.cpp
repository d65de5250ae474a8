#include "sweep/merge.hpp"

#include <charconv>
#include <fmt/format.h>
#include <map>

#include "config/error.hpp"

namespace trainsim::sweep {

bool parse_shard(const std::string& text, int& k, int& n) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return false;
  const char* b = text.data();
  const auto r1 = std::from_chars(b, b + slash, k);
  const auto r2 = std::from_chars(b + slash + 1, b + text.size(), n);
  return r1.ec == std::errc() && r1.ptr == b + slash && r2.ec == std::errc() && r2.ptr == b + text.size() && n >= 1 &&
         k >= 1 && k <= n;
}

Report merge(const std::vector<Report>& shards, const std::vector<std::string>& files) {
  auto fail = [&](std::size_t i, const std::string& path, const std::string& what) {
    throw config::ConfigError(fmt::format("{}: {}: {}", files[i], path, what));
  };
  if (shards.empty()) throw config::ConfigError("sweep-merge: no files to merge");
  Report out;
  const Report& first = shards[0];
  out.sweep = first.sweep;
  out.sweep_hash = first.sweep_hash;
  out.combinations = first.combinations;
  out.valid_plans = first.valid_plans;
  out.invalid = first.invalid;
  std::map<int, std::size_t> seen;  // shard K -> file
  int count = 0;
  long long results = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Report& r = shards[i];
    // Shards are one sweep when the sweep files' content is the same, however
    // their paths were spelled.
    if (r.sweep_hash.empty()) {
      fail(i, "sweep_hash", "is missing (expected the --json of `trainsim sweep --shard` by this version; run the shard again)");
    }
    if (r.sweep_hash != first.sweep_hash) {
      fail(i, "sweep_hash",
           fmt::format("{} (sweep file \"{}\") differs from {}'s {} (sweep file \"{}\"): the shards come from sweep "
                       "files whose model, cluster, global_batch, options or axes differ",
                       r.sweep_hash, r.sweep, files[0], first.sweep_hash, first.sweep));
    }
    if (r.combinations != first.combinations || r.valid_plans != first.valid_plans || r.invalid != first.invalid) {
      fail(i, "valid_plans", fmt::format("the plan space differs from {}'s (was the sweep file changed?)", files[0]));
    }
    int k = 1, n = 1;
    if (r.shard && !parse_shard(*r.shard, k, n)) fail(i, "shard", "expected \"K/N\", got \"" + *r.shard + "\"");
    if (i == 0) count = n;
    if (n != count) fail(i, "shard", fmt::format("{} is one of {} shards, but {} is one of {}", *r.shard, n, files[0], count));
    if (auto it = seen.find(k); it != seen.end()) {
      fail(i, "shard", fmt::format("shard {}/{} is also in {}", k, n, files[it->second]));
    }
    seen.emplace(k, i);
    out.pruned += r.pruned;
    out.not_run += r.not_run;
    out.interrupted = out.interrupted || r.interrupted;
    results += static_cast<long long>(r.results.size());
    out.results.insert(out.results.end(), r.results.begin(), r.results.end());
  }
  if (static_cast<int>(seen.size()) != count) {
    std::string missing;
    for (int k = 1; k <= count; ++k) {
      if (!seen.contains(k)) missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", k, count);
    }
    throw config::ConfigError(fmt::format("sweep-merge: shard{} {} missing", missing.find(',') == std::string::npos ? "" : "s", missing));
  }
  if (results != out.valid_plans) {
    throw config::ConfigError(fmt::format("sweep-merge: the shards hold {} results, but the sweep has {} valid plans",
                                          results, out.valid_plans));
  }
  rank(out.results);
  return out;
}

}  // namespace trainsim::sweep
