#include "sweep/runner.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/types.h>  // ssize_t, jemalloc's type for a decay time

#include "driver/plan_cache.hpp"
#include "driver/whatif.hpp"
#include "schedule/check.hpp"
#include "sweep/bound.hpp"

// jemalloc's control interface where the program links jemalloc (the command
// line and the benchmarks: sim/cli/huge_pages.cpp), null where it does not
// (the Python module, the sanitizer build, the tests).
extern "C" int mallctl(const char* name, void* old_value, std::size_t* old_size, void* new_value,
                       std::size_t new_size) __attribute__((weak));

namespace trainsim::sweep {

namespace {

Result blank(const Spec& spec, const Candidate& c) {
  Result r;
  r.index = c.index;
  r.key = c.key;
  r.cluster = spec.cluster_labels[c.cluster];
  r.plan = c.plan;
  return r;
}

// Runs `body(i)` for i in [0, n) on `jobs` threads, the calling thread among them.
template <typename Body>
void parallel_for(std::size_t n, int jobs, const Body& body) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::jthread> threads;
  const std::size_t extra = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(jobs, 1))) - (n > 0 ? 1 : 0);
  for (std::size_t t = 0; t < extra; ++t) threads.emplace_back(work);
  work();
}

}  // namespace

void keep_freed_memory() {
  if (mallctl != nullptr) {
    // jemalloc hands a freed page back to the system some 10 s after its
    // last use (its dirty and muzzy decay): never, here, for the arenas made
    // from now on and for each made so far (one not made yet refuses the
    // call, and takes the first setting when it is made).
    ssize_t never = -1;
    mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &never, sizeof never);
    mallctl("arenas.muzzy_decay_ms", nullptr, nullptr, &never, sizeof never);
    unsigned arenas = 0;
    std::size_t size = sizeof arenas;
    if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) == 0) {
      for (unsigned i = 0; i < arenas; ++i) {
        for (const char* decay : {"dirty", "muzzy"}) {
          const std::string name = "arena." + std::to_string(i) + "." + decay + "_decay_ms";
          mallctl(name.c_str(), nullptr, nullptr, &never, sizeof never);
        }
      }
    }
  }
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);  // large blocks from the heap, reused
  mallopt(M_TRIM_THRESHOLD, -1);       // never trim the heap
#endif
}

// The plan's stage costs under a name that leaves its schedule out but for
// the schedule's placement: plans of one cluster setting that differ only in
// a schedule of the same placement cost the same (workload::stage_costs reads
// the schedule only through Plan::placement()).
std::string costs_key(const Candidate& c) {
  workload::Plan p = c.plan;
  p.schedule = "placement:" + std::string(schedule::placement_name(c.plan.placement()));
  return std::to_string(c.cluster) + " " + plan_key("", p);
}

