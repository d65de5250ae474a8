#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/summary.hpp"
#include "report/svg.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_svg_test {

using namespace trainsim;

namespace {

struct Picture {
  report::Summary summary;
  std::string svg;
};

Picture draw(const config::Scenario& sc) {
  const driver::WhatIf w = driver::simulate(sc);
  Picture p;
  p.summary = driver::summarize(sc, w, sc.file);
  p.svg = report::schedule_svg(*w.sim, p.summary);
  return p;
}

// The default example (GPT 1.7B, tp 2, pp 4, 1F1B), with overrides.
Picture draw_example(const std::vector<std::string>& overrides) {
  return draw(config::load_file(TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json", overrides));
}

// GPT 1.7B on one DGX A100, tp 4, pp 2 x vp 2, 2 micro-batches, running the
// schedule `csv` (written to NAME.csv in a scratch folder).
config::Scenario two_chunk_csv(const std::string& name, const std::string& csv) {
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_test_svg";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (name + ".csv"), std::ios::binary) << csv;
  nlohmann::json doc = nlohmann::json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": "gpt-1.7b",
    "parallel": {"tp": 4, "pp": 2, "vp": 2, "dp": 1, "microbatch_size": 1, "global_batch": 2}
  })");
  doc["parallel"]["schedule"] = "csv:" + name + ".csv";
  return config::load_document(doc, name + ".json", dir.string());
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The part of the picture drawn for one rank: its <g id="rankR"> group.
std::string rank_group(const std::string& svg, int rank) {
  const std::string open = "<g id=\"rank" + std::to_string(rank) + "\">";
  const std::size_t begin = svg.find(open);
  if (begin == std::string::npos) return "";
  return svg.substr(begin, svg.find("</g>", begin) - begin);
}

// Well-formed enough for any SVG viewer: one root, every tag closed in order,
// attribute values quoted, and every '&' starting an entity.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      const std::size_t semi = s.find(';', i);
      const std::string entity = semi == std::string::npos ? "" : s.substr(i, semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&apos;") {
        return "bare & at " + std::to_string(i);
      }
    }
    if (s[i] == '>') return "stray > at " + std::to_string(i);
    if (s[i] != '<') continue;
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end;
    if (tag.rfind("?xml", 0) == 0) continue;
    if (count(tag, "\"") % 2 != 0 || tag.find('<') != std::string::npos) return "bad tag <" + tag + ">";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes nothing open";
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (open.empty()) ++roots;
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (roots != 1) return std::to_string(roots) + " root elements";
  return "";
}

}  // namespace

TEST_CASE("1F1B's picture: a box per forward and backward, per rank") {
  // pp = 4, m = 24 / (dp 1 x micro-batch 4) = 6. Each rank runs an F and a B
  // of every micro-batch: 6 F boxes and 6 B boxes (a backward cut into
  // gradient-bucket parts is still one box), then one optimizer box; no I or
  // W. Sends: rank 0 sends 6 activations on, ranks 1 and 2 send 6 on and 6
  // gradients back, rank 3 sends 6 gradients back. With dp = 1 the gradient
  // reductions cost nothing and are not drawn; the tied embedding's
  // all-reduce between the first and last stage is, once on each of them.
  const Picture p = draw_example({"parallel.global_batch=24"});
  const std::string& svg = p.svg;
  CHECK(xml_problem(svg) == "");
  const int sends[] = {6, 12, 12, 6};
  const int collectives[] = {1, 0, 0, 1};
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const std::string g = rank_group(svg, r);
    REQUIRE(!g.empty());
    CHECK(count(g, "class=\"F\"") == 6);
    CHECK(count(g, "class=\"B\"") == 6);
    CHECK(count(g, "class=\"I\"") == 0);
    CHECK(count(g, "class=\"W\"") == 0);
    CHECK(count(g, "class=\"opt\"") == 1);
    CHECK(count(g, "class=\"send\"") == static_cast<std::size_t>(sends[r]));
    CHECK(count(g, "class=\"coll\"") == static_cast<std::size_t>(collectives[r]));
  }
  CHECK(rank_group(svg, 4).empty());
  // Title: model, schedule, iteration time; the plan below it; a legend.
  CHECK(svg.find("GPT 1.7B · 1f1b · iteration ") != std::string::npos);
  CHECK(svg.find("tp=2 pp=4 dp=1, 6 micro-batches of 4 per pipeline") != std::string::npos);
  CHECK(svg.find(">F forward</text>") != std::string::npos);
  CHECK(svg.find(">B backward</text>") != std::string::npos);
  CHECK(svg.find(">I input gradient</text>") == std::string::npos);  // only the kinds drawn
  CHECK(svg.find(">time (ms)</text>") != std::string::npos);
}

