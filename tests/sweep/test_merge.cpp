#include <doctest/doctest.h>

#include "config/error.hpp"
#include "sweep/merge.hpp"
#include "sweep/report.hpp"
#include "sweep/runner.hpp"
#include "sweep_fixture.hpp"

using namespace trainsim;
using sweep::testing::small_spec;

namespace {

sweep::Report report_of(const sweep::Space& space, std::vector<sweep::Result> results, std::optional<std::string> shard) {
  sweep::Report r;
  r.sweep = "small.json";
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
  const sweep::Report whole = report_of(space, sweep::run(s, space.plans, {}).results, std::nullopt);
  // Three shards: plans whose index is K-1 modulo 3.
  std::vector<sweep::Report> shards;
  for (int k = 1; k <= 3; ++k) {
    std::vector<sweep::Candidate> slice;
    for (const auto& c : space.plans) {
      if (static_cast<int>(c.index % 3) == k - 1) slice.push_back(c);
    }
    shards.push_back(report_of(space, sweep::run(s, slice, {}).results, std::to_string(k) + "/3"));
  }
  const sweep::Report merged = sweep::merge({shards[2], shards[0], shards[1]}, {"c.json", "a.json", "b.json"});
  CHECK(sweep::to_json(merged).dump() == sweep::to_json(whole).dump());

  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], shards[2]}, {"a.json", "c.json"}), "sweep-merge: shard 2/3 missing",
                       config::ConfigError);
  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], shards[0]}, {"a.json", "a2.json"}),
                       "a2.json: shard: shard 1/3 is also in a.json", config::ConfigError);
  sweep::Report other = shards[1];
  other.sweep = "other.json";
  CHECK_THROWS_WITH_AS(sweep::merge({shards[0], other}, {"a.json", "b.json"}),
                       "b.json: sweep: \"other.json\", but a.json is of \"small.json\"", config::ConfigError);
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
