// Loading a config: presets and file references expanded, `--set` overrides
// applied, then each section read (sections.hpp) and the checks across
// sections made, into a Scenario.
#include "config/load.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "config/hf_config.hpp"
#include "config/presets.hpp"
#include "config/schema.hpp"
#include "config/sections.hpp"
#include "hw/calibration_profile.hpp"

namespace trainsim::config {

using namespace detail;

namespace {
// How a config read from standard input (`trainsim run -`) is named in messages.
constexpr const char* kStandardInput = "standard input";
}  // namespace

std::string changed_by_sets(const std::vector<std::string>& overrides) {
  if (overrides.empty()) return "";
  std::string sets;
  for (const std::string& o : overrides) sets += (sets.empty() ? "--set " : ", --set ") + o;
  return " (the config as changed by " + sets + ")";
}

std::string positive_int_problem(const json& v, long long max) {
  const bool whole = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!whole || v.get<double>() < 1) return "expected a positive integer, got " + show(v);
  if (v.get<double>() > static_cast<double>(max)) return fmt::format("expected at most {}, got {}", max, show(v));
  return {};
}

namespace {

// A section given as a preset name or a file reference becomes its object.
void expand(json& doc, const std::string& path, const std::string& kind, Context& ctx) {
  // Walk to the value at `path`, stopping quietly where it does not exist.
  json* v = &doc;
  std::string walked;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object() || !v->contains(key)) return;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!v->is_string()) return;
  const std::string name = v->get<std::string>();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
    std::filesystem::path file(name);
    if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
    // A missing file is the config's error: name the config and the key
    // (other failures, a dangling link or no permission, read_text names).
    std::error_code ec, link_ec;
    if (std::filesystem::status(file, ec).type() == std::filesystem::file_type::not_found &&
        !std::filesystem::is_symlink(std::filesystem::symlink_status(file, link_ec))) {
      const char* from = ctx.file == kStandardInput ? " (a relative path is read from the current folder)"
                                                    : " (a relative path is read from the config file's folder)";
      ctx.fail(path, fmt::format("no such {} file: {}{}", kind, excerpt(file.string()),
                                 std::filesystem::path(name).is_relative() ? from : ""));
    }
    *v = parse_json(read_text(file.string(), kind + " file named at " + path), file.string());
    ctx.preset_of[path] = "file " + file.string();
    ctx.files_read.push_back(file.string());
    return;
  }
  const auto text = find_preset(kind, name);
  if (!text) {
    const auto known = preset_names(kind);
    const auto near = closest(name, known);
    ctx.fail(path, fmt::format("unknown {} preset \"{}\"{}; known presets: {} (or give the values inline, or a "
                               "path ending in .json)",
                               kind, excerpt(name), near ? fmt::format(" (did you mean \"{}\"?)", *near) : "", join(known, ", ")));
  }
  *v = json::parse(*text);
  ctx.preset_of[path] = kind + " preset \"" + name + "\"";
}

// The model from a Hugging Face config: "hf:PATH", or {"hf": "PATH", ...}
// whose other keys (model.seq, which the config does not give, and any
// override) go over what the config maps to (config/hf_config.hpp).
void expand_hf_model(json& doc, Context& ctx) {
  if (!doc.is_object() || !doc.contains("model")) return;
  json& v = doc["model"];
  std::string reference;
  std::string at = "model";
  if (v.is_string() && v.get<std::string>().rfind("hf:", 0) == 0) {
    reference = v.get<std::string>().substr(3);
  } else if (v.is_object() && v.contains("hf")) {
    at = "model.hf";
    if (!v["hf"].is_string() || v["hf"].get<std::string>().empty()) {
      ctx.fail(at, "expected the path of a Hugging Face config.json, got " + show(v["hf"]));
    }
    reference = v["hf"].get<std::string>();
  } else {
    return;
  }
  if (reference.empty()) ctx.fail(at, "expected a path after \"hf:\", e.g. \"hf:config.json\"");
  std::filesystem::path file(reference);
  if (file.is_relative()) file = std::filesystem::path(ctx.base_dir) / file;
  const json hf = parse_json(read_text(file.string(), "Hugging Face config named at " + at), file.string());
  HfModel mapped = model_from_hf(hf, file.string());
  for (const std::string& w : mapped.warnings) spdlog::warn("{}", w);
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      if (key != "hf") mapped.model[key] = value;
    }
  }
  v = std::move(mapped.model);
  ctx.preset_of["model"] = "Hugging Face config " + file.string();
  ctx.files_read.push_back(file.string());
}

