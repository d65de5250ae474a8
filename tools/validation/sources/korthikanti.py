"""Validation cases from Korthikanti et al. 2022 (arXiv:2205.05198): Table 5's runs, Figure 1's memory
formulas and Table 4's one-layer times."""

from __future__ import annotations

from .common import check_shape


KORTHIKANTI_MODELS = {"GPT-22B": "gpt-22b", "GPT-175B": "gpt3-175b", "GPT-530B": "gpt-529.6b", "GPT-1T": "gpt-1t"}


def korthikanti_case(rec: dict) -> dict:
    preset = KORTHIKANTI_MODELS[rec["model"]["name"]]
    check_shape(preset, rec["model"], rec["id"])
    par, hw = rec["parallel"], rec["hardware"]
    selective = rec["id"].endswith("_seqpar_selective")
    parallel = {
        "tp": par["tp"], "pp": par["pp"], "dp": par["dp"], "vp": par["vp"],
        "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
        "schedule": "interleaved-1f1b" if par["vp"] > 1 else "1f1b",
        "recompute": "selective" if selective else "full",
        "sequence_parallel": bool(par["sp"]),
    }
    return {
        "id": rec["id"],
        "group": "Korthikanti Table 5",
        "source": rec["source"].replace(" (+Fig.1 memory as transcribed in calculon-ai/calculon validation.py)", ""),
        "config": {
            "description": f"{rec['model']['name']} on {hw['gpus']} A100s, Korthikanti et al. Table 5, "
                           + ("selective recompute + sequence parallelism" if selective else "full recompute"),
            "cluster": {"node": "dgx-a100", "nodes": hw["nodes"], "network": "selene-fat-tree"},
            "model": preset,
            "parallel": parallel,
        },
        "assumptions": {
            "parallel": "tp, pp, dp, virtual stages, micro-batch and global batch as in the paper's Table 3 (record parallel)",
            "parallel.schedule": "interleaved-1f1b where Table 3 gives 3 virtual stages (175B, 530B), else 1f1b (record parallel.schedule)",
            "parallel.recompute": ("selective with sequence parallelism: the paper's 'present work' row" if selective
                                   else "full, without sequence parallelism: the paper's 'full recompute' baseline row"),
            "cluster": "dgx-a100 nodes on selene-fat-tree: Selene, as in the paper's section 6 (record hardware)",
        },
        "measured": {"iteration_time_s": rec["measured"]["iter_time_s"]},
        "notes": "Measured: Table 5's iteration time (its MFU and HFU are the same measurement divided into a FLOP "
                 "count, not used separately). Figure 1's memory for the same plans (record fig1_*) is compared in "
                 "the cases of group '" + FIG1_GROUP + "'.",
    }


# Table 4 of the same paper times one transformer layer of the 22B model (tp 8,
# micro-batch 4, the Table 3 plan) forward and backward, for five ways of
# saving activations. The summary's one-layer times (layer_forward_s,
# layer_backward_s) are the same quantity: one layer, one micro-batch, one GPU,
# its tensor-parallel collectives and what recompute redoes included.
T4_GROUP = "Korthikanti Table 4"
T4_ROWS = {  # record id suffix: (recompute, sequence parallelism, the row's name in the table)
    "baseline_no_recompute": ("none", False, "baseline, no recompute"),
    "sequence_parallel": ("none", True, "sequence parallelism"),
    "full_recompute": ("full", False, "full recompute"),
    "selective_recompute": ("selective", False, "selective recompute"),
    "selective+sequence": ("selective", True, "selective recompute + sequence parallelism"),
}


