#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <tuple>
#include <vector>

#include "schedule/action.hpp"

namespace trainsim::report {

namespace {

// Layout, in SVG user units (pixels).
constexpr double kWidth = 1200.0;
constexpr double kLeft = 96.0;   // rank labels
constexpr double kRight = 24.0;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kTop = 58.0;     // title and subtitle above
constexpr double kBoxHeight = 26.0;
constexpr double kCommGap = 2.0;
constexpr double kCommHeight = 10.0;  // sends in its upper half, collectives in its lower
constexpr double kRowGap = 10.0;

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? '?' : c;
    }
  }
  return out;
}

// Two decimals are finer than a pixel and keep the output compact.
std::string num(double v) { return fmt::format("{:.2f}", v); }

struct Rgb {
  int r, g, b;
};

// Mixes `c` toward white by `amount` (0: unchanged, 1: white).
std::string lighter(Rgb c, double amount) {
  auto mix = [amount](int v) { return static_cast<int>(std::lround(v + (255 - v) * amount)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(c.r), mix(c.g), mix(c.b));
}

// One colour per kind of box, and the legend's words for it.
struct Kind {
  const char* cls;
  Rgb rgb;
  const char* label;
};
constexpr Kind kForward{"F", {111, 159, 224}, "F forward"};
constexpr Kind kBackward{"B", {242, 166, 90}, "B backward"};
constexpr Kind kInputGrad{"I", {247, 206, 107}, "I input gradient"};
constexpr Kind kWeightGrad{"W", {124, 196, 127}, "W weight gradient"};
constexpr Kind kOptimizer{"opt", {176, 176, 176}, "optimizer step"};
constexpr Kind kSend{"send", {142, 111, 191}, "send (activation or gradient)"};
constexpr Kind kCollective{"coll", {217, 96, 90}, "data-parallel collective"};

const Kind& kind_of(schedule::Op op) {
  switch (op) {
    case schedule::Op::kForward: return kForward;
    case schedule::Op::kInputGrad: return kInputGrad;
    case schedule::Op::kWeightGrad: return kWeightGrad;
    default: return kBackward;
  }
}

// Tick spacing of 1, 2 or 5 times a power of ten, for about eight ticks.
double tick_step(double span) {
  if (!(span > 0.0)) return 1.0;
  const double raw = span / 8.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10.0 * magnitude;
}

// A legend entry: a coloured square and its label, or a grey note.
struct LegendItem {
  double x = 0.0, y = 0.0;  // where its square (or its note's text) starts; y its text's baseline
  const Kind* swatch = nullptr;
  std::string text;
};

// The legend from y on: the kinds side by side, then the note on what blank
// and numbers mean, each moved to the next line where it would pass the
// right edge; the stages' note on lines of its own, broken between words.
std::vector<LegendItem> lay_out_legend(const std::vector<const Kind*>& kinds, const std::string& stages_note, double y) {
  constexpr double kCharWidth = 6.5, kLine = 16.0, kRightEdge = kWidth - 12.0;
  auto width_of = [&](const std::string& t) { return kCharWidth * static_cast<double>(t.size()); };
  std::vector<LegendItem> out;
  double x = kLeft;
  auto place = [&](double width) {
    if (x > kLeft && x + width > kRightEdge) {
      x = kLeft;
      y += kLine;
    }
  };
  for (const Kind* k : kinds) {
    const double width = 16.0 + width_of(k->label);
    place(width);
    out.push_back({x, y, k, k->label});
    x += width + 18.0;
  }
  const std::string blank = "blank: idle; number: micro-batch";
  place(width_of(blank));
  out.push_back({x, y, nullptr, blank});
  // Broken before the word that would pass the edge.
  std::string line;
  std::size_t start = 0;
  while (start < stages_note.size()) {
    std::size_t end = stages_note.find(' ', start);
    if (end == std::string::npos) end = stages_note.size();
    const std::string word = stages_note.substr(start, end - start);
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && kLeft + width_of(longer) > kRightEdge) {
      y += kLine;
      out.push_back({kLeft, y, nullptr, line});
      line = word;
    } else {
      line = longer;
    }
    start = end + 1;
  }
  if (!line.empty()) out.push_back({kLeft, y + kLine, nullptr, line});
  return out;
}

