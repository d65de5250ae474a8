#include <doctest/doctest.h>

#include "config/error.hpp"
#include "sweep/merge.hpp"
#include "sweep/report.hpp"
#include "sweep/runner.hpp"
#include "sweep_fixture.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_merge_test {

using namespace trainsim;
using sweep::testing::small_spec;

namespace {

sweep::Report report_of(const sweep::Spec& spec, const sweep::Space& space, std::vector<sweep::Result> results,
                        std::optional<std::string> shard) {
  sweep::Report r;
  r.sweep = "small.json";
  r.sweep_hash = spec.fingerprint;
  r.shard = std::move(shard);
  r.combinations = space.combinations;
  r.valid_plans = static_cast<long long>(space.plans.size());
  r.invalid = space.invalid;
  r.results = std::move(results);
  return r;
}

}  // namespace

TEST_CASE("shards merged rank as one run does") {
  const sweep::Spec s = small_spec(R"({"microbatch_size": [1, 2, 4], "zero_stage": [0, 1]})");
  const sweep::Space space = sweep::enumerate(s);
  const sweep::Report whole = report_of(s, space, sweep::run(s, space.plans, {}).results, std::nullopt);
  // Three shards: plans whose index is K-1 modulo 3.
  std::vector<sweep::Report> shards;
  for (int k = 1; k <= 3; ++k) {
    std::vector<sweep::Candidate> slice;
    for (const auto& c : space.plans) {
      if (static_cast<int>(c.index % 3) == k - 1) slice.push_back(c);
    }
    shards.push_back(report_of(s, space, sweep::run(s, slice, {}).results, std::to_string(k) + "/3"));
  }
  const sweep::Report merged = sweep::merge({shards[2], shards[0], shards[1]}, {"c.json", "a.json", "b.json"});
  CHECK(sweep::to_json(merged).dump() == sweep::to_json(whole).dump());

  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], shards[2]}, {"a.json", "c.json"}), "sweep-merge: shard 2/3 missing",
                       config::ConfigError);
  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], shards[0]}, {"a.json", "a2.json"}),
                       "a2.json: shard: shard 1/3 is also in a.json", config::ConfigError);
  // The same sweep file given by another path: the same content, merged.
  sweep::Report moved = shards[1];
  moved.sweep = "./small.json";
  CHECK(sweep::to_json(sweep::merge({shards[0], moved, shards[2]}, {"a.json", "b.json", "c.json"})).dump() ==
        sweep::to_json(whole).dump());
  // Another content (as a global batch of 128 would give) under the same path: refused.
  sweep::Report other = shards[1];
  other.sweep_hash = "0123456789abcdef";
  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], other}, {"a.json", "b.json"}),
                       ("b.json: sweep_hash: 0123456789abcdef (sweep file \"small.json\") differs from a.json's " +
                        s.fingerprint +
                        " (sweep file \"small.json\"): the shards come from sweep files whose model, cluster, "
                        "global_batch, options or axes differ")
                           .c_str(),
                       config::ConfigError);
  // A shard written without a sweep_hash (by an earlier version) cannot be told apart: refused.
  sweep::Report earlier = shards[1];
  earlier.sweep_hash.clear();
  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], earlier}, {"a.json", "b.json"}),
                       "b.json: sweep_hash: is missing (expected the --json of `trainsim sweep --shard` by this "
                       "version; run the shard again)",
                       config::ConfigError);
}

TEST_CASE("shard K/N parsing") {
  int k = 0, n = 0;
  CHECK(sweep::parse_shard("2/8", k, n));
  CHECK(k == 2);
  CHECK(n == 8);
  CHECK_FALSE(sweep::parse_shard("0/8", k, n));
  CHECK_FALSE(sweep::parse_shard("9/8", k, n));
  CHECK_FALSE(sweep::parse_shard("2", k, n));
  CHECK_FALSE(sweep::parse_shard("2/8x", k, n));
}

}  // namespace sweep_merge_test
