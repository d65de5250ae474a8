#include "core/engine.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::core {

Engine::Engine(const TaskGraph& graph) : graph_(graph) {
  if (!graph.finalized()) throw std::logic_error("Engine: TaskGraph not finalized");
  const std::size_t n = graph.size();
  tasks_.resize(n);
  for (TaskId t = 0; t < n; ++t) {
    if (graph.predecessors(t) > kMaxPredecessors) {
      throw std::runtime_error("Engine: task " + std::to_string(t) + " waits on more than " +
                               std::to_string(kMaxPredecessors) + " tasks");
    }
    tasks_[t] = {graph.predecessors(t), static_cast<std::uint32_t>(State::kWaiting), graph.task(t).resource};
  }
  timeline_.start.assign(n, Time::zero());
  timeline_.end.assign(n, Time::zero());
}

ResourceId Engine::add_resource(Resource& resource) {
  resources_.push_back(&resource);
  generation_.push_back(0);
  return static_cast<ResourceId>(resources_.size() - 1);
}

void Engine::add_observer(TaskObserver& observer) { observers_.push_back(&observer); }

void Engine::schedule(ResourceId owner, Time at, std::uint64_t token) {
  if (at < now_) throw std::logic_error("Engine::schedule: an event in the past");
  queue_.push(at, owner, generation_[owner], token);
}

void Engine::start(TaskId task) {
  tasks_[task].set(State::kRunning);
  timeline_.start[task] = now_;
  for (TaskObserver* o : observers_) o->on_start(task, now_);
}

void Engine::finish(TaskId task) {
  tasks_[task].set(State::kDone);
  timeline_.end[task] = now_;
  if (now_ > timeline_.makespan) timeline_.makespan = now_;
  ++finished_;
  for (TaskObserver* o : observers_) o->on_finish(task, now_);
  graph_.for_each_successor(task, [this](TaskId next) {
    TaskState& t = tasks_[next];
    if (--t.waiting_on == 0) {
      t.set(State::kReady);
      resources_[t.resource]->on_ready(next, *this);
    }
  });
}

Timeline Engine::run() {
  if (ran_) throw std::logic_error("Engine::run: an engine runs once");
  ran_ = true;
  for (TaskId t = 0; t < graph_.size(); ++t) {
    if (graph_.task(t).resource >= resources_.size()) {
      throw std::runtime_error("Engine: task " + std::to_string(t) + " names resource " +
                               std::to_string(graph_.task(t).resource) + ", which does not exist");
    }
  }
  const auto settle = [this] {
    // Settling schedules events, never asks to settle again.
    for (Resource* r : settle_) r->settle(*this);
    settle_.clear();
  };
  for (TaskId t = 0; t < graph_.size(); ++t) {
    if (tasks_[t].waiting_on == 0 && tasks_[t].state() == State::kWaiting) {
      tasks_[t].set(State::kReady);
      resources_[tasks_[t].resource]->on_ready(t, *this);
    }
  }
  settle();
  while (!queue_.empty()) {
    const Event ev = queue_.pop();
    if (ev.generation != generation_[ev.owner]) continue;  // cancelled
    now_ = ev.time;
    ++timeline_.events;
    resources_[ev.owner]->on_event(ev.token, *this);
    if (!settle_.empty()) settle();
    if (progress_ && (timeline_.events & 0x3FF) == 0) progress_(finished_, graph_.size());
  }
  if (finished_ != graph_.size()) {
    throw std::runtime_error("Engine: " + std::to_string(graph_.size() - finished_) +
                             " tasks never ran (a dependency cycle or a stalled resource)");
  }
  return std::move(timeline_);
}

}  // namespace trainsim::core
