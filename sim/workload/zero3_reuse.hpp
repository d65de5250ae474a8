// DeepSpeed's ZeRO-3 under activation checkpointing: which of a recomputed
// layer's parameters are gathered a second time in the backward.
//
// DeepSpeed's hooks run on every submodule, the recomputation's forward
// included: each module's parameters are gathered before it and released
// after it, unless the module's trace shows them used again within
// stage3_max_reuse_distance parameters (Plan::fsdp_max_reuse_distance). A
// layer's backward follows its recomputation at once and visits its modules
// in reverse, so between a module's recomputed forward and its backward lie
// the forwards and the backwards of the modules after it: twice their
// parameters. One with at least half the distance after it is released and
// gathered again (with a distance of 0, every one). FSDP skips its hooks in
// the recomputation and holds the unit from its backward's gather to its end
// (no distance: nothing gathered twice).
//
// Read from deepspeed/runtime/zero/partitioned_param_coordinator.py
// (release_sub_module, __params_to_release: the modules after the current
// step are walked, their parameters counted, until the count reaches the
// distance). Not modelled: it also keeps a parameter whose next use its
// prefetcher has already queued, which happens where a layer's weights are
// small beside stage3_prefetch_bucket_size (5e7 by default).
//
// Each backward (B or I) of such a unit gathers that share again; the
// lowering runs it as a collective after the unit's gather for that backward
// and the compute before it, and the backward waits for it: nothing hides
// it, as DeepSpeed's backward waits for it right after the recomputation.
#pragma once

#include <vector>

namespace trainsim::workload {

// The share of a layer's sharded parameters (tensors above
// `persistence_threshold`, which are never sharded) that its backward gathers
// again after its recomputation. `tensors`: the layer's parameter tensors in
// forward order (TransformerSpec::layer_tensors), counted tensor by tensor
// where DeepSpeed counts module by module: a weight's distance includes its
// own bias. `max_reuse_distance` >= 0.
double regathered_share(const std::vector<double>& tensors, double persistence_threshold, double max_reuse_distance);

}  // namespace trainsim::workload
