#include "workload/plan.hpp"

#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::workload {

schedule::Placement Plan::placement() const {
  if (schedule::is_csv_name(schedule)) return csv_placement;
  const schedule::Schedule* s = schedule::find_schedule(schedule);
  return s == nullptr ? schedule::Placement::kLooped : s->placement();
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    case Recompute::kSelectiveOp: return "selective-op";
  }
  return "none";
}

std::optional<Recompute> recompute_named(const std::string& name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull, Recompute::kSelectiveOp}) {
    if (name == recompute_name(r)) return r;
  }
  return std::nullopt;
}

double grad_value_bytes(GradDtype d) { return d == GradDtype::kFp32 ? 4.0 : 2.0; }

double moment_value_bytes(MomentDtype d) {
  switch (d) {
    case MomentDtype::kFp32: return 4.0;
    case MomentDtype::kBf16:
    case MomentDtype::kFp16: return 2.0;
    case MomentDtype::kFp8: return 1.0;
  }
  return 4.0;
}

const char* moment_dtype_name(MomentDtype d) {
  switch (d) {
    case MomentDtype::kFp32: return "fp32";
    case MomentDtype::kBf16: return "bf16";
    case MomentDtype::kFp16: return "fp16";
    case MomentDtype::kFp8: return "fp8";
  }
  return "fp32";
}

double grad_accumulation_bytes_per_param(GradAccumulation a, GradDtype d) {
  const double g = grad_value_bytes(d);
  switch (a) {
    case GradAccumulation::kFused: return 0.0;
    case GradAccumulation::kAdd: return 2.0 + g + g;
    case GradAccumulation::kCastAdd: return g == 2.0 ? 2.0 + g + g : (2.0 + g) + (g + g + g);
  }
  return 0.0;
}

const char* cp_algorithm_name(CpAlgorithm a) {
  switch (a) {
    case CpAlgorithm::kRing: return "ring";
    case CpAlgorithm::kAllGather: return "all-gather";
    case CpAlgorithm::kAllToAll: return "all-to-all";
  }
  return "?";
}

std::optional<CpAlgorithm> cp_algorithm_named(const std::string& name) {
  for (CpAlgorithm a : {CpAlgorithm::kRing, CpAlgorithm::kAllGather, CpAlgorithm::kAllToAll}) {
    if (name == cp_algorithm_name(a)) return a;
  }
  return std::nullopt;
}

}  // namespace trainsim::workload