namespace {

// What a sweep asks of each plan's what-if: the same figures with less
// work, the totals alone.
driver::Controls sweep_controls(const lower::WorkLimits& limits, driver::PlanCache* cache) {
  driver::Controls controls;
  controls.limits = limits;
  controls.cache = cache;
  controls.merge_bucket_trains = true;
  controls.memory_timelines = false;
  controls.task_info = false;
  return controls;
}

void take_figures(Result& r, const report::Summary& s) {
  r.status = s.oom ? Status::kOom : Status::kOk;
  r.iteration_time_s = s.iteration_time_s;
  r.tokens_per_s = s.tokens_per_s;
  r.mfu = s.mfu;
  r.bubble_fraction = s.bubble_fraction;
  r.peak_memory_bytes = s.peak_memory_bytes;
}

// A plan with the same figures as its neighbour but for what it
// recomputes: run beside it (run_alike).
std::string alike_key(const Candidate& c) {
  workload::Plan p = c.plan;
  p.recompute = workload::Recompute::kNone;
  return std::to_string(c.cluster) + " " + plan_key("", p);
}

// Plans `group` that differ only in what they recompute (one alone
// included), in a setting of a pipeline model, each with its result in
// order: a plan whose simulation an earlier one ran (another schedule that
// lays out the same program) takes that one's figures; one lowering serves
// those left that make the same tasks (driver::simulate_alike). Each plan
// gets the figures, or the error, it gets run alone.
std::vector<Result> run_alike(const Spec& spec, const std::vector<const Candidate*>& group,
                              const lower::WorkLimits& limits, driver::PlanCache& cache) {
  const driver::Controls controls = sweep_controls(limits, &cache);
  std::vector<Result> results;
  std::vector<config::Scenario> scenarios;
  std::vector<std::string> keys;
  for (const Candidate* c : group) {
    results.push_back(blank(spec, *c));
    scenarios.push_back(spec.settings[c->cluster]);
    scenarios.back().plan = c->plan;
    keys.push_back(costs_key(*c));
  }
  std::vector<driver::Prepared> prepared;
  std::vector<std::size_t> simulated;  // positions in `group`
  for (std::size_t j = 0; j < group.size(); ++j) {
    try {
      driver::Controls own = controls;
      own.costs_key = keys[j];
      driver::Prepared p = driver::prepare(scenarios[j], own);
      if (const auto same = cache.same_simulation(keys[j], p.checked)) {
        take_figures(results[j], *same);
      } else {
        prepared.push_back(std::move(p));
        simulated.push_back(j);
      }
    } catch (const std::exception& e) {
      results[j].status = Status::kFailed;
      results[j].error = e.what();
    }
  }
  if (simulated.empty()) return results;
  std::vector<const config::Scenario*> alike;
  std::vector<std::shared_ptr<const driver::CheckedProgram>> programs;
  for (std::size_t m = 0; m < simulated.size(); ++m) {
    alike.push_back(&scenarios[simulated[m]]);
    programs.push_back(prepared[m].checked);
  }
  std::vector<char> done(simulated.size(), 0);
  try {
    driver::simulate_alike(alike, std::move(prepared), controls, [&](std::size_t m, driver::WhatIf&& w) {
      const std::size_t j = simulated[m];
      const report::Summary s = driver::summarize(scenarios[j], w, spec.file, report::Detail::kTotals);
      cache.remember(keys[j], programs[m], s);
      take_figures(results[j], s);
      done[m] = 1;
    });
  } catch (const std::exception& e) {
    if (group.size() == 1) {
      results[0].status = Status::kFailed;
      results[0].error = e.what();
      return results;
    }
    // One of them failed: each not yet done alone, for its own figures or
    // its own error.
    for (std::size_t m = 0; m < simulated.size(); ++m) {
      const std::size_t j = simulated[m];
      if (!done[m]) results[j] = run_alike(spec, {group[j]}, limits, cache).front();
    }
  }
  return results;
}

}  // namespace

Result run_one(const Spec& spec, const Candidate& c, const lower::WorkLimits& limits, driver::PlanCache* cache) {
  config::Scenario sc = spec.settings[c.cluster];
  if (cache != nullptr && !sc.layer_model) return run_alike(spec, {&c}, limits, *cache).front();
  Result r = blank(spec, c);
  sc.plan = c.plan;
  try {
    driver::Controls controls = sweep_controls(limits, cache);
    if (cache != nullptr) controls.costs_key = costs_key(c);
    const driver::WhatIf w = driver::simulate(sc, controls);
    take_figures(r, driver::summarize(sc, w, spec.file, report::Detail::kTotals));  // all a sweep keeps
  } catch (const std::exception& e) {
    r.status = Status::kFailed;
    r.error = e.what();
  }
  return r;
}

