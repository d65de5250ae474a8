#include <doctest/doctest.h>

#include "sweep/result.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_result_test {

using namespace trainsim;

namespace {
sweep::Result result(const std::string& key, sweep::Status status, double time_s, std::int64_t memory) {
  sweep::Result r;
  r.key = key;
  r.status = status;
  r.iteration_time_s = time_s;
  r.peak_memory_bytes = memory;
  return r;
}
}  // namespace

TEST_CASE("the ranking: fitting plans by time, ties by key, then OOM, failed, pruned") {
  std::vector<sweep::Result> rs = {result("d", sweep::Status::kOom, 1.0, 9), result("c", sweep::Status::kOk, 2.0, 1),
                                   result("b", sweep::Status::kOk, 2.0, 1), result("a", sweep::Status::kOk, 3.0, 1),
                                   result("e", sweep::Status::kPruned, 0.0, 0),
                                   result("f", sweep::Status::kFailed, 0.0, 0)};
  sweep::rank(rs);
  std::string order;
  for (const auto& r : rs) order += r.key;
  CHECK(order == "bcadfe");
}

TEST_CASE("the Pareto front in (iteration time, peak memory)") {
  // (time, memory): a (1, 10) b (2, 5) c (2, 4) d (3, 4) e (4, 1) f (0.5, 1, OOM).
  // b is beaten by c (same time, less memory); d by c; f does not fit.
  std::vector<sweep::Result> rs = {result("a", sweep::Status::kOk, 1, 10), result("b", sweep::Status::kOk, 2, 5),
                                   result("c", sweep::Status::kOk, 2, 4),  result("d", sweep::Status::kOk, 3, 4),
                                   result("e", sweep::Status::kOk, 4, 1),  result("f", sweep::Status::kOom, 0.5, 1)};
  sweep::rank(rs);
  std::string front;
  for (const auto* r : sweep::pareto_front(rs)) front += r->key;
  CHECK(front == "ace");
}

}  // namespace sweep_result_test
