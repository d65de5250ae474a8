#include "sweep/space.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <functional>
#include <optional>
#include <tuple>

#include "config/load.hpp"
#include "core/checked.hpp"
#include "lower/a2a_pairs.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"

namespace trainsim::sweep {

namespace {

std::vector<int> divisors(int n, int limit) {
  std::vector<int> d;
  for (int i = 1; i <= std::min(n, limit); ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

template <typename T>
std::vector<T> values_or(const Axis<T>& axis, std::vector<T> automatic) {
  return axis.automatic ? automatic : axis.values;
}

// Bounds on a sweep: the combinations its axes make (enumerated by counting
// whole refused subtrees, so 10^12 of them take well under a second), and
// the valid plans it holds (each kept in memory, each simulated: a million
// take half an hour at docs/sweeps.md's 600 plans/s).
constexpr long long kMaxCombinations = 1'000'000'000'000;
constexpr std::size_t kMaxPlans = 1'000'000;

// Where a listed value went: used by some valid plan, or the first reason it was refused.
struct Use {
  bool used = false;
  std::string why;
};

}  // namespace

std::string plan_key(const std::string& cluster_label, const workload::Plan& p) {
  // The ZeRO-3 and overlap settings only when they differ from the defaults.
  std::string extra;
  if (p.zero_stage == 3 && p.fsdp_shard_size > 0) extra += fmt::format(" shard={}", p.fsdp_shard_size);
  if (p.zero_stage == 3 && !p.reshard_after_forward) extra += " reshard=off";
  if (p.overlap.tp_comm) extra += p.overlap.tp_comm_backward ? " tpoverlap=on" : " tpoverlap=forward";
  if (p.cp > 1) extra += fmt::format(" cp={}", p.cp);
  if (p.ep > 1) extra += fmt::format(" ep={}", p.ep);
  if (p.etp > 1) extra += fmt::format(" etp={}", p.etp);
  return fmt::format("{}tp={} pp={} dp={} vp={} mbs={} {} zero={} sp={} rc={}{}",
                     cluster_label.empty() ? "" : cluster_label + " ", p.tp, p.pp, p.dp, p.vp, p.microbatch_size,
                     p.schedule, p.zero_stage, p.sequence_parallel ? "on" : "off", workload::recompute_name(p.recompute),
                     extra);
}

Space enumerate(const Spec& spec) {
  Space space;
  const bool labelled = spec.settings.size() > 1;
  // Listed values (not "auto") must each serve some valid plan.
  std::vector<std::pair<std::string, std::vector<Use>>> uses;  // in axis order
  std::map<std::string, bool> scalar;
  auto track = [&](const char* name, const auto& axis) {
    scalar[name] = axis.scalar;
    if (axis.listed) uses.emplace_back(name, std::vector<Use>(axis.values.size()));
  };
  auto find_use = [&](const std::string& axis) -> std::vector<Use>* {
    for (auto& [name, list] : uses) {
      if (name == axis) return &list;
    }
    return nullptr;
  };
  track("tp", spec.tp);
  track("pp", spec.pp);
  track("dp", spec.dp);
  track("cp", spec.cp);
  track("vp", spec.vp);
  track("microbatch_size", spec.microbatch_size);
  track("schedule", spec.schedule);
  track("zero_stage", spec.zero_stage);
  track("sequence_parallel", spec.sequence_parallel);
  track("recompute", spec.recompute);
  track("fsdp_shard_size", spec.fsdp_shard_size);
  track("reshard_after_forward", spec.reshard_after_forward);
  track("tp_comm_overlap", spec.tp_comm_overlap);
  track("ep", spec.ep);
  track("etp", spec.etp);

  // A schedule's consent depends only on (schedule, pp, vp, micro-batches),
  // and on options.moe_a2a_overlap, which needs whole backwards (B) to pair
  // and pairs that do not wait for themselves (driver::prepare's checks).
  std::map<std::tuple<std::string, int, int, int, bool>, std::optional<std::string>> consent;
  auto refusal = [&](const std::string& name, int pp, int vp, int m,
                     bool a2a_overlap) -> const std::optional<std::string>& {
    const auto k = std::make_tuple(name, pp, vp, m, a2a_overlap);
    if (auto it = consent.find(k); it != consent.end()) return it->second;
    std::optional<std::string> why;
    try {
      const schedule::Schedule* s = schedule::find_schedule(name);
      schedule::Shape shape = schedule::Shape::placed(s->placement(), pp, vp, m);
      shape.extra_warmup = a2a_overlap ? 1 : 0;
      const schedule::Program program = s->program(shape);
      if (a2a_overlap) {
        const schedule::Program sent = lower::with_paired_sends(schedule::with_communication(program, shape));
        switch (lower::a2a_waits(name, shape, sent).refusal) {
          case lower::A2aRefusal::kRuns: break;
          case lower::A2aRefusal::kNoWholeBackward:
            why = fmt::format("schedule {} splits every backward, which options.moe_a2a_overlap cannot pair", name);
            break;
          case lower::A2aRefusal::kPipelineWithoutChunks:
            why = fmt::format("schedule {} over pp > 1 with vp = 1, and options.moe_a2a_overlap needs virtual stages", name);
            break;
          case lower::A2aRefusal::kPairsWaitOnThemselves:
            why = fmt::format("schedule {} pairs passes that wait for each other under options.moe_a2a_overlap", name);
            break;
        }
      }
    } catch (const std::exception& e) {
      why = fmt::format("schedule {} cannot lay out the shape", name);
    }
    return consent.emplace(k, std::move(why)).first->second;
  };

  const std::string kDpDiffers = "tp x pp x dp differs from the GPU count";
  const std::string kDpCpDiffers = "tp x cp x pp x dp differs from the GPU count";
  std::map<int, std::size_t> dp_index;  // a listed dp value -> its place in the list
  for (std::size_t i = 0; i < spec.dp.values.size(); ++i) dp_index.emplace(spec.dp.values[i], i);
  bool dp_refused_as_differing = false;

  const std::vector<std::string>& all_schedules = schedule::schedule_names();

  for (std::size_t c = 0; c < spec.settings.size(); ++c) {
    const config::Scenario& setting = spec.settings[c];
    const int gpus = setting.cluster.gpus();
    const int per_node = setting.cluster.node.gpus_per_node;
    const auto& model = setting.model;
    const std::string label = labelled ? spec.cluster_labels[c] : "";

    const auto tps = values_or(spec.tp, divisors(gpus, spec.allow_cross_node_tp ? gpus : per_node));
    const auto pps = values_or(spec.pp, [&] {
      std::vector<int> v;
      for (int d : divisors(gpus, gpus)) {
        if (model.layers % d == 0) v.push_back(d);
      }
      return v;
    }());
    // Left out, no context parallelism; "auto" the powers of two up to a node's GPUs.
    const auto cps = values_or(spec.cp, [&] {
      std::vector<int> v;
      for (int c = 1; c <= per_node; c *= 2) v.push_back(c);
      return v;
    }());
    const auto vps = values_or(spec.vp, {1, 2, 4, 8});
    const auto mbss = values_or(spec.microbatch_size, [&] {
      std::vector<int> v;
      for (int b = 1; b <= spec.global_batch && b <= 64; b *= 2) v.push_back(b);
      return v;
    }());
    const auto scheds = values_or(spec.schedule, all_schedules);
    const auto zeros = values_or(spec.zero_stage, {0, 1, 2, 3});
    const auto sps = values_or(spec.sequence_parallel, {false, true});
    // Whether the axis has sequence parallelism off, the plan tp 1 with it on duplicates.
    const bool sp_off_listed = std::find(sps.begin(), sps.end(), false) != sps.end();
    const auto rcs = values_or(spec.recompute,
                               {workload::Recompute::kNone, workload::Recompute::kSelective, workload::Recompute::kFull});
    const auto shards = values_or(spec.fsdp_shard_size, {0, kNodeShardGroup});
    const auto reshards = values_or(spec.reshard_after_forward, {true, false});
    // Left out, the sweep's options.tp_comm_overlap holds for every plan.
    const auto overlaps = spec.tp_comm_overlap.listed || spec.tp_comm_overlap.automatic
                              ? values_or(spec.tp_comm_overlap, {false, true})
                              : std::vector<bool>{setting.plan.overlap.tp_comm};
    // Expert tensor parallelism: "auto" 1, 2, 4 ... up to a node's GPUs.
    const auto etps = values_or(spec.etp, [&] {
      std::vector<int> v;
      for (int e = 1; e <= per_node; e *= 2) v.push_back(e);
      return v;
    }());
    // Expert parallelism: "auto" every divisor of the experts (1 for a dense model).
    const auto eps = values_or(spec.ep, [&] {
      std::vector<int> v;
      const int experts = std::max(1, model.moe.experts);
      for (int e = 1; e <= experts; ++e) {
        if (experts % e == 0) v.push_back(e);
      }
      return v;
    }());
    // Every count below is a product of these sizes: checked once here, so
    // that none of them wraps, and so that an enumeration stays in seconds.
    const std::size_t dps_most = spec.dp.automatic ? 1 : spec.dp.values.size();
    const std::initializer_list<long long> sizes = {
        static_cast<long long>(tps.size()),   static_cast<long long>(pps.size()),
        static_cast<long long>(cps.size()),
        static_cast<long long>(dps_most),     static_cast<long long>(vps.size()),
        static_cast<long long>(mbss.size()),  static_cast<long long>(scheds.size()),
        static_cast<long long>(zeros.size()), static_cast<long long>(sps.size()),
        static_cast<long long>(rcs.size()),   static_cast<long long>(shards.size()),
        static_cast<long long>(reshards.size()), static_cast<long long>(overlaps.size()),
        static_cast<long long>(eps.size()),   static_cast<long long>(etps.size())};
    const auto combinations = core::checked_product(sizes);
    if (!combinations || *combinations > kMaxCombinations - space.combinations) {
      throw config::ConfigError(fmt::format("{}: axes: {} combinations of plan values{}, more than the {} a sweep "
                                            "takes; list fewer values",
                                            spec.file, core::product_text(sizes),
                                            labelled ? " on " + spec.cluster_labels[c] : "", kMaxCombinations));
    }
    const long long tail = static_cast<long long>(scheds.size()) * zeros.size() * sps.size() * rcs.size() *
                           shards.size() * reshards.size() * overlaps.size() * eps.size() * etps.size();

    // Marks `n` combinations invalid for `why`, and the listed values in `at` as refused for it.
    using At = std::vector<std::pair<const char*, std::size_t>>;
    auto refuse = [&](long long n, const std::string& why, const At& at) {
      space.invalid[why] += n;
      space.combinations += n;
      for (const auto& [axis, i] : at) {
        auto* list = find_use(axis);
        if (list != nullptr && (*list)[i].why.empty()) (*list)[i].why = why;
      }
    };

    for (std::size_t ti = 0; ti < tps.size(); ++ti) {
      const int tp = tps[ti];
      const std::size_t dps_n = spec.dp.automatic ? 1 : spec.dp.values.size();
      const long long below_tp =
          static_cast<long long>(cps.size()) * pps.size() * dps_n * vps.size() * mbss.size() * tail;
      // No pp and dp make such a tp whole, so allow_cross_node_tp would not help.
      if (gpus % tp != 0) {
        refuse(below_tp, "tp does not divide the GPU count", {{"tp", ti}});
        continue;
      }
      if (!spec.allow_cross_node_tp && (tp > per_node || per_node % tp != 0)) {
        refuse(below_tp, "tp group would cross a node (set allow_cross_node_tp)", {{"tp", ti}});
        continue;
      }
      if (model.heads % tp != 0 || model.kv_heads % tp != 0 || (!model.moe.enabled() && model.ffn % tp != 0)) {
        refuse(below_tp, "model.heads, kv_heads or ffn does not divide by tp", {{"tp", ti}});
        continue;
      }
      // Every (cp, pp) pair, cp the slower-changing.
      for (std::size_t k = 0; k < cps.size() * pps.size(); ++k) {
        const std::size_t ci = k / pps.size(), pi = k % pps.size();
        const int cp = cps[ci], pp = pps[pi];
        const long long below_pp = static_cast<long long>(dps_n) * vps.size() * mbss.size() * tail;
        if (gpus % (static_cast<long long>(tp) * cp * pp) != 0) {
          refuse(below_pp, cp > 1 ? kDpCpDiffers : kDpDiffers, {{"tp", ti}, {"pp", pi}, {"cp", ci}});
          continue;
        }
        const int derived = gpus / (tp * cp * pp);
        const long long below_dp = static_cast<long long>(vps.size()) * mbss.size() * tail;
        // Only the dp that makes the GPU count runs; the other listed values
        // are refused together (one lookup, not a pass over the list).
        std::vector<std::size_t> dp_at;
        if (spec.dp.automatic) {
          dp_at.push_back(0);
        } else if (const auto it = dp_index.find(derived); it != dp_index.end()) {
          dp_at.push_back(it->second);
        }
        if (const auto others = static_cast<long long>(dps_n - dp_at.size()); others > 0) {
          refuse(others * below_dp, cp > 1 ? kDpCpDiffers : kDpDiffers, {{"tp", ti}, {"pp", pi}, {"cp", ci}});
          dp_refused_as_differing = true;
        }
        for (const std::size_t di : dp_at) {
          const int dp = derived;
          for (std::size_t vi = 0; vi < vps.size(); ++vi) {
            const int vp = vps[vi];
            const long long below_vp = static_cast<long long>(mbss.size()) * tail;
            // One rank has nothing to interleave: `trainsim run` takes such a
            // plan and gives the vp = 1 plan's time (give or take a few
            // launches), so a sweep leaves it out rather than rank it twice.
            if (pp == 1 && vp > 1) {
              refuse(below_vp, "vp > 1 with pp = 1 repeats the vp = 1 plan", {{"pp", pi}, {"vp", vi}});
              continue;
            }
            if (model.layers % (static_cast<long long>(pp) * vp) != 0) {
              refuse(below_vp, "model.layers does not divide into pp x vp stages", {{"pp", pi}, {"vp", vi}});
              continue;
            }
            for (std::size_t bi = 0; bi < mbss.size(); ++bi) {
              const int mbs = mbss[bi];
              if (spec.global_batch % (static_cast<long long>(dp) * mbs) != 0) {
                refuse(tail, "global_batch is not a multiple of dp x microbatch_size",
                       {{"dp", di}, {"microbatch_size", bi}});
                continue;
              }
              const int m = spec.global_batch / (dp * mbs);
              // The config loader's own checks (e.g. the simulator's size limit).
              // Some (a custom network's reach) follow where the stages run, so
              // they are asked once per placement the schedules use.
              std::map<schedule::Placement, std::optional<std::string>> config_refusal;
              for (const std::string& name : scheds) {
                const schedule::Placement placement = schedule::find_schedule(name)->placement();
                if (config_refusal.count(placement)) continue;
                config::Scenario probe;
                probe.file = spec.file;
                probe.cluster = setting.cluster;
                probe.model = setting.model;
                probe.options = setting.options;
                probe.plan = setting.plan;
                // The overlap settings depend on the zero stage and sequence
                // parallelism chosen below: checked there, plan by plan.
                probe.plan.overlap.tp_comm = false;
                probe.plan.overlap.param_gather = false;
                // So are the fixed keys that need a ZeRO stage (FP8 gathers,
                // offloading, ZeRO-3's knobs) or a recompute mode (CPU
                // checkpointing): checked with each plan whole, below.
                const workload::Plan defaults;
                probe.plan.checkpoint_in_cpu = defaults.checkpoint_in_cpu;
                probe.plan.fp8_param_gather = defaults.fp8_param_gather;
                probe.plan.offload = defaults.offload;
                probe.plan.fsdp_unit_layers = defaults.fsdp_unit_layers;
                probe.plan.fsdp_prefetch = defaults.fsdp_prefetch;
                probe.plan.fsdp_prefetch_params = defaults.fsdp_prefetch_params;
                probe.plan.fsdp_max_live_params = defaults.fsdp_max_live_params;
                probe.plan.fsdp_max_reuse_distance = defaults.fsdp_max_reuse_distance;
                probe.plan.fsdp_copy_out = defaults.fsdp_copy_out;
                probe.plan.fsdp_fp32_shards = defaults.fsdp_fp32_shards;
                probe.plan.fsdp_separate_reduce_scatter_group = defaults.fsdp_separate_reduce_scatter_group;
                probe.plan.grad_sync_after_last_backward = defaults.grad_sync_after_last_backward;
                probe.plan.fsdp_persistence_threshold = defaults.fsdp_persistence_threshold;
                probe.plan.tp = tp;
                probe.plan.pp = pp;
                probe.plan.dp = dp;
                probe.plan.cp = cp;
                probe.plan.vp = vp;
                probe.plan.microbatch_size = mbs;
                probe.plan.global_batch = spec.global_batch;
                probe.plan.schedule = name;
                // Expert parallelism and the sequence parallelism MoE needs
                // with tp > 1 are chosen below, plan by plan.
                probe.plan.ep = 1;
                probe.plan.overlap.moe_a2a = false;
                if (model.moe.enabled() && tp > 1) probe.plan.sequence_parallel = true;
                std::optional<std::string> why;
                try {
                  config::check_plan(probe);
                } catch (const config::ConfigError& e) {
                  const std::string what = e.what();
                  const std::string after_file = what.substr(std::min(what.size(), spec.file.size() + 2));
                  why = "config check: " + after_file.substr(0, after_file.find(':'));
                }
                config_refusal.emplace(placement, std::move(why));
              }
              const bool none_fits = std::all_of(config_refusal.begin(), config_refusal.end(),
                                                 [](const auto& kv) { return kv.second.has_value(); });
              if (none_fits) {
                refuse(tail, *config_refusal.begin()->second,
                       {{"tp", ti}, {"pp", pi}, {"dp", di}, {"cp", ci}, {"vp", vi}, {"microbatch_size", bi}});
                continue;
              }
              for (std::size_t si = 0; si < scheds.size(); ++si) {
                const long long below_s = tail / static_cast<long long>(scheds.size());
                if (const auto& why = config_refusal.at(schedule::find_schedule(scheds[si])->placement())) {
                  refuse(below_s, *why, {{"schedule", si}});
                  continue;
                }
                if (const auto& why = refusal(scheds[si], pp, vp, m, setting.plan.overlap.moe_a2a)) {
                  refuse(below_s, *why, {{"schedule", si}, {"vp", vi}});
                  continue;
                }
                workload::Plan plan = setting.plan;
                plan.tp = tp;
                plan.pp = pp;
                plan.dp = dp;
                plan.cp = cp;
                plan.vp = vp;
                plan.microbatch_size = mbs;
                plan.global_batch = spec.global_batch;
                plan.schedule = scheds[si];
                for (std::size_t zi = 0; zi < zeros.size(); ++zi) {
                  for (std::size_t qi = 0; qi < sps.size(); ++qi) {
                    for (std::size_t ri = 0; ri < rcs.size(); ++ri) {
                      plan.zero_stage = zeros[zi];
                      plan.sequence_parallel = sps[qi];
                      plan.recompute = rcs[ri];
                      for (std::size_t hi = 0; hi < shards.size(); ++hi) {
                        for (std::size_t fi = 0; fi < reshards.size(); ++fi) {
                          for (std::size_t oi = 0; oi < overlaps.size(); ++oi) {
                           // Every (ep, etp) pair, ep the slower-changing.
                           for (std::size_t pair = 0; pair < eps.size() * etps.size(); ++pair) {
                            const std::size_t ei = pair / etps.size(), xi = pair % etps.size();
                            const int ep = eps[ei], etp = etps[xi];
                            if (etp > 1 && !model.moe.enabled()) {
                              refuse(1, "etp > 1 needs a MoE model", {{"etp", xi}});
                              continue;
                            }
                            if (model.moe.enabled() && model.moe.expert_ffn % etp != 0) {
                              refuse(1, "etp does not divide the experts' width", {{"etp", xi}});
                              continue;
                            }
                            if ((static_cast<long long>(tp) * cp * dp) % (static_cast<long long>(ep) * etp) != 0) {
                              refuse(1, "ep x etp does not divide tp x cp x dp", {{"ep", ei}, {"etp", xi}});
                              continue;
                            }
                            if (ep > 1 && !model.moe.enabled()) {
                              refuse(1, "ep > 1 needs a MoE model", {{"ep", ei}});
                              continue;
                            }
                            if (model.moe.enabled() && model.moe.experts % ep != 0) {
                              refuse(1, "ep does not divide the experts", {{"ep", ei}});
                              continue;
                            }
                            if ((static_cast<long long>(tp) * cp * dp) % ep != 0) {
                              refuse(1, "ep does not divide tp x cp x dp", {{"ep", ei}, {"dp", di}});
                              continue;
                            }
                            // Sequence parallelism over one tensor rank is the plan
                            // without it (run turns it off): refused where the axis
                            // has that plan too, else run as it.
                            if (tp == 1 && plan.sequence_parallel) {
                              if (sp_off_listed) {
                                refuse(1, "sequence_parallel needs tp > 1", {{"sequence_parallel", qi}, {"tp", ti}});
                                continue;
                              }
                              plan.sequence_parallel = false;
                            }
                            if (model.moe.enabled() && tp > 1 && !plan.sequence_parallel) {
                              refuse(1, "a MoE model with tp > 1 needs sequence parallelism",
                                     {{"sequence_parallel", qi}, {"tp", ti}});
                              continue;
                            }
                            if (plan.overlap.moe_a2a && ep == 1) {
                              refuse(1, "options.moe_a2a_overlap needs ep > 1", {{"ep", ei}});
                              continue;
                            }
                            int shard = shards[hi];
                            if (shard == kNodeShardGroup) {
                              // One node's replicas a group (its GPUs / tp), if that makes HSDP.
                              shard = per_node / tp;
                              if (plan.zero_stage != 3 || per_node % tp != 0 || shard < 2 || shard >= dp * cp ||
                                  (dp * cp) % shard != 0) {
                                refuse(1, "no HSDP group of one node's replicas", {{"fsdp_shard_size", hi}});
                                continue;
                              }
                            }
                            if (shard > 0 && plan.zero_stage != 3) {
                              refuse(1, "fsdp_shard_size applies only with zero_stage 3",
                                     {{"fsdp_shard_size", hi}, {"zero_stage", zi}});
                              continue;
                            }
                            if (shard > 0 && (dp * cp) % shard != 0) {
                              refuse(1, cp > 1 ? "fsdp_shard_size does not divide dp x cp" : "fsdp_shard_size does not divide dp",
                                     {{"fsdp_shard_size", hi}, {"dp", di}});
                              continue;
                            }
                            if (!reshards[fi] && plan.zero_stage != 3) {
                              refuse(1, "reshard_after_forward applies only with zero_stage 3",
                                     {{"reshard_after_forward", fi}, {"zero_stage", zi}});
                              continue;
                            }
                            if (plan.overlap.param_gather && plan.zero_stage != 1 && plan.zero_stage != 2) {
                              refuse(1, "options.overlap_param_gather needs zero_stage 1 or 2", {{"zero_stage", zi}});
                              continue;
                            }
                            if (overlaps[oi] && (tp == 1 || !plan.sequence_parallel)) {
                              refuse(1, "tp_comm_overlap needs tp > 1 and sequence parallelism",
                                     {{"tp_comm_overlap", oi}, {"tp", ti}, {"sequence_parallel", qi}});
                              continue;
                            }
                            if (space.plans.size() >= kMaxPlans) {
                              throw config::ConfigError(fmt::format("{}: axes: more than {} valid plans, more than a "
                                                                    "sweep takes; list fewer values",
                                                                    spec.file, kMaxPlans));
                            }
                            plan.fsdp_shard_size = shard;
                            plan.reshard_after_forward = reshards[fi];
                            plan.overlap.tp_comm = overlaps[oi];
                            plan.ep = ep;
                            plan.etp = etp;
                            if (spec.fixed_plan_keys || model.moe.enabled() || model.mla.enabled()) {
                              // The sweep's fixed keys against this plan's ZeRO stage and the rest;
                              // a MoE or MLA model's checks (what is not modelled yet with them) too.
                              config::Scenario whole;
                              whole.file = spec.file;
                              whole.cluster = setting.cluster;
                              whole.model = setting.model;
                              whole.options = setting.options;
                              whole.plan = plan;
                              try {
                                config::check_plan(whole);
                              } catch (const config::ConfigError& e) {
                                const std::string what = e.what();
                                const std::string after_file = what.substr(std::min(what.size(), spec.file.size() + 2));
                                refuse(1, "config check: " + after_file.substr(0, after_file.find(':')),
                                       {{"zero_stage", zi}, {"recompute", ri}});
                                continue;
                              }
                            }
                            Candidate cand;
                            cand.index = space.plans.size();
                            cand.cluster = static_cast<int>(c);
                            cand.plan = plan;
                            cand.key = plan_key(label, plan);
                            space.plans.push_back(std::move(cand));
                            ++space.combinations;
                            const std::pair<const char*, std::size_t> at[] = {
                                {"tp", ti},         {"pp", pi},         {"dp", di},  {"cp", ci},
                                {"vp", vi},         {"microbatch_size", bi}, {"schedule", si},
                                {"zero_stage", zi}, {"sequence_parallel", qi}, {"recompute", ri},
                                {"fsdp_shard_size", hi}, {"reshard_after_forward", fi}, {"tp_comm_overlap", oi},
                                {"ep", ei}, {"etp", xi}};
                            for (const auto& [axis, i] : at) {
                              if (auto* list = find_use(axis)) (*list)[i].used = true;
                            }
                           }
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  // Listed dp values refused together above: the reason of any never used.
  if (auto* dps = find_use("dp"); dps != nullptr && dp_refused_as_differing) {
    for (Use& u : *dps) {
      if (!u.used && u.why.empty()) u.why = kDpDiffers;
    }
  }
  // A listed value no valid plan uses is most likely a mistake: named with
  // its reason, one with a reason first (a value refused only because another
  // axis's was has none of its own).
  for (const bool with_reason : {true, false}) {
    for (const auto& [axis, list] : uses) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i].used || (with_reason && list[i].why.empty())) continue;
        const std::string where = scalar[axis] ? "axes." + axis : fmt::format("axes.{}[{}]", axis, i);
        throw config::ConfigError(fmt::format("{}: {}: no valid plan uses this value{}", spec.file, where,
                                              list[i].why.empty() ? "" : " (" + list[i].why + ")"));
      }
    }
  }
  if (space.plans.empty()) {
    std::string why;
    for (const auto& [reason, n] : space.invalid) why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", reason, n);
    throw config::ConfigError(fmt::format("{}: axes: no valid plan among {} combinations ({})", spec.file,
                                          space.combinations, why));
  }
  return space;
}

}  // namespace trainsim::sweep