TEST_CASE("the picture is byte-identical from run to run") {
  CHECK(draw_example({}).svg == draw_example({}).svg);
}

TEST_CASE("text in the picture is escaped") {
  const Picture p = draw_example({"model.name=A&B <big> \"GPT\""});
  CHECK(p.svg.find("A&amp;B &lt;big&gt; &quot;GPT&quot;") != std::string::npos);
  CHECK(xml_problem(p.svg) == "");
}

TEST_CASE("virtual stages: boxes name their stage, later chunks lighter") {
  // A looped schedule read from CSV: pp = 2, vp = 2 (stages 0, 2 on rank 0;
  // 1, 3 on rank 1), m = 2: each rank runs 2 stages x 2 micro-batches x (F, B)
  // = 8 boxes, plus its optimizer step.
  const Picture p =
      draw(two_chunk_csv("looped", "0F0,0F1,2F0,2F1,2B0,2B1,0B0,0B1\n1F0,1F1,3F0,3F1,3B0,3B1,1B0,1B1\n"));
  CHECK(xml_problem(p.svg) == "");
  for (int r = 0; r < 2; ++r) {
    const std::string g = rank_group(p.svg, r);
    CHECK(count(g, "class=\"F\"") + count(g, "class=\"B\"") == 8);
    CHECK(count(g, "class=\"opt\"") == 1);
  }
  CHECK(rank_group(p.svg, 0).find(">s2</text>") != std::string::npos);
  CHECK(rank_group(p.svg, 1).find(">s3</text>") != std::string::npos);
  CHECK(p.svg.find("vp=2") != std::string::npos);
  // Chunk 0 in the forward colour itself, chunk 1 lighter (45% toward white).
  CHECK(rank_group(p.svg, 0).find("fill=\"#6f9fe0\"") != std::string::npos);
  CHECK(rank_group(p.svg, 0).find("fill=\"#b0caee\"") != std::string::npos);
}

TEST_CASE("a V-shaped schedule read from CSV: its placement in the picture and its legend") {
  // pp = 2, vp = 2 in a V: stages 0 and 3 on rank 0, 1 and 2 on rank 1 (the
  // rows say so); the legend must not claim stage s runs on rank s mod 2.
  const config::Scenario sc = two_chunk_csv("v", "0F0,0F1,3F0,3F1,3B0,3B1,0B0,0B1\n1F0,1F1,2F0,2F1,2B0,2B1,1B0,1B1\n");
  CHECK(sc.plan.rank_of_stage(3) == 0);
  const Picture p = draw(sc);
  CHECK(xml_problem(p.svg) == "");
  CHECK(rank_group(p.svg, 0).find(">s3</text>") != std::string::npos);
  CHECK(rank_group(p.svg, 1).find(">s2</text>") != std::string::npos);
  CHECK(p.svg.find("in a V: stages 0-1 on ranks 0-1, stages 2-3 back up on ranks 1-0") != std::string::npos);
  CHECK(p.svg.find("mod 2") == std::string::npos);
}

}  // namespace report_svg_test
