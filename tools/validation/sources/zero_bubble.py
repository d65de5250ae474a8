"""Validation cases from zero bubble pipeline parallelism, Qi et al. 2024 (arXiv:2401.10241), Table 4."""

from __future__ import annotations

from .common import check_shape


ZB_MODELS = {"GPT-1.5B": "gpt-1.5b-zb", "GPT-6.2B": "gpt-6.2b-zb"}
ZB_SCHEDULES = {"1F1B": "1f1b", "1F1B-I": "interleaved-1f1b", "ZB-1p": "zb-1p", "ZB-2p": "zb-2p"}
ZB_SCRIPT = "sail-sg/zero-bubble-pipeline-parallelism examples/pretrain_zero_bubble.sh"


def zb_stage_layers(layers: int, pp: int) -> list[int]:
    """First and last pipeline ranks hold one layer fewer than the others
    (layers = k * pp - 2), one stage per rank."""
    k = (layers + 2) // pp
    assert k * pp - 2 == layers, (layers, pp)
    return [k - 1] + [k] * (pp - 2) + [k - 1]


def zb_case(rec: dict) -> dict:
    preset = ZB_MODELS[rec["model"]["name"]]
    check_shape(preset, rec["model"], rec["id"])
    par, hw = rec["parallel"], rec["hardware"]
    published = rec["id"].rsplit("_", 1)[1]
    schedule = ZB_SCHEDULES[published]
    pp, vp, layers = par["pp"], par["vp"], rec["model"]["layers"]
    if published == "1F1B-I":
        # The authors' script runs 1F1B-I with one layer per virtual stage
        # (--num-layers-per-virtual-pipeline-stage 1) over the layers padded
        # to k x pp, the first and last virtual stages left empty.
        k = (layers + 2) // pp
        vp = k
        stage_layers = [0] + [1] * layers + [0]
        assert len(stage_layers) == pp * vp
    else:
        stage_layers = zb_stage_layers(layers, pp)
    assumptions = {
        "cluster": "one dgx-a100 node: the 8 GPUs of these rows sit in one node of the paper's A100 SXM 80GB "
                   "servers (record hardware: 8 GPUs, 1 node); NVSwitch inside the node is assumed as in the DGX A100 "
                   "(the record marks the intra-node link uncertain)",
        "parallel.microbatch_size": f"{par['microbatch']}, with {par['num_microbatches']} micro-batches per iteration: "
                                    "the paper's Table 3",
        "parallel.stage_layers": ("first and last pipeline rank one layer fewer than the others, as the paper does "
                                  "(and the authors' README recommends, num_layers = k x pp - 2)"
                                  + ("" if published != "1F1B-I" else
                                     "; one layer per virtual stage, the first virtual stage (the embedding) and the "
                                     "last (the output head) without layers")),
        "parallel.recompute": f"none: the authors' script ({ZB_SCRIPT}) sets no recompute flag (the record marks it uncertain)",
        "model": f"{preset}: the paper's Table 3 shape; the vocabulary (32000) is an assumption stated in the preset's source",
        "parallel.schedule": f"{schedule} for the paper's {published}",
    }
    if published in ("ZB-1p", "ZB-2p"):
        assumptions["parallel.schedule"] = (
            f"{schedule} for the paper's {published}: the paper's heuristic placement from the stages' F, I and W "
            "times under its memory limit, without the ILP refinement the paper runs after it")
    elif published == "1F1B-I":
        assumptions["parallel.vp"] = (
            f"{vp}: the authors' script runs 1F1B-I with --num-layers-per-virtual-pipeline-stage 1 ({ZB_SCRIPT}), "
            f"the {layers} layers padded to {vp * pp} = {vp} x pp {pp} with the first and last virtual stages empty; "
            f"the record's vp {par['vp']} counts the layers of the first and last ranks, which hold one chunk "
            "without layers besides")
    measured = {
        "samples_per_gpu_per_s": rec["measured"]["samples_per_gpu_per_s"],
        "peak_memory_gib": rec["measured"]["mem_gb_peak"],
    }
    assumptions["measured.peak_memory_gib"] = (
        "the paper's peak memory column (GB) read as GiB: Megatron-LM, which the authors' code forks, reports "
        "memory in units of 1024^2 bytes (report_memory); the paper does not say which unit it prints")
    notes = ("Measured: Table 4's samples per GPU per second and peak memory (record measured; its theoretical "
             "bubble rate is computed, not used). The authors' script of the time runs Megatron-LM's own attention "
             "(no --use-flash-attn), run here as parallel.attention unfused; ZB rows also used optimizer "
             "post-validation, which is not modelled.")
    return {
        "id": rec["id"],
        "group": "Zero bubble Table 4",
        "source": f"{rec['source']}; script: {ZB_SCRIPT}",
        "config": {
            "description": f"{rec['model']['name']} on 8 A100s, pp 8, {par['num_microbatches']} micro-batches of "
                           f"{par['microbatch']}, {published} (run as {schedule})",
            "cluster": {"node": "dgx-a100", "nodes": hw["nodes"]},
            "model": preset,
            "parallel": {
                "tp": par["tp"], "pp": pp, "dp": par["dp"], "vp": vp,
                "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
                "schedule": schedule, "recompute": "none", "stage_layers": stage_layers,
            },
        },
        "assumptions": assumptions,
        "measured": measured,
        "notes": notes,
    }
