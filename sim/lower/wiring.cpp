// What ties the ranks' tasks together: each receive's consumer after its
// send, the schedule's cross-rank dependencies; and 2BP's runs of W's that
// become one concatenated op.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "lower/lowering.hpp"
#include "schedule/check.hpp"

namespace trainsim::lower::detail {

namespace {

// The send a receive waits for: RECV_F(s, mb) <- SEND_F(s - 1, mb); RECV_B(s, mb) <- SEND_B(s + 1, mb).
std::tuple<Op, int, int> matching_send(const Action& recv) {
  if (recv.op == Op::kRecvF) return {Op::kSendF, recv.stage - 1, recv.microbatch};
  return {Op::kSendB, recv.stage + 1, recv.microbatch};
}

}  // namespace

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
  // Where each send sits, to find what a receive waits for: flat tables
  // indexed by (op, stage, micro-batch) and (rank, index), not maps, as a
  // sweep lowers thousands of plans.
  const int S = shape_.stages, M = shape_.microbatches;
  auto slot = [&](Op op, int stage, int mb) -> std::size_t {
    if (stage < 0 || stage >= S || mb < 0 || mb >= M) throw std::out_of_range("no such send");
    return (static_cast<std::size_t>(op == Op::kSendB) * S + stage) * M + mb;
  };
  std::vector<std::optional<schedule::ActionRef>> sends(2 * static_cast<std::size_t>(S) * M);
  for (int r = 0; r < R; ++r) {
    for (std::size_t k = 0; k < program_.ranks[r].size(); ++k) {
      const Action& a = program_.ranks[r][k];
      if (a.op == Op::kSendF || a.op == Op::kSendB) sends[slot(a.op, a.stage, a.microbatch)] = schedule::ActionRef{r, static_cast<int>(k)};
    }
  }
  // A receive stands for its send; a send without a transfer for what it sends.
  auto as_send = [&](schedule::ActionRef ref) {
    const Action& a = program_.ranks[ref.rank][ref.index];
    if (a.op != Op::kRecvF && a.op != Op::kRecvB) return ref;
    const auto [op, stage, mb] = matching_send(a);
    const auto& found = sends[slot(op, stage, mb)];
    if (!found) throw std::out_of_range("a receive without its send");
    return *found;
  };
  // Free sends: (rank, index) -> producer.
  std::vector<std::vector<std::optional<core::TaskId>>> producer_of_send(R);
  for (int r = 0; r < R; ++r) producer_of_send[r].resize(program_.ranks[r].size());
  for (const schedule::Dependency& d : deps_) {
    const Action& after = program_.ranks[d.after.rank][d.after.index];
    if ((after.op == Op::kSendF || after.op == Op::kSendB) && !last_[p * R + d.after.rank][d.after.index]) {
      const schedule::ActionRef before = as_send(d.before);
      producer_of_send[d.after.rank][d.after.index] = *last_[p * R + before.rank][before.index];
    }
  }
  auto exit_of = [&](schedule::ActionRef ref) -> core::TaskId {
    ref = as_send(ref);
    if (const auto& t = last_[p * R + ref.rank][ref.index]) return *t;
    const auto& producer = producer_of_send[ref.rank][ref.index];
    if (!producer) throw std::out_of_range("a send with nothing to send");
    return *producer;
  };
  auto entry_of = [&](schedule::ActionRef ref) -> std::optional<core::TaskId> {
    ref = as_send(ref);
    return first_[p * R + ref.rank][ref.index];
  };
  for (const schedule::Dependency& d : deps_) {
    const Action& after = program_.ranks[d.after.rank][d.after.index];
    const Action& before = program_.ranks[d.before.rank][d.before.index];
    if (after.op == Op::kReduceGrad && schedule::is_compute(before.op)) continue;  // wired bucket by bucket
    const core::TaskId from = exit_of(d.before);
    const std::optional<core::TaskId> to = entry_of(d.after);
    if (!to || from == *to) continue;
    edges_.emplace_back(from, *to);
  }
}

}  // namespace trainsim::lower::detail