void expand_all(json& doc, Context& ctx) {
  expand_hf_model(doc, ctx);
  expand(doc, "model", "model", ctx);
  expand(doc, "cluster.node", "node", ctx);
  expand(doc, "cluster.node.gpu", "gpu", ctx);
  expand(doc, "cluster.network", "network", ctx);
  expand(doc, "parallel.burst.background.model", "model", ctx);
}

void apply_override(json& doc, const std::string& text, Context& ctx) {
  try {
    (void)json(text).dump();  // throws on bytes that are not UTF-8
  } catch (const json::type_error&) {
    throw ConfigError(fmt::format("{}: --set {}: not valid UTF-8", ctx.file, show(json(text))));
  }
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(fmt::format("{}: --set {}: expected key.path=value", ctx.file, text));
  }
  const std::string path = text.substr(0, eq);
  const std::string raw = text.substr(eq + 1);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string section;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    if (key.empty()) {
      throw ConfigError(fmt::format("{}: --set {}: the key path {} has an empty name (two dots, or a dot at an end); "
                                    "expected names joined by single dots, as parallel.tp",
                                    ctx.file, text, show(json(path))));
    }
    const auto* keys = section_keys(section);
    if (keys == nullptr) {
      throw ConfigError(fmt::format("{}: --set {}: {} is not a section, so {} does not exist", ctx.file, text,
                                    section.empty() ? "(top level)" : section, path));
    }
    if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
      const auto near = closest(key, *keys);
      throw ConfigError(fmt::format("{}: --set {}: no key \"{}\" in {}{}", ctx.file, text, key,
                                    section.empty() ? "the top level" : section,
                                    near ? fmt::format(" (did you mean {}?)", child(section, *near)) : ""));
    }
    section = child(section, key);
  }
  if (nesting_depth(raw) > kMaxJsonNesting) {
    throw ConfigError(fmt::format("{}: --set {}: nested deeper than {} levels", ctx.file, path, kMaxJsonNesting));
  }
  json value;
  try {
    value = json::parse(raw);
  } catch (const json::out_of_range&) {
    throw ConfigError(fmt::format("{}: --set {}: the number is out of range", ctx.file, text));
  } catch (const json::exception&) {
    value = raw;  // a bare word, e.g. --set parallel.schedule=gpipe
  }
  json* v = &doc;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!v->is_object()) break;
    v = &(*v)[parts[i]];
    if (v->is_null()) *v = json::object();
  }
  if (!v->is_object()) {
    ctx.fail(path.substr(0, path.rfind('.')), "expected an object to --set " + path + " in, got " + show(*v));
  }
  (*v)[parts.back()] = value;
  ctx.set_by[path] = text;
  expand_all(doc, ctx);
}

}  // namespace

