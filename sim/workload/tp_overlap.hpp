// Tensor-parallel communication pipelined with the GEMM it feeds or follows
// (Plan::Overlap::tp_comm): Transformer Engine's userbuffers and PyTorch's
// async TP both split the GEMM into tp chunks along the sequence. An
// all-gather's first chunk is the rank's own, so its GEMM chunk starts at
// once while the next chunk arrives; a reduce-scatter's last GEMM chunk has
// its result sent while nothing computes. Either way tp - 1 steps overlap a
// GEMM chunk with a communication step, and one GEMM chunk runs alone:
//   together = (tp - 1) * max(C / (tp - 1), G (1 + slowdown) / tp) + G / tp,
// C the collective's time alone and G the GEMM's. Whatever goes beyond G is
// exposed: the communication the GEMM could not cover and the GEMM's
// slowdown while both run (the SMs, memory and L2 the communication takes).
//
// Chunks as the implementations split them: Transformer Engine's
// ring-exchange overlap runs tp steps (transformer_engine/common/
// comm_gemm_overlap/comm_gemm_overlap.cpp, split_overlap_ag loops over
// _tp_size; "num_splits": tp_size for ring_exchange in pytorch/module/base.py
// get_default_config); PyTorch's _pipelined_all_gather_and_consume chunks the
// gathered output into group_size pieces (torch/distributed/_symmetric_memory/
// __init__.py).
#pragma once

namespace trainsim::workload {

// How much slower compute runs while communication overlaps it: 18.9% on
// average over the GPUs and kernels measured by Chang et al., "Characterizing
// Compute-Communication Overlap in GPU-Accelerated Distributed Deep
// Learning" (arXiv 2507.03114, abstract: "an average of 18.9%, with a
// maximum of 40.0%"; A100, H100, MI250, MI210).
inline constexpr double kOverlapComputeSlowdown = 0.189;

// The time a collective of `comm_s` and a GEMM of `gemm_s` take pipelined in
// `chunks` pieces (chunks >= 2), the GEMM slowed by `slowdown` while both run.
double overlapped_seconds(double comm_s, double gemm_s, int chunks, double slowdown = kOverlapComputeSlowdown);

}  // namespace trainsim::workload
