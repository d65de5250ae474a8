#include "schedule/registry.hpp"

#include "schedule/breadth_first.hpp"
#include "schedule/dualpipe.hpp"
#include "schedule/dualpipe_v.hpp"
#include "schedule/gpipe.hpp"
#include "schedule/interleaved_one_f_one_b.hpp"
#include "schedule/one_f_one_b.hpp"
#include "schedule/two_bp.hpp"
#include "schedule/zero_bubble.hpp"
#include "schedule/zero_bubble_auto.hpp"
#include "schedule/zero_bubble_v.hpp"

namespace trainsim::schedule {

namespace {
std::vector<std::unique_ptr<Schedule>> make_all() {
  std::vector<std::unique_ptr<Schedule>> all;
  all.push_back(std::make_unique<GPipe>());
  all.push_back(std::make_unique<OneFOneB>());
  all.push_back(std::make_unique<InterleavedOneFOneB>());
  all.push_back(std::make_unique<TwoBP>());
  all.push_back(std::make_unique<GPipeTwoBP>());
  all.push_back(std::make_unique<ZeroBubbleH1>());
  all.push_back(std::make_unique<ZeroBubbleH2>());
  all.push_back(std::make_unique<ZeroBubbleAuto>("zb-1p", 1));
  all.push_back(std::make_unique<ZeroBubbleAuto>("zb-2p", 2));
  all.push_back(std::make_unique<ZeroBubbleV>());
  all.push_back(std::make_unique<DualPipe>());
  all.push_back(std::make_unique<DualPipeV>());
  all.push_back(std::make_unique<BreadthFirst>());
  return all;
}
}  // namespace

const std::vector<std::unique_ptr<Schedule>>& all_schedules() {
  static const std::vector<std::unique_ptr<Schedule>> all = make_all();
  return all;
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& s : all_schedules()) out.emplace_back(s->name());
    return out;
  }();
  return names;
}

const Schedule* find_schedule(std::string_view name) {
  for (const auto& s : all_schedules()) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

}  // namespace trainsim::schedule
