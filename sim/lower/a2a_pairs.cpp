#include "lower/a2a_pairs.hpp"

#include <cstddef>

namespace trainsim::lower {

using schedule::Action;
using schedule::Op;

std::vector<int> a2a_partners(const std::vector<Action>& actions) {
  std::vector<int> partner(actions.size(), -1);
  // The F and B actions in order, with -1 where an I or W breaks the run.
  std::vector<int> run;
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const Op op = actions[k].op;
    if (!schedule::is_compute(op)) continue;
    run.push_back(op == Op::kForward || op == Op::kBackward ? static_cast<int>(k) : -1);
  }
  auto pairs = [&](std::size_t x, std::size_t y) {  // run[x] then run[y]: one F, one B, not the same chunk
    if (y >= run.size() || run[x] < 0 || run[y] < 0) return false;
    const Action& a = actions[static_cast<std::size_t>(run[x])];
    const Action& b = actions[static_cast<std::size_t>(run[y])];
    return (a.op == Op::kForward) != (b.op == Op::kForward) && !(a.stage == b.stage && a.microbatch == b.microbatch);
  };
  for (std::size_t x = 0; x + 1 < run.size(); ++x) {
    if (run[x] < 0 || partner[static_cast<std::size_t>(run[x])] >= 0 || !pairs(x, x + 1)) continue;
    const bool forward_first = actions[static_cast<std::size_t>(run[x])].op == Op::kForward;
    // A B before an F that could pair with the B after it leaves that F to it.
    if (!forward_first && pairs(x + 1, x + 2)) continue;
    partner[static_cast<std::size_t>(run[x])] = run[x + 1];
    partner[static_cast<std::size_t>(run[x + 1])] = run[x];
    ++x;
  }
  return partner;
}

namespace {
// Whether `send` carries the output of compute action `a`.
bool sends_output_of(const Action& send, const Action& a) {
  const Op op = a.op == Op::kForward ? Op::kSendF : Op::kSendB;
  return send.op == op && send.stage == a.stage && send.microbatch == a.microbatch;
}
}  // namespace

schedule::Program with_paired_sends(const schedule::Program& program) {
  schedule::Program out;
  out.ranks.resize(program.ranks.size());
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const std::vector<Action>& in = program.ranks[r];
    const std::vector<int> partner = a2a_partners(in);
    // The sends right after each pair's first action, which move.
    std::vector<std::vector<Action>> moved(in.size());
    std::vector<char> skip(in.size(), 0);
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (partner[k] <= static_cast<int>(k)) continue;
      for (std::size_t j = k + 1; j < in.size() && sends_output_of(in[j], in[k]); ++j) {
        moved[static_cast<std::size_t>(partner[k])].push_back(in[j]);
        skip[j] = 1;
      }
    }
    std::vector<Action>& actions = out.ranks[r];
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (skip[k] != 0) continue;
      actions.push_back(in[k]);
      if (moved[k].empty()) continue;
      // The second of a pair: the forward's output goes first.
      std::size_t j = k + 1;
      if (in[k].op == Op::kForward) {
        for (; j < in.size() && sends_output_of(in[j], in[k]); ++j) actions.push_back(in[j]);
        for (std::size_t x = k + 1; x < j; ++x) skip[x] = 1;
      }
      actions.insert(actions.end(), moved[k].begin(), moved[k].end());
    }
  }
  return out;
}

std::vector<schedule::Dependency> a2a_pair_waits(const schedule::Program& program,
                                                 const std::vector<schedule::Dependency>& deps) {
  using schedule::ActionRef;
  // Per rank, each action's partner, and its partner when it is the later of its pair.
  std::vector<std::vector<int>> partners(program.ranks.size()), earlier(program.ranks.size());
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    partners[r] = a2a_partners(program.ranks[r]);
    const std::vector<int>& partner = partners[r];
    earlier[r].assign(partner.size(), -1);
    for (std::size_t k = 0; k < partner.size(); ++k) {
      if (partner[k] >= 0 && static_cast<std::size_t>(partner[k]) < k) earlier[r][k] = partner[k];
    }
  }
  // The send each receive takes (the dependency ending at the receive).
  std::vector<std::vector<ActionRef>> sender(program.ranks.size());
  for (std::size_t r = 0; r < program.ranks.size(); ++r) sender[r].assign(program.ranks[r].size(), ActionRef{-1, -1});
  auto slot = [](auto& table, ActionRef a) -> auto& {
    return table[static_cast<std::size_t>(a.rank)][static_cast<std::size_t>(a.index)];
  };
  auto is_receive = [&](ActionRef a) {
    const Op op = slot(program.ranks, a).op;
    return op == Op::kRecvF || op == Op::kRecvB;
  };
  auto is_send = [&](ActionRef a) {
    const Op op = slot(program.ranks, a).op;
    return op == Op::kSendF || op == Op::kSendB;
  };
  for (const schedule::Dependency& d : deps) {
    if (is_receive(d.after) && is_send(d.before)) slot(sender, d.after) = d.before;
  }
  std::vector<schedule::Dependency> waits;
  for (const schedule::Dependency& d : deps) {
    const int first = slot(earlier, d.after);
    if (first < 0) continue;
    const ActionRef from = is_receive(d.before) ? slot(sender, d.before) : d.before;
    if (from.rank < 0) continue;  // a receive without its send: schedule::check refuses that program
    if (from.rank == d.after.rank && from.index <= first) continue;  // already before the pair on its rank
    waits.push_back({from, ActionRef{d.after.rank, first}});
  }
  // The first's sends after the second, which with_paired_sends placed before them.
  for (const schedule::Dependency& d : deps) {
    if (!is_send(d.after) || d.before.rank != d.after.rank) continue;
    const auto& partner_of = partners[static_cast<std::size_t>(d.before.rank)];
    const int second = partner_of[static_cast<std::size_t>(d.before.index)];
    if (second > d.before.index) waits.push_back({ActionRef{d.before.rank, second}, d.after});
  }
  return waits;
}

namespace {
// `deps`: the program's dependencies with the pairs' waits.
A2aRefusal refusal_of(std::string_view schedule, const schedule::Shape& shape, const schedule::Program& program,
                      const std::vector<schedule::Dependency>& deps) {
  bool whole_backward = false;
  for (const auto& actions : program.ranks) {
    for (const Action& a : actions) whole_backward = whole_backward || a.op == Op::kBackward;
  }
  if (!whole_backward) return A2aRefusal::kNoWholeBackward;
  const bool megatron = schedule == "1f1b" || schedule == "interleaved-1f1b";
  if (megatron && shape.ranks > 1 && shape.virtual_stages() == 1) return A2aRefusal::kPipelineWithoutChunks;
  if (!schedule::acyclic(program, deps)) return A2aRefusal::kPairsWaitOnThemselves;
  return A2aRefusal::kRuns;
}
}  // namespace

A2aWaits a2a_waits(std::string_view schedule, const schedule::Shape& shape, const schedule::Program& program) {
  std::vector<schedule::Dependency> deps = schedule::dependencies(program, shape);
  A2aWaits out;
  out.waits = a2a_pair_waits(program, deps);
  deps.insert(deps.end(), out.waits.begin(), out.waits.end());
  out.refusal = refusal_of(schedule, shape, program, deps);
  return out;
}

}  // namespace trainsim::lower
