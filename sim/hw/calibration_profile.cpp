#include "hw/calibration_profile.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainsim::hw {

namespace {

// Where `size` falls on `axis`: the lower index and the weight of the upper
// one, in log2 of size, clamped to the axis.
struct Bracket {
  std::size_t lo = 0;
  double t = 0.0;
};

Bracket bracket(const std::vector<double>& axis, double size) {
  if (axis.empty()) throw std::invalid_argument("empty calibration axis");
  if (axis.size() == 1 || !(size > axis.front())) return {0, 0.0};
  if (size >= axis.back()) return {axis.size() - 2, 1.0};
  const auto hi = static_cast<std::size_t>(std::upper_bound(axis.begin(), axis.end(), size) - axis.begin());
  const std::size_t lo = hi - 1;
  return {lo, std::log2(size / axis[lo]) / std::log2(axis[hi] / axis[lo])};
}

}  // namespace

double interpolate_log(const std::vector<double>& sizes, const std::vector<double>& values, double size) {
  const Bracket b = bracket(sizes, size);
  if (sizes.size() == 1) return values[0];
  return values[b.lo] + b.t * (values[b.lo + 1] - values[b.lo]);
}

double GemmGrid::interpolate(double mm, double nn, double kk) const {
  const Bracket bm = bracket(m, mm), bn = bracket(n, nn), bk = bracket(k, kk);
  // An axis of one point contributes that point alone.
  const std::size_t sm = m.size() > 1 ? 1 : 0, sn = n.size() > 1 ? 1 : 0, sk = k.size() > 1 ? 1 : 0;
  double sum = 0.0;
  for (std::size_t a = 0; a <= sm; ++a) {
    const double wm = a ? bm.t : 1.0 - bm.t;
    for (std::size_t b = 0; b <= sn; ++b) {
      const double wn = b ? bn.t : 1.0 - bn.t;
      for (std::size_t c = 0; c <= sk; ++c) {
        const double wk = c ? bk.t : 1.0 - bk.t;
        const double w = wm * wn * wk;
        if (w != 0.0) sum += w * at(bm.lo + a, bn.lo + b, bk.lo + c);
      }
    }
  }
  return sum;
}

double CollectiveCurve::seconds(double bytes) const {
  const CollectivePoint& first = points.front();
  const CollectivePoint& last = points.back();
  if (!(bytes > first.bytes)) return first.time_us.median * 1e-6;
  if (bytes >= last.bytes) {
    // The largest size runs at the ring's full rate; more bytes take longer at that rate.
    const double rate = last.bytes / (last.time_us.median * 1e-6);
    return last.time_us.median * 1e-6 + (bytes - last.bytes) / rate;
  }
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (bytes <= points[i].bytes) {
      const CollectivePoint& a = points[i - 1];
      const CollectivePoint& b = points[i];
      const double t = std::log2(bytes / a.bytes) / std::log2(b.bytes / a.bytes);
      return std::exp2(std::log2(a.time_us.median) + t * (std::log2(b.time_us.median) - std::log2(a.time_us.median))) *
             1e-6;
    }
  }
  return last.time_us.median * 1e-6;
}

const CollectiveCurve* CalibrationProfile::collective(CollectiveKind kind) const {
  for (const CollectiveCurve& c : nccl) {
    if (c.kind == kind) return &c;
  }
  return nullptr;
}

double CalibrationProfile::nccl_bus_gb_per_s() const {
  const CollectiveCurve* c = collective(CollectiveKind::kAllReduce);
  return c == nullptr ? 0.0 : c->points.back().bus_gb_per_s.median;
}

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kSendRecv: return "send_recv";
  }
  return "collective";
}

double calibrated_sendrecv_gb_per_s(const CalibrationProfile& p, const NodeSpec& preset) {
  const double link = p.p2p_skipped.empty() ? p.p2p.back().rate.median : preset.nvlink_gb_per_s;
  const double rate =
      p.nccl_skipped.empty() && !p.nccl_send_recv.empty() ? p.nccl_send_recv.back().rate.median : preset.nvlink_sendrecv_gb_per_s;
  return rate > 0.0 ? std::min(rate, link) : 0.0;
}

}  // namespace trainsim::hw
