// The engine loop: runs a TaskGraph over a set of resources.
//
// A task becomes ready when its last predecessor finishes; the engine then hands
// it to its resource, which decides when it starts and when it ends by
// scheduling events on the shared queue. Each resource keeps at most a few
// pending events (the next completion on a stream or a link), never one per
// waiting task, so the queue stays small.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/event_queue.hpp"
#include "core/task_graph.hpp"
#include "core/time.hpp"

namespace trainsim::core {

class Engine;

class Resource {
 public:
  virtual ~Resource() = default;
  // Every predecessor of `task` has finished.
  virtual void on_ready(TaskId task, Engine& engine) = 0;
  // An event this resource scheduled has come due (cancelled ones never arrive).
  virtual void on_event(std::uint64_t token, Engine& engine) = 0;
  // Asked for with Engine::settle_later: the event being handled (or the
  // start of the run) is done with, at the same instant.
  virtual void settle(Engine&) {}
};

// Watches tasks start and finish, e.g. to account memory.
class TaskObserver {
 public:
  virtual ~TaskObserver() = default;
  virtual void on_start(TaskId task, Time now) = 0;
  virtual void on_finish(TaskId task, Time now) = 0;
};

struct Timeline {
  std::vector<Time> start;
  std::vector<Time> end;
  Time makespan;
  std::uint64_t events = 0;  // events delivered to resources
};

class Engine {
 public:
  explicit Engine(const TaskGraph& graph);

  // Resource ids are handed out in call order; a task's `resource` field names one.
  ResourceId add_resource(Resource& resource);
  void add_observer(TaskObserver& observer);
  // Called every 1,024 events with (tasks finished, tasks in all), for a
  // progress line on long runs (an event can take milliseconds when it
  // re-solves the rates of many flows).
  void set_progress(std::function<void(std::size_t, std::size_t)> progress) { progress_ = std::move(progress); }

  // Runs until no event is left and hands over the timeline (moved out, not
  // copied: at millions of tasks a copy is hundreds of MB of fresh pages), so
  // an engine runs once. Throws std::runtime_error if a task never ran (a
  // dependency cycle or a task bound to a missing resource).
  Timeline run();

  // --- for resources ---
  Time now() const { return now_; }
  const TaskGraph& graph() const { return graph_; }
  void schedule(ResourceId owner, Time at, std::uint64_t token);
  // Drops every pending event of `owner` (lazily, by generation).
  void cancel_pending(ResourceId owner) { ++generation_[owner]; }
  // Calls resource.settle() once the event being handled is done with (its
  // handler and every call it made): a resource changed several times in
  // one instant then schedules once, for where the changes leave it.
  void settle_later(Resource& resource) { settle_.push_back(&resource); }
  void start(TaskId task);
  void finish(TaskId task);
  bool is_ready(TaskId task) const { return tasks_[task].state() == State::kReady; }
  bool is_running(TaskId task) const { return tasks_[task].state() == State::kRunning; }
  bool is_done(TaskId task) const { return tasks_[task].state() == State::kDone; }

 private:
  enum class State : std::uint8_t { kWaiting, kReady, kRunning, kDone };
  // What finishing a predecessor reads and writes of a task, side by side
  // in 8 bytes: successors are scattered over the graph (a collective's
  // participants are far apart in id), so each is one cache miss rather than
  // three. The pending count takes 30 bits of a word, the state the rest.
  static constexpr std::uint32_t kMaxPredecessors = (1u << 30) - 1;
  struct TaskState {
    std::uint32_t waiting_on : 30;  // predecessors not finished yet
    std::uint32_t state_bits : 2;   // a State
    ResourceId resource;
    State state() const { return static_cast<State>(state_bits); }
    void set(State s) { state_bits = static_cast<std::uint32_t>(s); }
  };
  static_assert(sizeof(TaskState) == 8);

  const TaskGraph& graph_;
  EventQueue queue_;
  std::vector<Resource*> resources_;
  std::vector<Resource*> settle_;  // settle_later's, in the order asked
  std::vector<std::uint32_t> generation_;
  std::vector<TaskObserver*> observers_;
  std::vector<TaskState> tasks_;
  Timeline timeline_;
  Time now_;
  std::size_t finished_ = 0;
  bool ran_ = false;
  std::function<void(std::size_t, std::size_t)> progress_;
};

}  // namespace trainsim::core
