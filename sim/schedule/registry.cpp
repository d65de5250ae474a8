#include "schedule/registry.hpp"

#include "schedule/gpipe.hpp"
#include "schedule/one_f_one_b.hpp"

namespace trainsim::schedule {

namespace {
std::vector<std::unique_ptr<Schedule>> make_all() {
  std::vector<std::unique_ptr<Schedule>> all;
  all.push_back(std::make_unique<GPipe>());
  all.push_back(std::make_unique<OneFOneB>());
  return all;
}
}  // namespace

const std::vector<std::unique_ptr<Schedule>>& all_schedules() {
  static const std::vector<std::unique_ptr<Schedule>> all = make_all();
  return all;
}

const Schedule* find_schedule(std::string_view name) {
  for (const auto& s : all_schedules()) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

}  // namespace trainsim::schedule