def korthikanti_t4_case(rec: dict) -> dict:
    suffix = rec["id"].removeprefix("korthikanti_t4_22B_layer_")
    if suffix not in T4_ROWS:
        raise SystemExit(f"record {rec['id']}: not a Table 4 row the converter knows ({', '.join(T4_ROWS)})")
    recompute, sp, row = T4_ROWS[suffix]
    preset = KORTHIKANTI_MODELS[rec["model"]["name"]]
    check_shape(preset, rec["model"], rec["id"])
    par, hw = rec["parallel"], rec["hardware"]
    return {
        "id": rec["id"],
        "group": T4_GROUP,
        "source": rec["source"],
        "config": {
            "description": f"One layer of {rec['model']['name']} on {hw['gpus']} A100s, Korthikanti et al. Table 4, "
                           + row,
            "cluster": {"node": "dgx-a100", "nodes": hw["nodes"], "network": "selene-fat-tree"},
            "model": preset,
            "parallel": {
                "tp": par["tp"], "pp": par["pp"], "dp": par["dp"], "vp": 1,
                "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
                "schedule": "1f1b", "recompute": recompute, "sequence_parallel": sp,
            },
        },
        "set": ["model.layers=2"],
        "assumptions": {
            "model.layers": "2 of the 22B model's 48: one layer's time does not depend on how many there are, and "
                            "48 layers without recompute do not fit the GPU's 80 GB",
            "parallel": "tp 8 and micro-batch 4 from the record (the 22B model's Table 3 plan); pp, dp and the batch "
                        "do not change one layer's time",
            "parallel.recompute": f"{recompute}" + (", with sequence parallelism" if sp else ", without sequence "
                                                    "parallelism") + f": the table's '{row}' row",
            "cluster": "one dgx-a100 node of Selene, as in the paper's section 6 (record hardware)",
        },
        "measured": {"layer_forward_ms": rec["measured"]["fwd_ms"], "layer_backward_ms": rec["measured"]["bwd_ms"]},
        "notes": "Measured: Table 4's forward and backward time of one transformer layer (record fwd_ms, bwd_ms; "
                 "their sum and the overhead column are the same measurements combined, not used). Predicted: one "
                 "layer of the plan, one micro-batch (the summary's layer_forward_s and layer_backward_s), its "
                 "tensor-parallel collectives and, in the backward, what recompute redoes included.",
    }


# Figure 1 of the same paper gives, per model, the memory of the first
# pipeline stage's GPU: parameters, gradients and optimizer state, and the
# activations with the paper's method (selective recompute + sequence
# parallelism) and without any recompute. They are the paper's formulas, not
# measurements (the baselines exceed the GPU's 80 GB): 18 bytes for each of the
# 12*l*h^2 layer parameters on a GPU, and 34*s*b*h*l/t of activations (times
# 1 + (p-1)/(p*v) interleaved), e.g. 18 * 12 * 48 * 6144^2 / 8 bytes = 45.5625 GiB
# and 34 * 2048 * 4 * 6144 * 48 / 8 bytes = 9.5625 GiB for the 22B model. They
# are compared in a group of their own, as a check of the simulator's memory
# accounting against the paper's.
FIG1_GROUP = "Korthikanti Figure 1 (analytic)"


def korthikanti_fig1_case(rec: dict) -> dict:
    """The Table 5 plan whose memory Figure 1 shows: the present-work row's plan
    for its two components, or the full-recompute row's plan without recompute
    for the baseline's activations."""
    case = korthikanti_case(rec)
    size = rec["id"].split("_")[2]
    selective = rec["id"].endswith("_seqpar_selective")
    fig = rec["measured"]
    if selective:
        measured = {"model_state_gib": fig["fig1_mem_GiB_params_grads_optstate"],
                    "activation_memory_gib": fig["fig1_mem_GiB_activations"]}
        what = "selective_sp"
        plan_note = "the Table 5 plan of the 'present work' row (selective recompute + sequence parallelism)"
    else:
        measured = {"activation_memory_gib": fig["fig1_mem_GiB_activations_no_recompute_baseline"]}
        what = "no_recompute"
        case["config"]["parallel"]["recompute"] = "none"
        case["config"]["description"] = case["config"]["description"].replace("full recompute", "no recompute")
        case["assumptions"]["parallel.recompute"] = (
            "none, without sequence parallelism: Figure 1's baseline, the activations of the Table 5 plan with "
            "tensor and pipeline parallelism only")
        plan_note = "the Table 5 plan of the full-recompute row, without recompute (Figure 1's baseline)"
    case["id"] = f"korthikanti_fig1_{size}_{what}"
    case["group"] = FIG1_GROUP
    case["measured"] = measured
    case["notes"] = (
        f"Measured: Figure 1's memory for {plan_note}, as the record transcribes it (fig1_*, GiB). These are the "
        "paper's formulas, not measurements: the layers' parameters (12*l*h^2, no embedding, biases or norms) at "
        "18 bytes each over t*p GPUs, and 34*s*b*h*l/t bytes of activations (s*b*h*l*(10 + 24/t + 5*a*s/(h*t)) "
        "without recompute), times 1 + (p-1)/(p*v) with v virtual stages. The simulator's first pipeline rank "
        "also holds the embedding and its model state, and above its model state any transient buffer at the "
        "peak (model_state_gib, activation_memory_gib).")
    return case
