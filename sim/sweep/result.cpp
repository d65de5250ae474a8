#include "sweep/result.hpp"

#include <algorithm>
#include <limits>

namespace trainsim::sweep {

std::string status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kOom: return "oom";
    case Status::kFailed: return "failed";
    case Status::kPruned: return "pruned";
    case Status::kNotRun: return "not-run";
  }
  return "?";
}

bool parse_status(const std::string& text, Status& out) {
  for (Status s : {Status::kOk, Status::kOom, Status::kFailed, Status::kPruned, Status::kNotRun}) {
    if (status_name(s) == text) {
      out = s;
      return true;
    }
  }
  return false;
}

bool ranks_before(const Result& a, const Result& b) {
  if (a.status != b.status) return a.status < b.status;
  const bool timed = a.status == Status::kOk || a.status == Status::kOom;
  if (timed && a.iteration_time_s != b.iteration_time_s) return a.iteration_time_s < b.iteration_time_s;
  if (a.status == Status::kPruned && a.bound_s != b.bound_s) return a.bound_s < b.bound_s;
  return a.key < b.key;
}

void rank(std::vector<Result>& results) { std::sort(results.begin(), results.end(), ranks_before); }

std::vector<const Result*> pareto_front(const std::vector<Result>& ranked) {
  // Sorted by (time, memory, key), a plan is on the front when it needs less
  // memory than every plan before it; of plans equal in both, the first by key.
  std::vector<const Result*> ok;
  for (const Result& r : ranked) {
    if (r.status == Status::kOk) ok.push_back(&r);
  }
  std::sort(ok.begin(), ok.end(), [](const Result* a, const Result* b) {
    if (a->iteration_time_s != b->iteration_time_s) return a->iteration_time_s < b->iteration_time_s;
    if (a->peak_memory_bytes != b->peak_memory_bytes) return a->peak_memory_bytes < b->peak_memory_bytes;
    return a->key < b->key;
  });
  std::vector<const Result*> front;
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  for (const Result* r : ok) {
    if (r->peak_memory_bytes < least) {
      front.push_back(r);
      least = r->peak_memory_bytes;
    }
  }
  return front;
}

}  // namespace trainsim::sweep
