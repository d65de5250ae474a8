// The small cluster and models the workload tests cost plans on: numbers
// picked to make hand derivations easy, not any real machine's.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload::testing {

// `nodes` DGX-A100-like nodes: 8 GPUs on NVLink (240 GB/s bus), 8 NICs of
// 24 GB/s; a GEMM curve of 100 TFLOP/s at 1024 and 200 at 4096, capped at
// 150; HBM 1.6 TB/s achievable; no launch overhead and no host figures
// (tests that need them set them).
inline hw::ClusterSpec small_cluster(int nodes = 1) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  hw::NodeSpec& n = c.node;
  n.gpus_per_node = 8;
  n.nvlink_gb_per_s = 300;
  n.nvlink_bus_gb_per_s = 240;
  n.nics_per_node = 8;
  n.nic_gbit_per_s = 200;
  n.nic_bus_gb_per_s = 24;
  hw::GpuSpec& g = n.gpu;
  g.peak_tflops = 312;
  g.memory_gb = 80;
  g.hbm_tb_per_s = 2.039;
  g.hbm_achievable_tb_per_s = 1.6;
  g.gemm_tflops = {{1024, 100}, {4096, 200}};
  g.gemm_max_tflops = 150;
  g.attention_tflops = {{2048, 160}};
  return c;
}

// A GPT of 8 layers: hidden 1024, 16 heads, ffn 4096, 1024 tokens, vocabulary 32000.
inline TransformerSpec small_gpt() {
  TransformerSpec m;
  m.layers = 8;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4096;
  m.seq = 1024;
  m.vocab = 32000;
  return m;
}

// small_gpt as a Mixtral-like MoE model: Llama layers whose MLP is 8 SwiGLU
// experts of width 2048, top 2 (no dense MLP).
inline TransformerSpec small_moe() {
  TransformerSpec m = small_gpt();
  m.arch = Arch::kLlama;
  m.ffn = 0;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 2048;
  return m;
}

// GPT-3 175B (Brown et al. 2020): 96 layers of 12,288, 96 heads, 2,048
// tokens, GPT-2's vocabulary padded to 51,200.
inline TransformerSpec gpt3_175b() {
  TransformerSpec m;
  m.name = "GPT-3 175B";
  m.arch = Arch::kGpt;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn = 4 * 12288;
  m.seq = 2048;
  m.vocab = 51200;
  return m;
}

// The op of a layer called `name` (the test fails without one).
inline const Op& op_named(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

}  // namespace trainsim::workload::testing
