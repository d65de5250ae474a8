// A directed acyclic graph of tasks, each bound to one resource of the engine.
//
// The core does not know what a task means: a resource reads `duration` (a
// service time, e.g. a kernel on a stream) or `amount` and `route` (e.g. bytes
// over a path of links) as it sees fit. The edges live in a Boost.Graph
// compressed-sparse-row graph: built once, then walked in the hot loop.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/time.hpp"

namespace trainsim::core {

using TaskId = std::uint32_t;
using ResourceId = std::uint32_t;

// 24 bytes: the two 32-bit fields side by side, no padding.
struct Task {
  ResourceId resource = 0;
  std::uint32_t route = 0;  // resource-specific index, e.g. a route of links
  Time duration;            // service time, for resources that use one
  double amount = 0.0;      // work in the resource's own unit (bytes for links)
};
static_assert(sizeof(Task) == 24);

class TaskGraph {
 public:
  // Vertices and edge offsets in 32 bits, as TaskId is: half the bytes of
  // the default's, so walking a task's successors misses cache less.
  using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                   boost::no_property, std::uint32_t, std::uint32_t>;
  // The most edges a graph takes (edge offsets are 32 bits).
  static constexpr std::size_t kMaxEdges = 0xffffffffu;

  // Room for this many tasks, so that a graph of millions of tasks does not
  // grow by copies (each touching fresh pages); only a hint.
  void reserve(std::size_t tasks) { tasks_.reserve(tasks); }
  TaskId add(const Task& task) {  // inline: every task of every plan comes through here
    if (finalized_) added_after_finalize();
    tasks_.push_back(task);
    return static_cast<TaskId>(tasks_.size() - 1);
  }
  // `before` must finish before `after` may start.
  void add_edge(TaskId before, TaskId after);
  // Every (before, after) pair of `edges` as add_edge would add them, taking
  // the vector over rather than copying it (millions of edges: no second
  // copy of them in memory at once).
  void add_edges(std::vector<std::pair<TaskId, TaskId>>&& edges);
  // Builds the edge structure; call once after the last add/add_edge.
  void finalize();

  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskId id) const { return tasks_[id]; }
  Task& task(TaskId id) { return tasks_[id]; }
  const Graph& graph() const { return graph_; }
  std::uint32_t predecessors(TaskId id) const { return in_degree_[id]; }
  bool finalized() const { return finalized_; }

  // Calls f(successor) for each task that waits on `id`, in ascending id order.
  template <class F>
  void for_each_successor(TaskId id, F&& f) const {
    for (auto [it, last] = boost::out_edges(static_cast<Graph::vertex_descriptor>(id), graph_); it != last; ++it) {
      f(static_cast<TaskId>(boost::target(*it, graph_)));
    }
  }

 private:
  [[noreturn]] static void added_after_finalize();
  // Throws unless before -> after joins two distinct tasks of this graph.
  void check_edge(TaskId before, TaskId after) const;

  std::vector<Task> tasks_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<std::uint32_t> in_degree_;
  Graph graph_;
  bool finalized_ = false;
};

}  // namespace trainsim::core