struct Box {
  core::Time start, end;
  const Kind* kind;
  int stage = 0, microbatch = -1;  // microbatch -1: no number inside (optimizer)
  std::string name;                // tooltip
};

}  // namespace

std::string schedule_svg(const lower::Simulation& sim, const Summary& summary) {
  const RunInfo& info = summary.info;
  const int ranks = sim.pipeline_ranks;  // simulated GPUs 0 .. ranks - 1 are the first pipeline
  const std::int64_t span_ps = std::max<std::int64_t>(sim.timeline.makespan.ps(), 1);
  const double span_ms = static_cast<double>(span_ps) * 1e-9;
  auto x_of = [&](core::Time t) { return kLeft + kPlotWidth * static_cast<double>(t.ps()) / static_cast<double>(span_ps); };
  auto ms = [](core::Time t) { return fmt::format("{:.3f}", static_cast<double>(t.ps()) * 1e-9); };

  // Compute boxes per rank: an action cut into gradient-bucket parts is one
  // box from its first part's start to its last part's end.
  using Key = std::tuple<int, int, int>;  // op, stage, micro-batch
  std::vector<std::map<Key, Box>> compute(ranks);
  std::vector<std::vector<Box>> sends(ranks), collectives(ranks);
  for (core::TaskId id = 0; id < sim.graph.size(); ++id) {
    const lower::TaskInfo& ti = sim.info[id];
    if (ti.rank >= ranks) continue;
    const core::Time start = sim.timeline.start[id], end = sim.timeline.end[id];
    const schedule::Action& a = ti.action;
    switch (ti.kind) {
      case lower::TaskKind::kEpExchange:  // between its action's parts (flow collectives): inside its box
      case lower::TaskKind::kCompute: {
        const Key key{static_cast<int>(a.op), a.stage, a.microbatch};
        auto [it, fresh] = compute[ti.rank].try_emplace(key);
        Box& b = it->second;
        if (fresh) {
          b = {start, end, &kind_of(a.op), a.stage, a.microbatch,
               fmt::format("{} mb{} s{}", schedule::op_name(a.op), a.microbatch, a.stage)};
        } else {
          b.start = std::min(b.start, start);
          b.end = std::max(b.end, end);
        }
        break;
      }
      case lower::TaskKind::kOptimizer:
        compute[ti.rank].try_emplace(Key{-1, 0, 0}, Box{start, end, &kOptimizer, 0, -1, "optimizer step"});
        break;
      case lower::TaskKind::kTransfer:
        sends[ti.rank].push_back({start, end, &kSend, a.stage, a.microbatch,
                                  a.op == schedule::Op::kSendF
                                      ? fmt::format("send activation mb{} s{}->s{}", a.microbatch, a.stage, a.stage + 1)
                                      : fmt::format("send gradient mb{} s{}->s{}", a.microbatch, a.stage, a.stage - 1)});
        break;
      case lower::TaskKind::kGradReduce:
      case lower::TaskKind::kEmbeddingAllReduce:
      case lower::TaskKind::kParamAllGather:
        if (end > start) {  // without data parallelism they cost nothing
          const char* what = ti.kind == lower::TaskKind::kGradReduce           ? "gradient reduction"
                             : ti.kind == lower::TaskKind::kEmbeddingAllReduce ? "embedding gradient all-reduce"
                                                                               : "parameter all-gather";
          collectives[ti.rank].push_back({start, end, &kCollective, a.stage, -1, fmt::format("{} s{}", what, a.stage)});
        }
        break;
      case lower::TaskKind::kTpBarrier: break;  // a meeting point, no work of its own
    }
  }
  bool any_comm = false;
  for (int r = 0; r < ranks; ++r) any_comm = any_comm || !sends[r].empty() || !collectives[r].empty();
  const double row_pitch = kBoxHeight + (any_comm ? kCommGap + kCommHeight : 0.0) + kRowGap;
  const double axis_y = kTop + ranks * row_pitch;
  const double legend_y = axis_y + 46.0;

  // Legend: the kinds that appear, in a fixed order, then what the boxes'
  // numbers and shades mean, in lines that fit the picture's width (text
  // taken at 6.5 px a character of its 11 px font, a little wider than
  // Helvetica's).
  std::vector<const Kind*> shown;
  for (const Kind* k : {&kForward, &kBackward, &kInputGrad, &kWeightGrad, &kOptimizer}) {
    bool present = false;
    for (int r = 0; r < ranks && !present; ++r) {
      for (const auto& [key, b] : compute[r]) present = present || b.kind == k;
    }
    if (present) shown.push_back(k);
  }
  bool any_send = false, any_collective = false;
  for (int r = 0; r < ranks; ++r) {
    any_send = any_send || !sends[r].empty();
    any_collective = any_collective || !collectives[r].empty();
  }
  if (any_send) shown.push_back(&kSend);
  if (any_collective) shown.push_back(&kCollective);
  std::string stages_note;
  if (info.placement == schedule::Placement::kDual) {
    stages_note = fmt::format("sN: stage N; two directions: stages 0-{} run down ranks 0-{}, lighter boxes stages {}-{}, "
                              "a copy of the same layers with micro-batches of their own (numbered from 0), back up "
                              "ranks {}-0",
                              ranks - 1, ranks - 1, ranks, 2 * ranks - 1, ranks - 1);
  } else if (info.vp > 1) {
    const std::string where = info.placement == schedule::Placement::kVShape
                                  ? fmt::format("in a V: stages 0-{0} on ranks 0-{0}, stages {1}-{2} back up on ranks {0}-0",
                                                ranks - 1, ranks, 2 * ranks - 1)
                                  : fmt::format("stage s runs on rank s mod {}", ranks);
    stages_note = fmt::format("sN: stage N; lighter boxes: later virtual stages ({})", where);
  }
  const std::vector<LegendItem> legend = lay_out_legend(shown, stages_note, legend_y);
  const double height = legend.back().y + 18.0;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      num(kWidth), num(height));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(kWidth), num(height));

  // Title: model, schedule, iteration time; below it the plan.
  const std::string title = fmt::format("{} · {} · iteration {:.2f} ms", info.model, info.schedule,
                                        summary.iteration_time_s * 1e3);
  std::string plan = fmt::format("tp={} pp={} dp={}", info.tp, info.pp, info.dp);
  if (info.vp > 1) plan += fmt::format(" vp={}", info.vp);
  plan += fmt::format(", {} micro-batch{} of {} per pipeline, bubble {:.1f}%", info.microbatches,
                      info.microbatches == 1 ? "" : "es", info.microbatch_size, summary.bubble_fraction * 100.0);
  if (sim.pipelines > 1) plan += fmt::format("; the first of {} simulated pipelines", sim.pipelines);
  out += fmt::format("<title>{}</title>\n", escaped(title));
  out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n", num(kLeft),
                     escaped(title));
  out += fmt::format("<text x=\"{}\" y=\"40\" font-size=\"12\" fill=\"#444444\">{}</text>\n", num(kLeft),
                     escaped(plan));

  // Grid lines and the time axis.
  const double step = tick_step(span_ms);
  const int decimals = step >= 1.0 ? 0 : static_cast<int>(std::lround(-std::floor(std::log10(step))));
  out += "<g class=\"axis\" font-size=\"11\" fill=\"#444444\">\n";
  for (long k = 0;; ++k) {
    const double t = static_cast<double>(k) * step;
    if (t > span_ms * (1.0 + 1e-9)) break;
    const double x = kLeft + kPlotWidth * t / span_ms;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#eeeeee\"/>\n", num(x), num(kTop - 4),
                       num(axis_y));
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444444\"/>\n", num(x), num(axis_y),
                       num(axis_y + 5));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}</text>\n", num(x), num(axis_y + 18), t,
                       decimals);
  }
  out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"#444444\"/>\n", num(kLeft),
                     num(kLeft + kPlotWidth), num(axis_y));
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">time (ms)</text>\n", num(kLeft + kPlotWidth),
                     num(axis_y + 34));
  out += "</g>\n";

  // One group per rank: its label, its lane outline, its boxes.
  auto box = [&](const Box& b, double y, double h, const std::string& fill) {
    const double x = x_of(b.start);
    const double w = std::max(x_of(b.end) - x, 1.0);  // a very short task still shows
    return fmt::format(
        "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" "
        "stroke-width=\"0.5\"><title>{}: {} to {} ms</title></rect>\n",
        b.kind->cls, num(x), num(y), num(w), num(h), fill, escaped(b.name), ms(b.start), ms(b.end));
  };
  for (int r = 0; r < ranks; ++r) {
    const double y = kTop + r * row_pitch;
    out += fmt::format("<g id=\"rank{}\">\n", r);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">rank {}</text>\n",
                       num(kLeft - 8), num(y + 12), r);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#666666\" text-anchor=\"end\">GPU {}</text>\n",
                       num(kLeft - 8), num(y + 24), sim.gpu_of_rank[r]);
    out += fmt::format("<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                       "stroke=\"#cccccc\" stroke-width=\"0.5\"/>\n",
                       num(kLeft), num(y), num(kPlotWidth), num(kBoxHeight));
    std::vector<const Box*> boxes;
    for (const auto& [key, b] : compute[r]) boxes.push_back(&b);
    std::stable_sort(boxes.begin(), boxes.end(), [](const Box* a, const Box* b) { return a->start < b->start; });
    for (const Box* b : boxes) {
      const int chunk = b->kind == &kOptimizer ? 0 : b->stage / std::max(ranks, 1);
      // (DualPipe's second direction is the second chunk of two.)
      const int chunks = info.vp * schedule::pipelines_of(info.placement);
      const double shade = chunks > 1 ? 0.45 * chunk / (chunks - 1) : 0.0;
      out += box(*b, y, kBoxHeight, lighter(b->kind->rgb, shade));
      // The micro-batch number (and the stage, with two chunks or more) where it fits.
      const double x0 = x_of(b->start), w = x_of(b->end) - x0;
      const std::string label = b->microbatch >= 0 ? std::to_string(b->microbatch) : "opt";
      if (w >= 6.5 * static_cast<double>(label.size()) + 3.0) {
        const double text_y = chunks > 1 && b->microbatch >= 0 ? y + 13.0 : y + 17.0;
        out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                           num(x0 + w / 2), num(text_y), label);
        const std::string stage = fmt::format("s{}", b->stage);
        if (chunks > 1 && b->microbatch >= 0 && w >= 5.0 * static_cast<double>(stage.size()) + 3.0) {
          out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"8\" text-anchor=\"middle\" "
                             "fill=\"#333333\">{}</text>\n",
                             num(x0 + w / 2), num(y + 23.0), stage);
        }
      }
    }
    if (any_comm) {
      const double cy = y + kBoxHeight + kCommGap;
      for (const Box& b : sends[r]) out += box(b, cy, kCommHeight / 2, lighter(b.kind->rgb, 0.0));
      for (const Box& b : collectives[r]) out += box(b, cy + kCommHeight / 2, kCommHeight / 2, lighter(b.kind->rgb, 0.0));
    }
    out += "</g>\n";
  }

  // Legend, laid out above.
  out += "<g class=\"legend\" font-size=\"11\">\n";
  for (const LegendItem& item : legend) {
    if (item.swatch != nullptr) {
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", num(item.x),
                         num(item.y - 10), lighter(item.swatch->rgb, 0.0));
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", num(item.x + 16), num(item.y), item.text);
    } else {
      out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666666\">{}</text>\n", num(item.x), num(item.y), item.text);
    }
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace trainsim::report
