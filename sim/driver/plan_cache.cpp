#include "driver/plan_cache.hpp"

#include <bit>
#include <tuple>
#include <utility>

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

std::shared_ptr<const CheckedProgram> PlanCache::equal_program(const ProgramKey& key,
                                                               const schedule::Program& program,
                                                               std::uint64_t digest) {
  constexpr std::size_t kTimes = std::tuple_size_v<ProgramKey> - 1;  // the last field
  const auto but_times = [](const ProgramKey& k) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tie(std::get<I>(k)...); }(
        std::make_index_sequence<kTimes>{});
  };
  std::vector<std::shared_ptr<const CheckedProgram>> candidates;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [k, entry] : programs_.entries) {
      if (entry->digest == digest && but_times(k) == but_times(key)) candidates.push_back(entry);
    }
  }
  // Compared outside the lock: a digest only says the programs are likely equal.
  for (const auto& c : candidates) {
    if (c->program.ranks == program.ranks) return c;  // (a Program, not yet a CheckedProgram)
  }
  return nullptr;
}

std::shared_ptr<const workload::StageCosts> PlanCache::costs(const std::string& key,
                                                             const std::function<workload::StageCosts()>& make) {
  return get(costs_, cost_room_, key, make);
}

std::uint64_t digest_of(const schedule::Program& program) {
  // Each word mixed in by a multiply and a rotation (the 64-bit golden-ratio
  // constant): enough to tell programs apart, which are then compared in full.
  std::uint64_t h = program.ranks.size();
  const auto mix = [&](std::uint64_t v) { h = std::rotl((h ^ v) * 0x9e3779b97f4a7c15ull, 29); };
  for (const auto& rank : program.ranks) {
    mix(rank.size());
    for (const schedule::Action& a : rank) {
      mix(static_cast<std::uint64_t>(a.op) << 32 ^ static_cast<std::uint32_t>(a.stage));
      mix(static_cast<std::uint32_t>(a.microbatch));
    }
  }
  return h;
}

std::shared_ptr<const report::Summary> PlanCache::same_simulation(const std::string& costs_key,
                                                                  const std::shared_ptr<const CheckedProgram>& program) {
  std::vector<Simulated> candidates;
  {
    std::lock_guard lock(mutex_);
    for (const Simulated& s : simulated_) {
      if (s.program->digest == program->digest && s.costs_key == costs_key) candidates.push_back(s);
    }
  }
  // Compared outside the lock.
  for (const Simulated& s : candidates) {
    if (same_program(*s.program, *program)) return s.summary;
  }
  return nullptr;
}

void PlanCache::remember(const std::string& costs_key, std::shared_ptr<const CheckedProgram> program,
                         const report::Summary& summary) {
  std::size_t bytes = program->wiring.bytes();
  for (const auto& rank : program->program.ranks) bytes += rank.size() * sizeof(schedule::Action);
  if (bytes > kSummaryProgramBytes) return;
  auto kept = std::make_shared<const report::Summary>(summary);
  std::lock_guard lock(mutex_);
  simulated_.push_front({costs_key, std::move(program), std::move(kept), bytes});
  simulated_bytes_ += bytes;
  while (simulated_.size() > summary_room_ || simulated_bytes_ > kSummaryProgramBytes) {
    simulated_bytes_ -= simulated_.back().bytes;
    simulated_.pop_back();
  }
}

}  // namespace trainsim::driver