Outcome run(const Spec& spec, const std::vector<Candidate>& plans, const RunOptions& options) {
  Outcome out;
  out.results.resize(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) out.results[i] = blank(spec, plans[i]);

  // A GPU sped up by options.gpu_speed could beat the bound: no pruning then.
  bool prune = options.prune_top.has_value();
  for (const auto& s : spec.settings) {
    for (const auto& g : s.options.gpu_speed) prune = prune && g.factor <= 1.0;
  }

  std::vector<std::size_t> order(plans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (prune) {
    BoundCache cache;
    parallel_for(plans.size(), options.jobs, [&](std::size_t i) {
      const Candidate& c = plans[i];
      out.results[i].bound_s = cache.bound_s(c.cluster, spec.settings[c.cluster], c.plan);
    });
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return out.results[a].bound_s < out.results[b].bound_s;
    });
  } else {
    // Plans that run one schedule's program (the same pipeline shape and
    // micro-batches, and ZeRO-3's sharding or not, whatever tp and
    // micro-batch size give them) run one after another, so that the cache
    // builds each program once; among them, in the order enumerated (each
    // plan's schedules, ZeRO stages and recompute modes together, which
    // share stage costs). Results keep their places.
    const auto program_group = [&](std::size_t i) {
      const workload::Plan& p = plans[i].plan;
      return std::make_tuple(plans[i].cluster, p.pp, p.vp, p.microbatches(), p.zero_stage == 3);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return program_group(a) < program_group(b); });
  }

  std::atomic<std::size_t> done{0};
  std::atomic<bool> finished{false};
  std::mutex mutex;
  std::condition_variable wake;
  std::jthread reporter;
  if (options.progress) {
    reporter = std::jthread([&] {
      std::unique_lock lock(mutex);
      while (!finished) {
        options.progress(done.load(), plans.size());
        wake.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished.load(); });
      }
      options.progress(done.load(), plans.size());
    });
  }

  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };
  // Plans run `jobs` at a time: each gets its share of the machine's memory.
  lower::WorkLimits limits = lower::machine_limits();
  limits.bytes /= std::max(options.jobs, 1);
  const std::size_t batch = prune ? std::max<std::size_t>(options.batch, 1) : std::max<std::size_t>(plans.size(), 1);
  driver::PlanCache cache;  // the plans' shared programs and stage costs
  std::vector<double> best;  // fitting iteration times so far, for the K-th best
  for (std::size_t start = 0; start < order.size() && !stopped(); start += batch) {
    const std::size_t end = std::min(order.size(), start + batch);
    if (prune && best.size() >= static_cast<std::size_t>(*options.prune_top)) {
      std::nth_element(best.begin(), best.begin() + (*options.prune_top - 1), best.end());
      const double threshold = best[*options.prune_top - 1];
      // Sorted by bound: the first plan past the threshold ends the sweep.
      if (out.results[order[start]].bound_s > threshold) {
        for (std::size_t i = start; i < order.size(); ++i) out.results[order[i]].status = Status::kPruned;
        out.pruned += order.size() - start;
        done += order.size() - start;
        break;
      }
      for (std::size_t i = start; i < end; ++i) {
        Result& r = out.results[order[i]];
        if (r.bound_s > threshold) r.status = Status::kPruned;
      }
    }
    // Neighbours that differ only in what they recompute run as one group
    // (run_alike), on one thread.
    std::vector<std::vector<std::size_t>> groups;
    std::string last_key;
    for (std::size_t k = start; k < end; ++k) {
      const std::size_t i = order[k];
      if (out.results[i].status == Status::kPruned) continue;
      std::string key = alike_key(plans[i]);
      if (groups.empty() || key != last_key) groups.emplace_back();
      groups.back().push_back(i);
      last_key = std::move(key);
    }
    parallel_for(groups.size(), options.jobs, [&](std::size_t g) {
      if (stopped()) return;
      std::vector<const Candidate*> group;
      for (std::size_t i : groups[g]) group.push_back(&plans[i]);
      std::vector<Result> results;
      if (spec.settings[plans[groups[g][0]].cluster].layer_model) {
        for (const Candidate* c : group) results.push_back(run_one(spec, *c, limits, &cache));
      } else {
        results = run_alike(spec, group, limits, cache);
      }
      for (std::size_t n = 0; n < groups[g].size(); ++n) {
        const double bound = out.results[groups[g][n]].bound_s;
        out.results[groups[g][n]] = std::move(results[n]);
        out.results[groups[g][n]].bound_s = bound;
      }
      done += groups[g].size();
    });
    for (std::size_t i = start; i < end; ++i) {
      const Result& r = out.results[order[i]];
      if (r.status == Status::kOk) best.push_back(r.iteration_time_s);
      if (r.status == Status::kPruned) {
        ++out.pruned;
        ++done;
      }
    }
  }
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  wake.notify_all();
  if (reporter.joinable()) reporter.join();

  for (const Result& r : out.results) out.not_run += r.status == Status::kNotRun ? 1 : 0;
  out.interrupted = stopped() && out.not_run > 0;
  rank(out.results);
  return out;
}

}  // namespace trainsim::sweep
