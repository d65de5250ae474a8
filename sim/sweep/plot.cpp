#include "sweep/plot.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>

namespace trainsim::sweep {

namespace {

struct Cell {
  double best = std::numeric_limits<double>::infinity();
  bool oom = false;
  bool any = false;
};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Green (0) to yellow to red (1).
std::string colour(double x) {
  x = std::clamp(x, 0.0, 1.0);
  const int r = x < 0.5 ? static_cast<int>(std::lround(80 + 2 * x * 175)) : 255;
  const int g = x < 0.5 ? 200 : static_cast<int>(std::lround(200 - (x - 0.5) * 2 * 150));
  return fmt::format("#{:02x}{:02x}50", r, g);
}

}  // namespace

std::string heat_map_svg(const Report& report) {
  std::set<int> tps, pps;
  std::map<std::pair<int, int>, Cell> cells;  // (pp, tp)
  for (const Result& r : report.results) {
    tps.insert(r.plan.tp);
    pps.insert(r.plan.pp);
    Cell& c = cells[{r.plan.pp, r.plan.tp}];
    c.any = true;
    if (r.status == Status::kOk) c.best = std::min(c.best, r.iteration_time_s);
    if (r.status == Status::kOom) c.oom = true;
  }
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& [at, c] : cells) {
    if (c.best < std::numeric_limits<double>::infinity()) {
      lo = std::min(lo, c.best);
      hi = std::max(hi, c.best);
    }
  }
  constexpr int kCell = 90, kHeight = 44, kLeft = 70, kTop = 60;
  const int width = kLeft + kCell * static_cast<int>(tps.size()) + 20;
  const int height = kTop + kHeight * static_cast<int>(pps.size()) + 50;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n",
      width, height);
  svg += "<defs><pattern id=\"oom\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
         "<rect width=\"8\" height=\"8\" fill=\"#ddd\"/><path d=\"M0,8 L8,0\" stroke=\"#888\"/></pattern></defs>\n";
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\">{}: best iteration time (s) by tp and pp</text>\n", kLeft,
                     escape(report.sweep));
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">tp</text>\n",
                     kLeft + kCell * static_cast<int>(tps.size()) / 2, kTop - 24);
  svg += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\">pp</text>\n",
                     kTop + kHeight * static_cast<int>(pps.size()) / 2);
  int col = 0;
  for (int tp : tps) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + col * kCell + kCell / 2,
                       kTop - 6, tp);
    ++col;
  }
  int row = 0;
  for (int pp : pps) {
    const int y = kTop + row * kHeight;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 8, y + kHeight / 2 + 4, pp);
    col = 0;
    for (int tp : tps) {
      const int x = kLeft + col * kCell;
      const auto it = cells.find({pp, tp});
      std::string fill = "#f4f4f4", label;
      if (it != cells.end()) {
        const Cell& c = it->second;
        if (c.best < std::numeric_limits<double>::infinity()) {
          fill = colour(hi > lo ? (c.best - lo) / (hi - lo) : 0.0);
          label = fmt::format("{:.3f}", c.best);
        } else if (c.oom) {
          fill = "url(#oom)";
          label = "OOM";
        } else {
          label = "-";
        }
      }
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\"/>\n", x, y, kCell,
                         kHeight, fill);
      if (!label.empty()) {
        svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x + kCell / 2,
                           y + kHeight / 2 + 4, label);
      }
      ++col;
    }
    ++row;
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\">empty: no valid plan; OOM: every plan ran out of memory; -: none simulated "
      "(pruned, failed or interrupted)</text>\n",
      kLeft, height - 16);
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::sweep
