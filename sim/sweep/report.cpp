#include "sweep/report.hpp"

#include <fmt/format.h>

#include "config/load.hpp"
#include "sweep/spec.hpp"

namespace trainsim::sweep {

namespace {

using nlohmann::json;

constexpr double kGiB = 1073741824.0;

// Ranks of fitting plans are their positions (1-based); others have none.
std::optional<std::size_t> rank_of(const Report& report, const Result& r) {
  if (r.status != Status::kOk) return std::nullopt;
  return static_cast<std::size_t>(&r - report.results.data()) + 1;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

long long Report::count(Status s) const {
  long long n = 0;
  for (const Result& r : results) n += r.status == s ? 1 : 0;
  return n;
}

std::vector<const Result*> top_plans(const Report& report, std::size_t top) {
  std::vector<const Result*> rows;
  for (const Result& r : report.results) {
    if (r.status != Status::kOk || (top > 0 && rows.size() >= top)) break;
    rows.push_back(&r);
  }
  return rows;
}

std::string table(const std::vector<const Result*>& rows, bool ranked) {
  std::size_t width = 4;
  for (const Result* r : rows) width = std::max(width, r->key.size());
  std::string out = fmt::format("{:>5}  {:<{}}  {:>12}  {:>12}  {:>6}  {:>10}  {:>7}\n", ranked ? "rank" : "#", "plan",
                                width, "iteration", "tokens/s", "MFU", "peak mem", "bubble");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Result& r = *rows[i];
    out += fmt::format("{:>5}  {:<{}}  {:>10.4f} s  {:>12.0f}  {:>5.1f}%  {:>6.2f} GiB  {:>6.1f}%\n", i + 1, r.key, width,
                       r.iteration_time_s, r.tokens_per_s, r.mfu * 100.0, r.peak_memory_bytes / kGiB,
                       r.bubble_fraction * 100.0);
  }
  return out;
}

std::string counts_text(const Report& report) {
  std::string out = fmt::format(
      "{} combinations: {} valid plans ({} fit in memory, {} out of memory, {} failed, {} pruned, {} not run), {} "
      "invalid\n",
      report.combinations, report.valid_plans, report.count(Status::kOk), report.count(Status::kOom),
      report.count(Status::kFailed), report.pruned, report.not_run, report.combinations - report.valid_plans);
  for (const auto& [why, n] : report.invalid) out += fmt::format("  invalid: {:>9}  {}\n", n, why);
  return out;
}

std::string to_csv(const Report& report) {
  std::string out =
      "rank,status,cluster,plan,tp,pp,dp,vp,microbatch_size,schedule,zero_stage,sequence_parallel,recompute,"
      "fsdp_shard_size,reshard_after_forward,tp_comm_overlap,cp,ep,etp,"
      "iteration_time_s,tokens_per_s,mfu,peak_memory_bytes,bubble_fraction,bound_s,error\n";
  for (const Result& r : report.results) {
    const auto rank = rank_of(report, r);
    const auto& p = r.plan;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       rank ? std::to_string(*rank) : "", status_name(r.status), csv_field(r.cluster),
                       csv_field(r.key), p.tp, p.pp, p.dp, p.vp, p.microbatch_size, p.schedule, p.zero_stage,
                       p.sequence_parallel ? "true" : "false", workload::recompute_name(p.recompute),
                       p.zero_stage == 3 ? std::to_string(p.shard_group_size()) : "",
                       p.reshard_after_forward ? "true" : "false",
                       !p.overlap.tp_comm ? "false" : p.overlap.tp_comm_backward ? "true" : "forward", p.cp, p.ep, p.etp, r.iteration_time_s,
                       r.tokens_per_s, r.mfu, r.peak_memory_bytes, r.bubble_fraction, r.bound_s, csv_field(r.error));
  }
  return out;
}

json to_json(const Report& report) {
  json doc = json::object();
  doc["sweep"] = report.sweep;
  doc["sweep_hash"] = report.sweep_hash;
  doc["shard"] = report.shard ? json(*report.shard) : json(nullptr);
  doc["combinations"] = report.combinations;
  doc["valid_plans"] = report.valid_plans;
  doc["invalid"] = json::object();
  for (const auto& [why, n] : report.invalid) doc["invalid"][why] = n;
  doc["pruned"] = report.pruned;
  doc["not_run"] = report.not_run;
  doc["interrupted"] = report.interrupted;
  json results = json::array();
  for (const Result& r : report.results) {
    const auto rank = rank_of(report, r);
    const auto& p = r.plan;
    json e = json::object();
    e["rank"] = rank ? json(*rank) : json(nullptr);
    e["status"] = status_name(r.status);
    e["cluster"] = r.cluster;
    e["plan"] = r.key;
    e["tp"] = p.tp;
    e["pp"] = p.pp;
    e["dp"] = p.dp;
    e["vp"] = p.vp;
    e["microbatch_size"] = p.microbatch_size;
    e["global_batch"] = p.global_batch;
    e["schedule"] = p.schedule;
    e["zero_stage"] = p.zero_stage;
    e["sequence_parallel"] = p.sequence_parallel;
    e["recompute"] = workload::recompute_name(p.recompute);
    e["fsdp_shard_size"] = p.zero_stage == 3 ? json(p.shard_group_size()) : json(nullptr);  // ZeRO-3's shard group
    e["reshard_after_forward"] = p.reshard_after_forward;
    e["tp_comm_overlap"] = !p.overlap.tp_comm ? json(false) : p.overlap.tp_comm_backward ? json(true) : json("forward");
    e["cp"] = p.cp;
    e["ep"] = p.ep;
    e["etp"] = p.etp;
    e["iteration_time_s"] = r.iteration_time_s;
    e["tokens_per_s"] = r.tokens_per_s;
    e["mfu"] = r.mfu;
    e["peak_memory_bytes"] = r.peak_memory_bytes;
    e["bubble_fraction"] = r.bubble_fraction;
    e["bound_s"] = r.bound_s;
    if (!r.error.empty()) e["error"] = r.error;
    results.push_back(std::move(e));
  }
  doc["results"] = std::move(results);
  return doc;
}

Report from_json(const json& doc, const std::string& file) {
  auto fail = [&](const std::string& path, const std::string& what) {
    throw config::ConfigError(fmt::format("{}: {}: {}", file, path, what));
  };
  if (!doc.is_object()) fail("(top level)", "expected the JSON a sweep writes with --json");
  auto need = [&](const json& obj, const std::string& path, const char* key, json::value_t type) -> const json& {
    if (!obj.contains(key)) fail(path.empty() ? key : path + "." + key, "is missing (expected the JSON a sweep writes with --json)");
    const json& v = obj[key];
    const bool ok = type == json::value_t::number_integer ? v.is_number_integer()
                    : type == json::value_t::number_float ? v.is_number()
                                                          : v.type() == type;
    if (!ok) fail(path.empty() ? key : path + "." + key, "has the wrong type: " + v.dump());
    return v;
  };
  Report rep;
  rep.sweep = need(doc, "", "sweep", json::value_t::string).get<std::string>();
  // Optional: files of earlier versions lack it (a --baseline may be one); sweep-merge needs it.
  if (doc.contains("sweep_hash")) rep.sweep_hash = need(doc, "", "sweep_hash", json::value_t::string).get<std::string>();
  if (doc.contains("shard") && doc["shard"].is_string()) rep.shard = doc["shard"].get<std::string>();
  rep.combinations = need(doc, "", "combinations", json::value_t::number_integer).get<long long>();
  rep.valid_plans = need(doc, "", "valid_plans", json::value_t::number_integer).get<long long>();
  for (const auto& [why, n] : need(doc, "", "invalid", json::value_t::object).items()) {
    if (!n.is_number_integer()) fail("invalid." + why, "expected a count");
    rep.invalid[why] = n.get<long long>();
  }
  rep.pruned = need(doc, "", "pruned", json::value_t::number_integer).get<long long>();
  rep.not_run = need(doc, "", "not_run", json::value_t::number_integer).get<long long>();
  rep.interrupted = need(doc, "", "interrupted", json::value_t::boolean).get<bool>();
  const json& results = need(doc, "", "results", json::value_t::array);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string path = fmt::format("results[{}]", i);
    const json& e = results[i];
    if (!e.is_object()) fail(path, "expected an object");
    Result r;
    const std::string status = need(e, path, "status", json::value_t::string).get<std::string>();
    if (!parse_status(status, r.status)) fail(path + ".status", "unknown status \"" + status + "\"");
    r.cluster = need(e, path, "cluster", json::value_t::string).get<std::string>();
    r.key = need(e, path, "plan", json::value_t::string).get<std::string>();
    auto& p = r.plan;
    p.tp = need(e, path, "tp", json::value_t::number_integer).get<int>();
    p.pp = need(e, path, "pp", json::value_t::number_integer).get<int>();
    p.dp = need(e, path, "dp", json::value_t::number_integer).get<int>();
    p.vp = need(e, path, "vp", json::value_t::number_integer).get<int>();
    p.microbatch_size = need(e, path, "microbatch_size", json::value_t::number_integer).get<int>();
    p.global_batch = need(e, path, "global_batch", json::value_t::number_integer).get<int>();
    p.schedule = need(e, path, "schedule", json::value_t::string).get<std::string>();
    p.zero_stage = need(e, path, "zero_stage", json::value_t::number_integer).get<int>();
    p.sequence_parallel = need(e, path, "sequence_parallel", json::value_t::boolean).get<bool>();
    const std::string rc = need(e, path, "recompute", json::value_t::string).get<std::string>();
    p.recompute = workload::recompute_named(rc).value_or(workload::Recompute::kNone);
    // Written since the context-parallel axis; older result files hold none.
    if (e.contains("cp")) p.cp = need(e, path, "cp", json::value_t::number_integer).get<int>();
    // Written since the expert-parallel axis.
    if (e.contains("ep")) p.ep = need(e, path, "ep", json::value_t::number_integer).get<int>();
    if (e.contains("etp")) p.etp = need(e, path, "etp", json::value_t::number_integer).get<int>();
    // Written since the ZeRO-3 and overlap axes; older result files hold the defaults.
    if (e.contains("fsdp_shard_size") && !e["fsdp_shard_size"].is_null()) {
      const int shard = need(e, path, "fsdp_shard_size", json::value_t::number_integer).get<int>();
      p.fsdp_shard_size = shard == p.replicas() ? 0 : shard;
    }
    if (e.contains("reshard_after_forward")) {
      p.reshard_after_forward = need(e, path, "reshard_after_forward", json::value_t::boolean).get<bool>();
    }
    if (e.contains("tp_comm_overlap")) {
      const json& v = e["tp_comm_overlap"];
      if (v.is_string() && v.get<std::string>() == "forward") {
        p.overlap.tp_comm = true;
        p.overlap.tp_comm_backward = false;
      } else {
        p.overlap.tp_comm = need(e, path, "tp_comm_overlap", json::value_t::boolean).get<bool>();
      }
    }
    r.iteration_time_s = need(e, path, "iteration_time_s", json::value_t::number_float).get<double>();
    r.tokens_per_s = need(e, path, "tokens_per_s", json::value_t::number_float).get<double>();
    r.mfu = need(e, path, "mfu", json::value_t::number_float).get<double>();
    r.peak_memory_bytes = need(e, path, "peak_memory_bytes", json::value_t::number_integer).get<std::int64_t>();
    r.bubble_fraction = need(e, path, "bubble_fraction", json::value_t::number_float).get<double>();
    r.bound_s = need(e, path, "bound_s", json::value_t::number_float).get<double>();
    if (e.contains("error") && e["error"].is_string()) r.error = e["error"].get<std::string>();
    rep.results.push_back(std::move(r));
  }
  rank(rep.results);
  return rep;
}

Report read_report(const std::string& path) {
  return from_json(config::parse_json(config::read_text(path, "sweep result file"), path), path);
}

}  // namespace trainsim::sweep
