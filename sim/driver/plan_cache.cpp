#include "driver/plan_cache.hpp"

namespace trainsim::driver {

template <typename Key, typename Value, typename Make>
std::shared_ptr<const Value> PlanCache::get(Lru<Key, Value>& lru, std::size_t room, const Key& key, const Make& make) {
  {
    std::lock_guard lock(mutex_);
    for (auto it = lru.entries.begin(); it != lru.entries.end(); ++it) {
      if (it->first == key) {
        lru.entries.splice(lru.entries.begin(), lru.entries, it);
        return lru.entries.front().second;
      }
    }
  }
  // Made outside the lock: another thread may make the same entry meanwhile,
  // the same value either way (every maker here is deterministic).
  auto made = std::make_shared<const Value>(make());
  std::lock_guard lock(mutex_);
  lru.entries.emplace_front(key, made);
  while (lru.entries.size() > room) lru.entries.pop_back();
  return made;
}

std::shared_ptr<const CheckedProgram> PlanCache::program(const ProgramKey& key,
                                                         const std::function<CheckedProgram()>& make) {
  return get(programs_, program_room_, key, make);
}

std::shared_ptr<const workload::StageCosts> PlanCache::costs(const std::string& key,
                                                             const std::function<workload::StageCosts()>& make) {
  return get(costs_, cost_room_, key, make);
}

}  // namespace trainsim::driver
