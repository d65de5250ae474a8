#include "schedule/check.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <optional>
#include <string>

namespace trainsim::schedule {

namespace {

std::string where(const Program& p, ActionRef a) {
  return "rank " + std::to_string(a.rank) + ": " + to_string(p.ranks[a.rank][a.index]);
}

// Where each per-micro-batch action of one (stage, micro-batch) sits.
struct Slots {
  std::optional<ActionRef> f, b, i, w, send_f, recv_f, send_b, recv_b;
  std::optional<ActionRef>& of(Op op) {
    switch (op) {
      case Op::kForward: return f;
      case Op::kBackward: return b;
      case Op::kInputGrad: return i;
      case Op::kWeightGrad: return w;
      case Op::kSendF: return send_f;
      case Op::kRecvF: return recv_f;
      case Op::kSendB: return send_b;
      case Op::kRecvB: return recv_b;
      default: return f;  // not per micro-batch; never asked
    }
  }
  // The action whose end releases the gradient for the previous stage.
  const std::optional<ActionRef>& input_grad() const { return b ? b : i; }
  // The action whose end completes the backward.
  const std::optional<ActionRef>& backward_end() const { return b ? b : w; }
};

}  // namespace

// Kahn's count of what becomes ready: every program a sweep checks passes,
// and this is several times cheaper than the search that names a cycle.
bool acyclic(const Program& program, const std::vector<Dependency>& deps) {
  std::vector<std::size_t> first(program.ranks.size() + 1, 0);
  for (std::size_t r = 0; r < program.ranks.size(); ++r) first[r + 1] = first[r] + program.ranks[r].size();
  const std::size_t n = first.back();
  auto vertex = [&](ActionRef a) { return first[static_cast<std::size_t>(a.rank)] + static_cast<std::size_t>(a.index); };
  // The dependencies by the action they leave, as compressed rows.
  std::vector<std::uint32_t> waiting(n, 0), row(n + 1, 0), after(deps.size());
  for (const Dependency& d : deps) {
    ++row[vertex(d.before) + 1];
    ++waiting[vertex(d.after)];
  }
  for (std::size_t v = 0; v < n; ++v) row[v + 1] += row[v];
  {
    std::vector<std::uint32_t> fill(row.begin(), row.end() - 1);
    for (const Dependency& d : deps) after[fill[vertex(d.before)]++] = static_cast<std::uint32_t>(vertex(d.after));
  }
  std::vector<std::uint32_t> ready;
  ready.reserve(n);
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    for (std::size_t v = first[r] + 1; v < first[r + 1]; ++v) ++waiting[v];  // after the rank's previous action
    if (first[r] < first[r + 1] && waiting[first[r]] == 0) ready.push_back(static_cast<std::uint32_t>(first[r]));
  }
  // Ranks' first actions with no dependency are ready; each action run frees
  // the next on its rank and those waiting on it.
  std::vector<char> last_of_rank(n, 0);
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    if (first[r] < first[r + 1]) last_of_rank[first[r + 1] - 1] = 1;
  }
  for (std::size_t k = 0; k < ready.size(); ++k) {
    const std::uint32_t v = ready[k];
    if (!last_of_rank[v] && --waiting[v + 1] == 0) ready.push_back(v + 1);
    for (std::uint32_t e = row[v]; e < row[v + 1]; ++e) {
      if (--waiting[after[e]] == 0) ready.push_back(after[e]);
    }
  }
  return ready.size() == n;
}

