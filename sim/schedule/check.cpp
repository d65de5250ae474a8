#include "schedule/check.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <optional>
#include <string>

namespace trainsim::schedule {

namespace {

// Where each kind of action of one (stage, micro-batch) sits, if anywhere.
struct Slots {
  std::optional<ActionRef> f, b, i, w;
  std::optional<ActionRef>& of(Op op) {
    switch (op) {
      case Op::kForward: return f;
      case Op::kBackward: return b;
      case Op::kInputGrad: return i;
      case Op::kWeightGrad: return w;
    }
    return f;
  }
  // The action whose end releases the gradient to the previous stage.
  const std::optional<ActionRef>& input_grad() const { return b ? b : i; }
};

std::string where(const Program& p, ActionRef a) {
  return "rank " + std::to_string(a.rank) + ": " + to_string(p.ranks[a.rank][a.index]);
}

}  // namespace

std::vector<Dependency> dependencies(const Program& program, const Shape& shape) {
  if (static_cast<int>(program.ranks.size()) != shape.ranks) {
    throw ProgramError("program has " + std::to_string(program.ranks.size()) + " ranks, shape has " +
                       std::to_string(shape.ranks));
  }
  std::vector<Slots> slots(static_cast<std::size_t>(shape.stages) * shape.microbatches);
  for (int r = 0; r < shape.ranks; ++r) {
    for (int k = 0; k < static_cast<int>(program.ranks[r].size()); ++k) {
      const Action& a = program.ranks[r][k];
      const ActionRef ref{r, k};
      if (a.stage < 0 || a.stage >= shape.stages || a.microbatch < 0 || a.microbatch >= shape.microbatches) {
        throw ProgramError(where(program, ref) + " is outside " + std::to_string(shape.stages) + " stages x " +
                           std::to_string(shape.microbatches) + " micro-batches");
      }
      if (shape.stage_rank[a.stage] != r) {
        throw ProgramError(where(program, ref) + " but stage " + std::to_string(a.stage) + " is placed on rank " +
                           std::to_string(shape.stage_rank[a.stage]));
      }
      auto& slot = slots[static_cast<std::size_t>(a.stage) * shape.microbatches + a.microbatch].of(a.op);
      if (slot) throw ProgramError(where(program, ref) + " repeats " + where(program, *slot));
      slot = ref;
    }
  }
  std::vector<Dependency> deps;
  for (int s = 0; s < shape.stages; ++s) {
    for (int mb = 0; mb < shape.microbatches; ++mb) {
      const Slots& x = slots[static_cast<std::size_t>(s) * shape.microbatches + mb];
      const std::string name = "stage " + std::to_string(s) + " micro-batch " + std::to_string(mb);
      if (!x.f) throw ProgramError(name + " has no F");
      if (x.b && (x.i || x.w)) throw ProgramError(name + " has both B and an I/W split");
      if (!x.b && !(x.i && x.w)) throw ProgramError(name + " has no backward (B, or I and W)");
      deps.push_back({*x.f, *x.input_grad(), EdgeKind::kLocal});
      if (x.i) deps.push_back({*x.i, *x.w, EdgeKind::kLocal});
      if (s + 1 < shape.stages) {
        const Slots& next = slots[static_cast<std::size_t>(s + 1) * shape.microbatches + mb];
        if (next.f) deps.push_back({*x.f, *next.f, EdgeKind::kActivation});
        if (next.input_grad()) deps.push_back({*next.input_grad(), *x.input_grad(), EdgeKind::kGradient});
      }
    }
  }
  return deps;
}

void check(const Program& program, const Shape& shape) {
  const std::vector<Dependency> deps = dependencies(program, shape);

  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  std::vector<int> first_vertex(program.ranks.size() + 1, 0);
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    first_vertex[r + 1] = first_vertex[r] + static_cast<int>(program.ranks[r].size());
  }
  std::vector<ActionRef> ref_of(first_vertex.back());
  Graph g(first_vertex.back());
  auto vertex = [&](ActionRef a) { return first_vertex[a.rank] + a.index; };
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    for (int k = 0; k < static_cast<int>(program.ranks[r].size()); ++k) {
      ref_of[vertex({static_cast<int>(r), k})] = {static_cast<int>(r), k};
      if (k > 0) boost::add_edge(vertex({static_cast<int>(r), k - 1}), vertex({static_cast<int>(r), k}), g);
    }
  }
  for (const Dependency& d : deps) boost::add_edge(vertex(d.before), vertex(d.after), g);

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
  std::vector<int> parent(first_vertex.back(), -1);
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
}

}  // namespace trainsim::schedule
