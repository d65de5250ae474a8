#include <doctest/doctest.h>

#include "sweep/plot.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_plot_test {

using namespace trainsim;

TEST_CASE("the heat map: the best time per (tp, pp), OOM cells marked") {
  auto plan = [](int tp, int pp, sweep::Status status, double time_s) {
    sweep::Result r;
    r.plan.tp = tp;
    r.plan.pp = pp;
    r.status = status;
    r.iteration_time_s = time_s;
    r.key = std::to_string(tp) + "/" + std::to_string(pp) + "/" + std::to_string(time_s);
    return r;
  };
  sweep::Report rep;
  rep.sweep = "s<1>.json";
  rep.results = {plan(1, 1, sweep::Status::kOom, 0.5), plan(2, 1, sweep::Status::kOk, 2.0),
                 plan(2, 1, sweep::Status::kOk, 1.0), plan(1, 2, sweep::Status::kOk, 3.0),
                 plan(1, 2, sweep::Status::kOom, 0.1)};
  const std::string svg = sweep::heat_map_svg(rep);
  CHECK(svg.rfind("<svg xmlns", 0) == 0);
  CHECK(svg.find("s&lt;1&gt;.json") != std::string::npos);  // escaped
  CHECK(svg.find(">1.000</text>") != std::string::npos);    // best of (tp 2, pp 1)
  CHECK(svg.find(">2.000</text>") == std::string::npos);
  CHECK(svg.find(">3.000</text>") != std::string::npos);    // (tp 1, pp 2): OOM plans beside do not count
  CHECK(svg.find(">OOM</text>") != std::string::npos);      // (tp 1, pp 1): only an OOM plan
  // Fastest green (#50c850), slowest red (#ff3250).
  CHECK(svg.find("fill=\"#50c850\"") != std::string::npos);
  CHECK(svg.find("fill=\"#ff3250\"") != std::string::npos);
  // The empty cell (tp 2, pp 2) is left grey, unlabelled.
  CHECK(svg.find("fill=\"#f4f4f4\"") != std::string::npos);
}

}  // namespace sweep_plot_test
