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
  constexpr int kCell = 90, kHeight = 44, kLeft = 70, kTop = 60, kSwatches = 10, kSwatch = 24;
  // The picture is as wide as its widest line: text taken at 0.6 em a
  // character (wider than a sans-serif's average, so that it fits).
  auto text_width = [](const std::string& text, double font_px) {
    return static_cast<int>(std::ceil(0.6 * font_px * static_cast<double>(text.size())));
  };
  const std::string title = report.sweep + ": best iteration time (s) by tp and pp";
  const std::string note = "empty: no valid plan; OOM: every plan ran out of memory; -: none simulated (pruned, failed "
                           "or interrupted)";
  const bool timed = lo <= hi;
  const std::string scale_lo = timed ? fmt::format("{:.3f} s (fastest)", lo) : "";
  const std::string scale_hi = timed ? fmt::format("{:.3f} s (slowest)", hi) : "";
  const int grid_bottom = kTop + kHeight * static_cast<int>(pps.size());
  const int scale_y = grid_bottom + 22;  // the colour scale's swatches, under the grid
  const int note_y = scale_y + (timed ? 44 : 4);
  const int width = std::max({kLeft + kCell * static_cast<int>(tps.size()), kLeft + text_width(title, 14),
                              kLeft + text_width(note, 12),
                              kLeft + kSwatch * kSwatches + 8 + text_width(scale_hi, 12)}) +
                    20;
  const int height = note_y + 14;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height);
  svg += "<defs><pattern id=\"oom\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
         "<rect width=\"8\" height=\"8\" fill=\"#ddd\"/><path d=\"M0,8 L8,0\" stroke=\"#888\"/></pattern></defs>\n";
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n", kLeft, escape(title));
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
  // The colour scale: the cells' colours from the fastest time to the slowest, in seconds.
  if (timed) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">time</text>\n", kLeft - 8, scale_y + 10);
    for (int k = 0; k < kSwatches; ++k) {
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" fill=\"{}\"/>\n", kLeft + k * kSwatch,
                         scale_y, kSwatch, colour(static_cast<double>(k) / (kSwatches - 1)));
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft, scale_y + 28, scale_lo);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft + kSwatch * kSwatches + 8, scale_y + 10, scale_hi);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft, note_y, note);
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::sweep