std::vector<Dependency> dependencies(const Program& program, const Shape& shape) {
  if (static_cast<int>(program.ranks.size()) != shape.ranks) {
    throw ProgramError("program has " + std::to_string(program.ranks.size()) + " ranks, shape has " +
                       std::to_string(shape.ranks));
  }
  const int S = shape.stages, M = shape.microbatches;
  std::vector<Slots> slots(static_cast<std::size_t>(S) * M);
  auto slot = [&](int s, int mb) -> Slots& { return slots[static_cast<std::size_t>(s) * M + mb]; };
  std::vector<std::optional<ActionRef>> reduce(S);
  std::vector<std::optional<ActionRef>> optimizer(shape.ranks);

  for (int r = 0; r < shape.ranks; ++r) {
    for (int k = 0; k < static_cast<int>(program.ranks[r].size()); ++k) {
      const Action& a = program.ranks[r][k];
      const ActionRef ref{r, k};
      if (a.op == Op::kOptimizer) {
        if (optimizer[r]) throw ProgramError(where(program, ref) + " repeats " + where(program, *optimizer[r]));
        optimizer[r] = ref;
        continue;
      }
      if (a.stage < 0 || a.stage >= S) {
        throw ProgramError(where(program, ref) + " names a stage outside 0.." + std::to_string(S - 1));
      }
      if (shape.stage_rank[a.stage] != r) {
        throw ProgramError(where(program, ref) + " but stage " + std::to_string(a.stage) + " is placed on rank " +
                           std::to_string(shape.stage_rank[a.stage]));
      }
      if (a.op == Op::kUnshard || a.op == Op::kReshard) continue;  // paired in check_sharding
      if (a.op == Op::kReduceGrad) {
        if (reduce[a.stage]) throw ProgramError(where(program, ref) + " repeats " + where(program, *reduce[a.stage]));
        reduce[a.stage] = ref;
        continue;
      }
      if (a.microbatch < 0 || a.microbatch >= M) {
        throw ProgramError(where(program, ref) + " names a micro-batch outside 0.." + std::to_string(M - 1));
      }
      auto& s = slot(a.stage, a.microbatch).of(a.op);
      if (s) throw ProgramError(where(program, ref) + " repeats " + where(program, *s));
      s = ref;
    }
  }

  std::vector<Dependency> deps;
  for (int s = 0; s < S; ++s) {
    const int rank = shape.stage_rank[s];
    for (int mb = 0; mb < M; ++mb) {
      const Slots& x = slot(s, mb);
      // Names made only for an error: a large program has thousands of slots.
      const auto name = [&] { return "stage " + std::to_string(s) + " micro-batch " + std::to_string(mb); };
      if (!x.f) throw ProgramError(name() + " has no F");
      if (x.b && (x.i || x.w)) throw ProgramError(name() + " has both B and an I/W split");
      if (!x.b && !(x.i && x.w)) throw ProgramError(name() + " has no backward (B, or I and W)");
      deps.push_back({*x.f, *x.input_grad()});
      if (x.i) deps.push_back({*x.i, *x.w});
      if (!reduce[s]) throw ProgramError("stage " + std::to_string(s) + " has no REDUCE_GRAD");
      deps.push_back({*x.backward_end(), *reduce[s]});

      // The boundary between stage s and s + 1 (none at the end of a pipeline).
      const bool last = !shape.has_next(s);
      const bool crosses = !last && shape.stage_rank[s + 1] != rank;
      const Slots* next = last ? nullptr : &slot(s + 1, mb);
      const auto boundary = [&] { return "stages " + std::to_string(s) + " and " + std::to_string(s + 1); };
      auto need = [&](const std::optional<ActionRef>& a, Op op, int stage) {
        if (!a) {
          throw ProgramError(boundary() + " sit on different ranks, but rank " +
                             std::to_string(shape.stage_rank[stage]) + " has no " + to_string({op, stage, mb}));
        }
      };
      auto forbid = [&](const std::optional<ActionRef>& a) {
        if (a) {
          throw ProgramError(where(program, *a) + " has nothing to do: " +
                             (last ? "no stage follows stage " + std::to_string(s)
                                   : boundary() + " share rank " + std::to_string(rank)));
        }
      };
      if (!crosses) {
        forbid(x.send_f);
        forbid(x.recv_b);
        if (next) {
          forbid(next->recv_f);
          forbid(next->send_b);
          deps.push_back({*x.f, *next->f});
          deps.push_back({*next->input_grad(), *x.input_grad()});
        }
        continue;
      }
      need(x.send_f, Op::kSendF, s);
      need(next->recv_f, Op::kRecvF, s + 1);
      need(next->send_b, Op::kSendB, s + 1);
      need(x.recv_b, Op::kRecvB, s);
      deps.push_back({*x.f, *x.send_f});
      deps.push_back({*x.send_f, *next->recv_f});
      deps.push_back({*next->recv_f, *next->f});
      deps.push_back({*next->input_grad(), *next->send_b});
      deps.push_back({*next->send_b, *x.recv_b});
      deps.push_back({*x.recv_b, *x.input_grad()});
    }
    if (!shape.has_previous(s)) {
      // A pipeline's first stage has no predecessor: nothing may be received for it or sent back from it.
      const std::string none = " has nothing to do: no stage precedes stage " + std::to_string(s);
      for (int mb = 0; mb < M; ++mb) {
        if (slot(s, mb).recv_f) throw ProgramError(where(program, *slot(s, mb).recv_f) + none);
        if (slot(s, mb).send_b) throw ProgramError(where(program, *slot(s, mb).send_b) + none);
      }
    }
  }
  for (int s = 0; s < S; ++s) {
    const int rank = shape.stage_rank[s];
    if (!optimizer[rank]) throw ProgramError("rank " + std::to_string(rank) + " has no OPTIMIZER");
    deps.push_back({*reduce[s], *optimizer[rank]});
  }
  return deps;
}

