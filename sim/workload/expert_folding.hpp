// Megatron-Core's folding of a MoE stage's GPUs into expert groups
// (etp-ep-edp), the one layout the stage costs and the lowering both use.
//
// The stage's GPUs are numbered j = replica x tp + tensor (tp-cp-dp order).
// Read as j = t + etp (e + ep d): an expert-tensor-parallel group is etp
// consecutive GPUs; an expert-parallel group takes one GPU of each of ep such
// groups; an expert-data-parallel group is the GPUs that hold the same
// experts, those whose j is the same modulo etp x ep. Each group of a kind is
// named by an index from 0.
#pragma once

namespace trainsim::workload {

struct ExpertFolding {
  int etp = 1;
  int ep = 1;

  int etp_group_of(int j) const { return j / etp; }
  int ep_group_of(int j) const { return j % etp + etp * (j / (etp * ep)); }
  int edp_group_of(int j) const { return j % (etp * ep); }

  // The i-th GPU (its j) of group `index` of each kind.
  int etp_member(int index, int i) const { return index * etp + i; }
  int ep_member(int index, int i) const { return index / etp * etp * ep + index % etp + etp * i; }
  int edp_member(int index, int i) const { return index + i * etp * ep; }
};

}  // namespace trainsim::workload
