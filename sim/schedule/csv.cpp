#include "schedule/csv.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace trainsim::schedule {

namespace {

// Indices beyond this are refused while reading, so that nothing derived from
// them overflows (far more than any plan the config accepts).
constexpr long long kMaxIndex = 10'000'000;

// A cell as it may appear in a message: one line, not too long.
std::string shown(std::string_view cell) {
  std::string s;
  for (char c : cell.substr(0, 40)) s += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (cell.size() > 40) s += "...";
  return "\"" + s + "\"";
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The compute ops, longest spelling first so that "BW" wins over "B".
struct Spelling {
  std::string_view text;
  Op op;
};
constexpr std::array<Spelling, 5> kCompute = {{
    {"BW", Op::kBackward},  // legacy torch token for a full backward
    {"F", Op::kForward},
    {"B", Op::kBackward},
    {"I", Op::kInputGrad},
    {"W", Op::kWeightGrad},
}};
constexpr std::array<std::string_view, 8> kCommunication = {"SEND_F",      "RECV_F",  "SEND_B",  "RECV_B",
                                                            "REDUCE_GRAD", "UNSHARD", "RESHARD", "OPTIMIZER"};

// Reads `<digits>` at `pos`; -1 when there are none.
long long read_index(std::string_view s, std::size_t& pos, int line, int column, std::string_view cell,
                     const char* what) {
  const std::size_t begin = pos;
  long long v = 0;
  while (pos < s.size() && is_digit(s[pos])) {
    v = v * 10 + (s[pos] - '0');
    if (v > kMaxIndex) {
      throw CsvError(line, column, "bad action " + shown(cell) + ": " + what + " index too large (at most " +
                                       std::to_string(kMaxIndex) + ")");
    }
    ++pos;
  }
  return pos == begin ? -1 : v;
}

Action parse_action(std::string_view cell, int line, int column) {
  const std::string expected = "bad action " + shown(cell) +
                               ": expected <stage><op><micro-batch> with op F, B, I or W (or BW for B), e.g. 0F0 or 1B3";
  for (std::string_view comm : kCommunication) {
    const std::size_t at = cell.find(comm);
    if (at != std::string_view::npos && std::all_of(cell.begin(), cell.begin() + static_cast<std::ptrdiff_t>(at), is_digit)) {
      throw CsvError(line, column, shown(cell) + " is a communication action: the CSV lists compute actions only "
                                                 "(F, B, I, W); the simulator adds communication itself");
    }
  }
  std::size_t pos = 0;
  const long long stage = read_index(cell, pos, line, column, cell, "stage");
  if (stage < 0) throw CsvError(line, column, expected);
  const Spelling* spelling = nullptr;
  for (const Spelling& sp : kCompute) {
    if (cell.substr(pos, sp.text.size()) == sp.text) {
      spelling = &sp;
      break;
    }
  }
  if (spelling == nullptr) throw CsvError(line, column, expected);
  pos += spelling->text.size();
  const long long mb = read_index(cell, pos, line, column, cell, "micro-batch");
  if (mb < 0 && pos == cell.size()) {
    throw CsvError(line, column, "bad action " + shown(cell) + ": no micro-batch after the op (expected e.g. " +
                                     std::to_string(stage) + std::string(spelling->text) + "0)");
  }
  if (mb < 0 || pos != cell.size()) throw CsvError(line, column, expected);
  return {spelling->op, static_cast<int>(stage), static_cast<int>(mb)};
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

CsvError::CsvError(int line, int column, const std::string& what)
    : std::runtime_error(std::to_string(line) + ":" + std::to_string(column) + ": " + what),
      line_(line),
      column_(column) {}

Program parse_csv(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a spreadsheet's byte-order mark
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  // Blank lines at the end are no ranks: an editor's final newline, or two.
  // (A rank never runs nothing, so a row with no actions is never wanted.)
  while (!lines.empty() && std::all_of(lines.back().begin(), lines.back().end(), is_space)) lines.pop_back();
  if (lines.empty()) throw CsvError(1, 1, "no rows: expected one row of actions per pipeline rank");

  Program program;
  program.ranks.resize(lines.size());
  // Where each action was first listed: an action runs once, on one rank.
  std::map<std::tuple<Op, int, int>, std::pair<int, int>> listed;
  for (std::size_t r = 0; r < lines.size(); ++r) {
    const std::string_view line = lines[r];
    const int line_no = static_cast<int>(r) + 1;
    for (std::size_t start = 0; start <= line.size();) {
      std::size_t end = line.find(',', start);
      if (end == std::string_view::npos) end = line.size();
      std::size_t b = start, e = end;
      while (b < e && is_space(line[b])) ++b;
      while (e > b && is_space(line[e - 1])) --e;
      if (e - b >= 2 && line[b] == '"' && line[e - 1] == '"') {
        ++b;
        --e;
      }
      if (b < e) {
        const std::string_view cell = line.substr(b, e - b);
        const int column = static_cast<int>(b) + 1;
        const Action a = parse_action(cell, line_no, column);
        const auto [first, added] = listed.try_emplace({a.op, a.stage, a.microbatch}, line_no, column);
        if (!added) {
          throw CsvError(line_no, column,
                         shown(cell) + " is listed twice (first at " + std::to_string(first->second.first) + ":" +
                             std::to_string(first->second.second) + "); each action runs once, on one rank");
        }
        program.ranks[r].push_back(a);
      }
      start = end + 1;
    }
  }
  return program;
}

std::string to_csv(const Program& program) {
  std::string out;
  for (const auto& actions : program.ranks) {
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (!is_compute(actions[i].op)) {
        throw std::invalid_argument(to_string(actions[i]) + " is not a compute action; CSV holds F, B, I and W only");
      }
      if (i) out += ',';
      out += to_string(actions[i]);
    }
    out += '\n';
  }
  return out;
}

ImpliedShape implied_shape(const Program& program) {
  ImpliedShape s;
  s.ranks = static_cast<int>(program.ranks.size());
  for (const auto& actions : program.ranks) {
    for (const Action& a : actions) {
      s.stages = std::max(s.stages, a.stage + 1);
      s.microbatches = std::max(s.microbatches, a.microbatch + 1);
    }
  }
  return s;
}

Placement implied_placement(const Program& program) {
  const int ranks = static_cast<int>(program.ranks.size());
  auto fits = [&](Placement placement) {
    for (int r = 0; r < ranks; ++r) {
      for (const Action& a : program.ranks[r]) {
        if (a.op != Op::kOptimizer && rank_of_stage(placement, a.stage, ranks) != r) return false;
      }
    }
    return true;
  };
  if (ranks == 0 || fits(Placement::kLooped) || !fits(Placement::kVShape)) return Placement::kLooped;
  return Placement::kVShape;
}

void check_fits(const Program& program, const Shape& shape) {
  const ImpliedShape s = implied_shape(program);
  auto n = [](int x) { return std::to_string(x); };
  if (s.stages == 0) throw std::invalid_argument("no actions: expected the F and backward of every stage and micro-batch");
  if (s.ranks != shape.ranks) {
    throw std::invalid_argument(n(s.ranks) + " row" + (s.ranks == 1 ? "" : "s") +
                                " (one per pipeline rank), but the plan has " + n(shape.ranks) +
                                " pipeline ranks (pp)");
  }
  if (s.stages != shape.stages) {
    throw std::invalid_argument("stages 0.." + n(s.stages - 1) + " (" + n(s.stages) + "), but the plan has " +
                                n(shape.stages) + " (pp x vp = " + n(shape.ranks) + " x " +
                                n(shape.virtual_stages()) + ")");
  }
  if (s.microbatches != shape.microbatches) {
    throw std::invalid_argument("micro-batches 0.." + n(s.microbatches - 1) + " (" + n(s.microbatches) +
                                "), but the plan runs " + n(shape.microbatches) +
                                " per pipeline (global_batch / (dp x microbatch_size))");
  }
}

Program CsvSchedule::program(const Shape& shape) const {
  check_fits(program_, shape);
  return program_;
}

}  // namespace trainsim::schedule