namespace {

Scenario read_scenario(json doc, const std::string& file, const std::string& base_dir,
                       const std::vector<std::string>& overrides, bool check) {
  Context ctx{file, base_dir, {}, {}, {}};
  if (!doc.is_object()) ctx.fail("", "expected a JSON object with sections cluster, model, parallel, options");
  // The other commands' files, given to `run` by mistake: say which command reads them.
  if (doc.contains("axes")) {
    ctx.fail("axes", "this is a sweep file (axes over parallel plans); expected a config with cluster, model, "
                     "parallel and options, or run this file with `trainsim sweep`");
  }
  if (doc.contains("cases") && !doc.contains("parallel")) {
    ctx.fail("cases", "this is a validation case file (cases, no parallel section); expected a config with cluster, "
                      "model, parallel and options, or run this file with `trainsim validate`");
  }
  expand_all(doc, ctx);
  for (const std::string& o : overrides) apply_override(doc, o, ctx);
  {
    const Section top(doc, "", ctx);
    top.free_text("description");
  }
  Scenario sc;
  sc.file = file;
  sc.cluster = read_cluster(doc, ctx);
  if (is_layer_table(doc, "model")) {
    sc.layer_model = read_layer_table(doc, "model", ctx);
    sc.model.name = sc.layer_model->name;
  } else {
    sc.model = read_model(doc, ctx);
  }
  sc.plan = read_plan(doc, ctx);
  // Nothing to split over one tensor rank: a run goes without it, saying so,
  // as Megatron-LM does ("Disabled sequence parallel because tensor model
  // parallel size is 1", megatron/training/arguments.py). A sweep's setting
  // (check false) keeps it: the sweep refuses such plans itself.
  if (check && sc.plan.sequence_parallel && sc.plan.tp == 1) {
    spdlog::warn("{}: parallel.sequence_parallel: true does nothing with tp = 1; running without it", file);
    sc.plan.sequence_parallel = false;
  }
  sc.burst = read_burst(doc, ctx);
  if (sc.plan.schedule != "burst" && doc["parallel"].contains("burst")) {
    ctx.fail("parallel.burst", "applies only with parallel.schedule = \"burst\"");
  }
  sc.options = read_options(doc, sc.cluster.gpus(), ctx);
  read_overlap(doc, sc.plan, ctx);
  if (sc.options.comm_slowdown_given) sc.plan.overlap.compute_slowdown = sc.options.comm_slowdown;
  // Expert settings need experts; a capacity factor sets the busiest expert's
  // load itself, so a drop-less imbalance beside it would go unused.
  if (!sc.model.moe.enabled()) {
    for (const char* key : {"parallel.moe_dispatcher", "options.moe_imbalance", "options.moe_a2a_overlap"}) {
      const std::string k = key;
      const std::string section = k.substr(0, k.find('.')), name = k.substr(k.find('.') + 1);
      if (doc.contains(section) && doc[section].is_object() && doc[section].contains(name)) {
        ctx.fail(k, "applies only to a MoE model (model.moe)", {"model.moe"});
      }
    }
  } else if (sc.model.moe.capacity_factor > 0.0 && doc.contains("options") && doc["options"].contains("moe_imbalance")) {
    ctx.fail("options.moe_imbalance",
             "applies to drop-less routing; with model.moe.capacity_factor every expert's input is padded or cut to "
             "that capacity, which sets the busiest expert's load",
             {"model.moe.capacity_factor"});
  }
  // Needs the cluster and the options only: checked for a sweep's clusters too.
  if (sc.options.cuda_context_bytes >= sc.cluster.node.gpu.memory_bytes()) {
    ctx.fail("options.cuda_context_mib",
             fmt::format("{:.0f} MiB leaves no memory for tensors on the {} ({:g} GB)", sc.options.cuda_context_bytes / 1048576.0,
                         sc.cluster.node.gpu.name, sc.cluster.node.gpu.memory_gb),
             {"cluster.node.gpu.memory_gb"});
  }
  sc.input_files = ctx.files_read;
  if (const hw::CalibrationProfile* profile = sc.cluster.node.gpu.calibration.get()) {
    sc.input_files.push_back(profile->file);
  }
  if (!check) return sc;
  check_consistency(sc, ctx);
  sc.csv_schedule = read_csv_schedule(sc.plan, ctx, sc.input_files);
  if (sc.csv_schedule) sc.plan.csv_placement = sc.csv_schedule->placement();
  check_custom_network_reach(sc, ctx);
  return sc;
}

}  // namespace

Scenario load_document(nlohmann::json doc, const std::string& file, const std::string& base_dir,
                       const std::vector<std::string>& overrides) {
  return read_scenario(std::move(doc), file, base_dir, overrides, true);
}

Scenario load_setting(nlohmann::json doc, const std::string& file, const std::string& base_dir) {
  return read_scenario(std::move(doc), file, base_dir, {}, false);
}

json expand_references(json doc, const std::string& file, const std::string& base_dir) {
  Context ctx{file, base_dir, {}, {}, {}};
  if (doc.is_object()) expand_all(doc, ctx);
  return doc;
}

void check_plan(const Scenario& sc) {
  const Context ctx{sc.file, "", {}, {}, {}};
  check_consistency(sc, ctx);
  check_custom_network_reach(sc, ctx);
}

Scenario load_file(const std::string& path, const std::vector<std::string>& overrides) {
  // "-": the config on standard input (trainsim import ... | trainsim run -),
  // its relative paths read from the current folder.
  if (path == "-") {
    const std::string from = kStandardInput;
    if (::isatty(STDIN_FILENO)) {
      throw ConfigError(from + ": a terminal, not a config; pipe one in (trainsim import ... | trainsim run -) or "
                               "give its path");
    }
    constexpr std::size_t kMaxBytes = 64u << 20;  // as read_text's limit on a file
    std::string text;
    char chunk[1 << 16];
    while (std::cin.read(chunk, sizeof chunk) || std::cin.gcount() > 0) {
      text.append(chunk, static_cast<std::size_t>(std::cin.gcount()));
      if (text.size() > kMaxBytes) throw ConfigError(from + ": cannot read config: larger than 64 MiB");
    }
    if (std::cin.bad()) throw ConfigError(from + ": cannot read config: the read failed (closed, or a folder?)");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw ConfigError(from + ": empty; expected a config (JSON) piped in, e.g. trainsim import ... | trainsim run -");
    }
    return load_document(parse_json(text, from), from, ".", overrides);
  }
  const std::string text = read_text(path, "config file");
  const std::string base = std::filesystem::path(path).parent_path().string();
  return load_document(parse_json(text, path), path, base, overrides);
}

}  // namespace trainsim::config
