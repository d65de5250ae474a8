// What ties the ranks' tasks together: each receive's consumer after its
// send, the schedule's cross-rank dependencies (worked out once a program:
// wiring.hpp); and 2BP's runs of W's that become one concatenated op.
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "lower/lowering.hpp"
#include "lower/wiring.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower {

namespace {

using schedule::Action;
using schedule::Op;

// The send a receive waits for: RECV_F(s, mb) <- SEND_F(s - 1, mb); RECV_B(s, mb) <- SEND_B(s + 1, mb).
std::tuple<Op, int, int> matching_send(const Action& recv) {
  if (recv.op == Op::kRecvF) return {Op::kSendF, recv.stage - 1, recv.microbatch};
  return {Op::kSendB, recv.stage + 1, recv.microbatch};
}

}  // namespace

Wiring wire(const schedule::Program& program, const schedule::Shape& shape,
            const std::vector<schedule::Dependency>& deps) {
  const int R = shape.ranks;
  // Where each send sits, to find what a receive waits for: a flat table
  // indexed by (op, stage, micro-batch), not a map.
  const int S = shape.stages, M = shape.microbatches;
  auto slot = [&](Op op, int stage, int mb) -> std::size_t {
    if (stage < 0 || stage >= S || mb < 0 || mb >= M) throw std::out_of_range("no such send");
    return (static_cast<std::size_t>(op == Op::kSendB) * S + stage) * M + mb;
  };
  std::vector<std::optional<schedule::ActionRef>> sends(2 * static_cast<std::size_t>(S) * M);
  Wiring w;
  w.rank_offset.assign(static_cast<std::size_t>(R) + 1, 0);
  for (int r = 0; r < R; ++r) {
    w.rank_offset[r + 1] = w.rank_offset[r] + program.ranks[r].size();
    for (std::size_t k = 0; k < program.ranks[r].size(); ++k) {
      const Action& a = program.ranks[r][k];
      if (a.op == Op::kSendF || a.op == Op::kSendB) {
        sends[slot(a.op, a.stage, a.microbatch)] = schedule::ActionRef{r, static_cast<int>(k)};
      }
    }
  }
  // A receive stands for its send.
  auto as_send = [&](schedule::ActionRef ref) {
    const Action& a = program.ranks[ref.rank][ref.index];
    if (a.op != Op::kRecvF && a.op != Op::kRecvB) return ref;
    const auto [op, stage, mb] = matching_send(a);
    const auto& found = sends[slot(op, stage, mb)];
    if (!found) throw std::out_of_range("a receive without its send");
    return *found;
  };
  w.edges.reserve(deps.size());
  for (const schedule::Dependency& d : deps) {
    const Action& after = program.ranks[d.after.rank][d.after.index];
    const Action& before = program.ranks[d.before.rank][d.before.index];
    const schedule::ActionRef from = as_send(d.before);
    if (after.op == Op::kSendF || after.op == Op::kSendB) w.into_sends.push_back({from, d.after});
    if (after.op == Op::kReduceGrad && schedule::is_compute(before.op)) continue;  // wired bucket by bucket
    w.edges.push_back({from, as_send(d.after)});
  }
  return w;
}

}  // namespace trainsim::lower

namespace trainsim::lower::detail {

void Lowering::find_concatenated_weight_grads() {
  const int R = shape_.ranks, M = shape_.microbatches;
  merged_into_.resize(R);
  concat_end_.resize(R);
  for (int r = 0; r < R; ++r) {
    const auto& actions = program_.ranks[r];
    merged_into_[r].assign(actions.size(), -1);
    concat_end_[r].assign(actions.size(), 0);
    if (!plan_.twobp_concat) continue;
    // Runs of W's of one stage, apart only by non-compute actions, that cover
    // every micro-batch.
    for (std::size_t k = 0; k < actions.size();) {
      if (actions[k].op != Op::kWeightGrad) {
        ++k;
        continue;
      }
      std::vector<std::size_t> run = {k};
      std::size_t j = k + 1;
      for (; j < actions.size(); ++j) {
        if (actions[j].op == Op::kWeightGrad && actions[j].stage == actions[k].stage) {
          run.push_back(j);
        } else if (schedule::is_compute(actions[j].op)) {
          break;
        }
      }
      if (static_cast<int>(run.size()) == M && M > 1) {
        for (std::size_t x = 0; x + 1 < run.size(); ++x) merged_into_[r][run[x]] = static_cast<int>(run.back());
        concat_end_[r][run.back()] = 1;
      }
      k = j;
    }
  }
}

void Lowering::wire_dependencies(int p) {
  const int R = shape_.ranks;
  const Wiring& wiring = wiring_;
  const auto last = [&](schedule::ActionRef a) -> const std::optional<core::TaskId>& {
    return last_[p * R + a.rank][a.index];
  };
  // Sends that make no transfer: what waits for one waits for what it sends
  // (flat over every rank's actions, made only where there is such a send).
  std::vector<std::optional<core::TaskId>> producer_of_send;
  for (const Wiring::Edge& e : wiring.into_sends) {
    if (last(e.to)) continue;
    if (producer_of_send.empty()) producer_of_send.resize(wiring.rank_offset.back());
    producer_of_send[wiring.rank_offset[e.to.rank] + e.to.index] = *last(e.from);
  }
  for (const Wiring::Edge& e : wiring.edges) {
    core::TaskId from;
    if (const auto& t = last(e.from)) {
      from = *t;
    } else {
      const std::optional<core::TaskId>* producer =
          producer_of_send.empty() ? nullptr : &producer_of_send[wiring.rank_offset[e.from.rank] + e.from.index];
      if (producer == nullptr || !*producer) throw std::out_of_range("a send with nothing to send");
      from = **producer;
    }
    const std::optional<core::TaskId>& to = first_[p * R + e.to.rank][e.to.index];
    if (!to || from == *to) continue;
    edges_.emplace_back(from, *to);
  }
}

}  // namespace trainsim::lower::detail
