"""Validation cases from Megatron-LM, Narayanan et al. 2021 (arXiv:2104.04473), Table 1."""

from __future__ import annotations

from .common import ONE_BUCKET_MIB, check_shape


# NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (commit cf547dea): the
# authors' script for Table 1. Per size: (model preset, MBS, layers per virtual
# pipeline stage or None when the script sets none, DDP implementation).
MEGATRON_SCRIPT = "NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (commit cf547de)"
MEGATRON_T1 = {
    "1.7B": ("gpt-1.7b", 16, None, "torch"),
    "3.6B": ("gpt-3.6b", 16, None, "torch"),
    "7.5B": ("gpt-7.5b", 16, None, "torch"),
    "18.4B": ("gpt-18.4b", 8, None, "torch"),
    "39.1B": ("gpt-39.1b", 4, None, "local"),
    "76.1B": ("gpt-76.1b", 2, 5, "local"),
    "145.6B": ("gpt-145.6b", 2, 5, "local"),
    "310.1B": ("gpt-310.1b", 1, 3, "local"),
    "529.6B": ("gpt-529.6b", 1, 1, "local"),
    "1008.0B": ("gpt-1t", 1, None, "local"),
}


def megatron_case(rec: dict) -> dict:
    size = rec["id"].removeprefix("megatron_sc21_t1_")
    preset, mbs, layers_per_vstage, ddp = MEGATRON_T1[size]
    check_shape(preset, rec["model"], rec["id"])
    par, hw = rec["parallel"], rec["hardware"]
    layers = rec["model"]["layers"]
    vp = 1 if layers_per_vstage is None else layers // par["pp"] // layers_per_vstage
    parallel = {
        "tp": par["tp"], "pp": par["pp"], "dp": par["dp"], "vp": vp,
        "microbatch_size": mbs, "global_batch": par["global_batch"],
        "schedule": "interleaved-1f1b" if vp > 1 else "1f1b",
        "recompute": "full",
    }
    assumptions = {
        "parallel.microbatch_size": f"{mbs}: MBS for this size in the authors' script for Table 1, {MEGATRON_SCRIPT}; "
                                    "the paper does not state it",
        "parallel.recompute": "full: the script passes --activations-checkpoint-method uniform (every layer "
                              "recomputed); the paper's FLOP count (eq. 3, 96Bslh^2) includes the recomputed forward, "
                              "so its TFLOP/s per GPU is compared with hardware_tflops_per_gpu",
        "cluster": "dgx-a100 nodes on selene-fat-tree: Selene's DGX A100 80GB nodes, 8 HDR NICs each, joined by a "
                   "fat tree (paper section 5; record hardware)",
    }
    if layers_per_vstage is not None:
        assumptions["parallel.vp"] = (f"{vp} = {layers} layers / pp {par['pp']} / {layers_per_vstage} layers per virtual "
                                      f"stage (--num-layers-per-virtual-pipeline-stage {layers_per_vstage} in the script)")
        assumptions["parallel.schedule"] = "interleaved-1f1b: the paper's interleaved 1F1B, enabled by the script's virtual stages"
    else:
        assumptions["parallel.vp"] = ("1: the script sets no --num-layers-per-virtual-pipeline-stage for this size, "
                                      "so Megatron-LM runs its non-interleaved schedule"
                                      + (" (no pipeline at all with pp = 1)" if par["pp"] == 1 else ""))
        assumptions["parallel.schedule"] = "1f1b: non-interleaved, as the script runs this size"
    if ddp == "local":
        parallel["grad_bucket_mib"] = ONE_BUCKET_MIB
        assumptions["parallel.grad_bucket_mib"] = (
            f"{ONE_BUCKET_MIB} (one bucket per stage): the script uses DDP=local, Megatron-LM's own data-parallel "
            "wrapper, which all-reduces a stage's whole gradient buffer once after its last backward instead of "
            "overlapping buckets with the backward")
    else:
        assumptions["parallel.grad_bucket_mib"] = (
            "default 25 MiB: the script uses DDP=torch, PyTorch DistributedDataParallel, whose buckets are reduced "
            "while the last micro-batch's backward runs")
    return {
        "id": rec["id"],
        "group": "Megatron-LM Table 1",
        "source": f"{rec['source']}; micro-batch size and virtual stages from {MEGATRON_SCRIPT}",
        "config": {
            "description": f"{rec['model']['name']} on {hw['gpus']} A100s, Megatron-LM Table 1",
            "cluster": {"node": "dgx-a100", "nodes": hw["nodes"], "network": "selene-fat-tree"},
            "model": preset,
            "parallel": parallel,
        },
        "assumptions": assumptions,
        "measured": {"hardware_tflops_per_gpu": rec["measured"]["tflops_per_gpu"]},
        "notes": "Measured: Table 1's achieved TFLOP/s per GPU (pct_peak and aggregate PFLOP/s are the same figure "
                 "scaled, not used).",
    }
