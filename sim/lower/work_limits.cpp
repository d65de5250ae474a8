#include "lower/work_limits.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace trainsim::lower {

namespace {

// Memory, all of a simulation together (task graph, task info, timeline,
// streams, collective instances, memory pools, the topology), as a cost per
// task and one per simulated GPU (its stream, pool, links and routes; the
// process's own few MiB come in here too): the whole process's peak resident
// size of full-fidelity runs with analytic collectives. An 8-layer GPT
// (tools/bench/gpt-8l-scaling.json) at 16,384 GPUs: 671,744 tasks, 153.2 MB;
// Llama 3 405B at 16,384 H100s: 9,506,816 tasks, 1,355.7 MB. The two give
// 136 bytes a task and 3,770 a GPU, which put Llama 3 405B at 131,072 GPUs
// (76.1 million tasks) at 10.85 GB, where it peaked at 10.78 GB. Both are
// rounded up for a margin: 144 and 4,096 (11.5 GB there). With flow
// collectives the flows' state adds to each task: the 8-layer GPT at 4,096
// GPUs, 167,936 tasks, 49.2 MB, is 201 bytes a task after the GPUs' share;
// rounded up.
constexpr double kBytesPerTask = 144.0;
constexpr double kBytesPerTaskWithFlows = 216.0;
constexpr double kBytesPerGpu = 4096.0;

constexpr double kGiB = 1073741824.0;

// MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read.
double available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0.0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

// The cgroup (v2) memory limit of this process in bytes, or 0 when there is
// none ("max") or it cannot be read.
double cgroup_limit_bytes() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string value;
  if (!(in >> value) || value == "max") return 0.0;
  char* end = nullptr;
  const double bytes = std::strtod(value.c_str(), &end);
  return end != value.c_str() && bytes > 0.0 ? bytes : 0.0;
}

}  // namespace

WorkEstimate work_estimate(long long pipelines, long long ranks, const PipelineWork& per_pipeline,
                           bool flow_collectives) {
  WorkEstimate w;
  w.pipelines = pipelines;
  w.gpus = pipelines * ranks;  // the plan's GPUs at most: far below 2^63
  w.tasks = static_cast<double>(pipelines) * per_pipeline.tasks;
  w.flow_steps = per_pipeline.flow_steps;
  w.bytes = w.tasks * (flow_collectives ? kBytesPerTaskWithFlows : kBytesPerTask) +
            static_cast<double>(w.gpus) * kBytesPerGpu;
  return w;
}

void check_work(const WorkEstimate& work, const WorkLimits& limits, const std::string& what, const std::string& instead) {
  const bool too_many_tasks = limits.tasks > 0 && work.tasks > static_cast<double>(limits.tasks);
  const bool too_much_memory = limits.bytes > 0.0 && work.bytes > limits.bytes;
  const bool too_many_flows = limits.flow_steps > 0.0 && work.flow_steps > limits.flow_steps;
  if (too_many_flows && !too_many_tasks && !too_much_memory) {
    throw WorkTooLarge(fmt::format("{} runs about {:.3g} flow steps in its data-parallel and expert-parallel "
                                   "collectives, more than the {:.3g} that simulate in about an hour; use "
                                   "options.collectives = \"analytic\" (NCCL's cost model; flows matter where "
                                   "collectives share links with other traffic), or fewer data-parallel replicas",
                                   what, work.flow_steps, limits.flow_steps));
  }
  if (!too_many_tasks && !too_much_memory) return;
  const std::string size =
      too_much_memory
          ? fmt::format("takes about {:.3g} tasks and {:.1f} GiB of memory, more than the {:.1f} GiB this machine "
                        "has available",
                        work.tasks, work.bytes / kGiB, limits.bytes / kGiB)
          : fmt::format("takes about {:.3g} tasks, more than the {} allowed", work.tasks, limits.tasks);
  throw WorkTooLarge(fmt::format("{} {}; {}", what, size, instead));
}

WorkLimits machine_limits() {
  static const WorkLimits limits = [] {
    double bytes = available_bytes();
    if (bytes <= 0.0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
    }
    // A container's or a Slurm job's own limit, when lower than the machine's.
    if (const double cgroup = cgroup_limit_bytes(); cgroup > 0.0 && (bytes <= 0.0 || cgroup < bytes)) bytes = cgroup;
    // Leave a fifth for the rest of the process and the machine.
    return WorkLimits{0, bytes * 0.8, kMaxFlowSteps};
  }();
  return limits;
}

}  // namespace trainsim::lower
