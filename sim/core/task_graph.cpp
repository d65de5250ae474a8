#include "core/task_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::core {

void TaskGraph::added_after_finalize() { throw std::logic_error("TaskGraph::add after finalize"); }

void TaskGraph::check_edge(TaskId before, TaskId after) const {
  if (before >= tasks_.size() || after >= tasks_.size() || before == after) {
    throw std::logic_error("TaskGraph: an edge with a bad task id");
  }
}

void TaskGraph::add_edge(TaskId before, TaskId after) {
  if (finalized_) throw std::logic_error("TaskGraph: edges added after finalize");
  check_edge(before, after);
  if (edges_.size() >= kMaxEdges) throw std::runtime_error("TaskGraph: more than 4,294,967,295 dependencies");
  edges_.emplace_back(before, after);
}

void TaskGraph::add_edges(std::vector<std::pair<TaskId, TaskId>>&& edges) {
  if (finalized_) throw std::logic_error("TaskGraph: edges added after finalize");
  if (edges_.size() + edges.size() > kMaxEdges) {
    throw std::runtime_error("TaskGraph: more than 4,294,967,295 dependencies");
  }
  for (const auto& [before, after] : edges) check_edge(before, after);
  if (edges_.empty()) {
    edges_ = std::move(edges);
  } else {
    edges_.insert(edges_.end(), edges.begin(), edges.end());
  }
  std::vector<std::pair<TaskId, TaskId>>().swap(edges);
}

void TaskGraph::finalize() {
  // Successors are visited in the order their edges were added, which callers
  // keep fixed, so runs are reproducible. A repeated edge is counted as often as
  // it appears on both sides (in-degree and successors), so it does no harm.
  in_degree_.assign(tasks_.size(), 0);
  for (const auto& e : edges_) ++in_degree_[e.second];
  graph_ = Graph(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(), tasks_.size());
  edges_.clear();
  edges_.shrink_to_fit();
  finalized_ = true;
}

}  // namespace trainsim::core