namespace {

// UNSHARD and RESHARD of a stage (of each of its units, where they name
// units) alternate on its rank, starting with UNSHARD and ending with
// RESHARD; once a stage is sharded, its F, B and I run only while every one
// of its units is gathered.
void check_sharding(const Program& program) {
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const auto& actions = program.ranks[r];
    std::map<std::pair<int, int>, bool> open;  // (stage, unit) -> inside an UNSHARD ... RESHARD window
    std::map<int, int> units;                   // stage -> its units (1: the stage whole)
    std::map<int, int> gathered;                // stage -> those inside a window
    for (const Action& a : actions) {
      if ((a.op == Op::kUnshard || a.op == Op::kReshard) && open.emplace(std::pair(a.stage, a.unit()), false).second) {
        ++units[a.stage];
        gathered.emplace(a.stage, 0);
      }
    }
    if (open.empty()) continue;
    for (int k = 0; k < static_cast<int>(actions.size()); ++k) {
      const Action& a = actions[k];
      const ActionRef ref{static_cast<int>(r), k};
      if (a.op == Op::kUnshard) {
        bool& is_open = open.at({a.stage, a.unit()});
        if (is_open) {
          throw ProgramError(where(program, ref) + (a.unit() < 0 ? " while the stage's parameters are already gathered"
                                                                   : " while the unit's parameters are already gathered"));
        }
        is_open = true;
        ++gathered[a.stage];
      } else if (a.op == Op::kReshard) {
        bool& is_open = open.at({a.stage, a.unit()});
        if (!is_open) throw ProgramError(where(program, ref) + " without an UNSHARD before it");
        is_open = false;
        --gathered[a.stage];
      } else if ((a.op == Op::kForward || a.op == Op::kBackward || a.op == Op::kInputGrad) && units.count(a.stage) != 0 &&
                 gathered[a.stage] != units[a.stage]) {
        throw ProgramError(where(program, ref) + " runs on sharded parameters: no UNSHARD of stage " +
                           std::to_string(a.stage) + (units[a.stage] > 1 ? "'s every unit" : "") + " before it");
      }
    }
    for (const auto& [key, is_open] : open) {
      if (is_open) {
        throw ProgramError("rank " + std::to_string(r) + ": stage " + std::to_string(key.first) +
                           (key.second >= 0 ? " unit " + std::to_string(key.second) : std::string()) +
                           " is gathered (UNSHARD) and never given back (RESHARD)");
      }
    }
  }
}

}  // namespace

std::vector<Dependency> check(const Program& program, const Shape& shape) {
  std::vector<Dependency> deps = dependencies(program, shape);
  check_sharding(program);

  if (acyclic(program, deps)) return deps;

  // A cycle: find one to report. Built once, walked once: a
  // compressed-sparse-row graph. The edges come in a fixed order, so the
  // search (and the cycle it reports) is always the same.
  using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
  std::vector<int> first_vertex(program.ranks.size() + 1, 0);
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    first_vertex[r + 1] = first_vertex[r] + static_cast<int>(program.ranks[r].size());
  }
  const auto vertices = static_cast<std::size_t>(first_vertex.back());
  std::vector<ActionRef> ref_of(vertices);
  auto vertex = [&](ActionRef a) { return static_cast<std::size_t>(first_vertex[a.rank] + a.index); };
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  edges.reserve(vertices + deps.size());
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const int rank = static_cast<int>(r);
    for (int k = 0; k < static_cast<int>(program.ranks[r].size()); ++k) {
      ref_of[vertex({rank, k})] = {rank, k};
      if (k > 0) edges.emplace_back(vertex({rank, k - 1}), vertex({rank, k}));
    }
  }
  for (const Dependency& d : deps) edges.emplace_back(vertex(d.before), vertex(d.after));
  const Graph g(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), vertices);

  // Depth-first search; a back edge u -> v closes the cycle v -> ... -> u -> v.
  struct CycleFinder : boost::default_dfs_visitor {
    std::vector<int>* parent;
    std::vector<int>* cycle;
    void tree_edge(Graph::edge_descriptor e, const Graph& gr) {
      (*parent)[boost::target(e, gr)] = static_cast<int>(boost::source(e, gr));
    }
    void back_edge(Graph::edge_descriptor e, const Graph& gr) {
      if (!cycle->empty()) return;
      const int u = static_cast<int>(boost::source(e, gr));
      const int v = static_cast<int>(boost::target(e, gr));
      for (int x = u; x != v && x >= 0; x = (*parent)[x]) cycle->push_back(x);
      cycle->push_back(v);  // cycle = u, parent(u), ..., v: each waits for the next
    }
  };
  std::vector<int> parent(vertices, -1);
  std::vector<int> cycle;
  CycleFinder finder;
  finder.parent = &parent;
  finder.cycle = &cycle;
  boost::depth_first_search(g, boost::visitor(finder));
  if (!cycle.empty()) {
    // The back edge u -> v means v waits for u; so read v, u, parent(u), ..., v.
    std::string msg = "dependency cycle (the pipeline would deadlock): " + where(program, ref_of[cycle.back()]);
    for (int x : cycle) msg += " waits for " + where(program, ref_of[x]);
    throw ProgramError(msg);
  }
  return deps;
}

}  // namespace trainsim::schedule
