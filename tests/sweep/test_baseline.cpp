#include <doctest/doctest.h>

#include "sweep/baseline.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_baseline_test {

using namespace trainsim;

namespace {

sweep::Result plan(const std::string& key, sweep::Status status, double time_s) {
  sweep::Result r;
  r.key = key;
  r.status = status;
  r.iteration_time_s = time_s;
  r.peak_memory_bytes = 2LL << 30;
  return r;
}

sweep::Report sweep_report(std::vector<sweep::Result> results) {
  sweep::Report r;
  r.results = std::move(results);
  sweep::rank(r.results);
  return r;
}

}  // namespace

TEST_CASE("the regression gate") {
  using sweep::Status;
  const sweep::Report base = sweep_report({plan("a", Status::kOk, 1.0), plan("b", Status::kOk, 1.1)});
  double tol = 0;
  REQUIRE(sweep::parse_tolerance("2%", tol));
  CHECK(tol == doctest::Approx(0.02).scale(0));

  // 1.015 s is 1.5% worse than 1.0 s: within 2%.
  sweep::Verdict v = sweep::compare(sweep_report({plan("a", Status::kOk, 1.015)}), base, tol);
  CHECK_FALSE(v.regressed);
  CHECK(v.message == "best iteration time 1.0150 s (a) vs the baseline's 1.0000 s (a): +1.50%, within the tolerance of 2%");
  // 1.03 s is 3% worse; the best plan may change (b is now best).
  v = sweep::compare(sweep_report({plan("a", Status::kOk, 1.04), plan("b", Status::kOk, 1.03)}), base, tol);
  CHECK(v.regressed);
  CHECK(v.message == "best iteration time 1.0300 s (b) vs the baseline's 1.0000 s (a): +3.00%, worse than the tolerance of 2%");
  // Faster is fine, unless the baseline's best no longer runs.
  CHECK_FALSE(sweep::compare(sweep_report({plan("a", Status::kOk, 0.9)}), base, tol).regressed);
  v = sweep::compare(sweep_report({plan("b", Status::kOk, 0.9)}), base, tol);
  CHECK(v.regressed);
  CHECK(v.message == "the baseline's best plan (a) is no longer a valid plan of this sweep");
  v = sweep::compare(sweep_report({plan("b", Status::kOk, 0.9), plan("a", Status::kOom, 0.8)}), base, tol);
  CHECK(v.regressed);
  CHECK(v.message == "the baseline's best plan (a) now runs out of memory (peak 2.00 GiB)");
  // Pruned: slower than the top K, not invalid.
  CHECK_FALSE(sweep::compare(sweep_report({plan("b", Status::kOk, 0.9), plan("a", Status::kPruned, 0)}), base, tol).regressed);

  CHECK(sweep::parse_tolerance("0", tol));
  CHECK(tol == 0.0);
  CHECK_FALSE(sweep::parse_tolerance("-1%", tol));
  CHECK_FALSE(sweep::parse_tolerance("two", tol));
  CHECK_FALSE(sweep::parse_tolerance("%", tol));
}

}  // namespace sweep_baseline_test
