#!/usr/bin/env python3
"""Writes tests/validation/cases.json, the validation cases `trainsim validate`
reads, from the published training runs in shared/validation/published-runs.json
and the assumption tables below, so that every case can be traced to its record
and every value the record does not give is chosen by a stated rule:

    python3 tools/validation/convert_published_runs.py            # rewrite cases.json
    python3 tools/validation/convert_published_runs.py --check    # fail if it differs
    python3 tools/validation/convert_published_runs.py --runs PATH/published-runs.json

Rules the tables follow:
  * A record's facts (shape, GPU count, tp/pp/dp, batch, schedule, recompute)
    are copied; the converter checks that each model preset it names has the
    record's shape.
  * A value the record leaves open is taken from the source's own scripts or its
    framework's defaults, by one rule for every row of that source, and written
    into the case's `assumptions` with the reason. Nothing is chosen per row to
    make a row match, and no hardware number is changed: the GPUs, nodes and
    networks are the presets in configs/hardware.
  * Only measured values become `measured`; values the record derives are not
    used. Where a record gives several figures computed from one measurement
    (iteration time, samples/s and TFLOP/s from one timer), one is kept.
  * Headline claims with no per-run figure become `orderings` between cases
    whose `measured` is empty.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_RUNS = REPO.parent / "shared" / "validation" / "published-runs.json"
OUT = REPO / "tests" / "validation" / "cases.json"
RUNS_NAME = "shared/validation/published-runs.json"

# One bucket holding a whole stage's gradients: the largest parallel.grad_bucket_mib
# the loader accepts (10^6 MiB), above any stage's gradient size in these cases.
ONE_BUCKET_MIB = 1000000


def load_preset(name: str) -> dict:
    return json.loads((REPO / "models" / f"{name}.json").read_text())


def load_node(name: str) -> dict:
    return json.loads((REPO / "configs" / "hardware" / "nodes" / f"{name}.json").read_text())


def check_shape(preset: str, model: dict, record_id: str) -> None:
    """The preset must have the record's shape (keys the record gives)."""
    p = load_preset(preset)
    for key in ("layers", "hidden", "heads", "ffn", "seq", "vocab"):
        if model.get(key) is not None and model[key] != p[key]:
            raise SystemExit(f"{record_id}: model preset {preset} has {key} = {p[key]}, the record {model[key]}")


# ---------------------------------------------------------------------------
# Megatron-LM, Narayanan et al. 2021 (arXiv:2104.04473), Table 1
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Korthikanti et al. 2022 (arXiv:2205.05198), Tables 3 and 5
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# BLOOM 176B on Jean Zay (bigscience-workshop/bigscience train/tr11-176B-ml)
# ---------------------------------------------------------------------------

BLOOM_COMMON_ASSUMPTIONS = {
    "cluster.node": "jean-zay-a100: 8 A100 80GB per node and 4 Omni-Path links per node from the record; NCCL's "
                    "bandwidth per link as the same team measured it on these nodes (4.98 GB/s); link rate, latency "
                    "and the wiring inside a node are assumptions; all listed in the preset's sources",
    "cluster.network": "flat (non-blocking): 'Omni-Path Architecture (OPA) w/ non-blocking fat tree' with 'a fully "
                       "dedicated subnet' for NCCL (huggingface/blog bloom-megatron-deepspeed-technology.md, 'The "
                       "Technology Behind BLOOM Training', 2022-07-09, hardware list)",
    "options.cuda_context_mib": "1573: the CUDA context the same team measured on an A100 40GB with nvidia-smi after "
                                "'torch.ones(1).cuda()' (chronicles-prequel.md: '40GB A100 takes 1573MiB for cuda "
                                "kernels (probably about the same for 80GB? may be a bit larger)'); their PyTorch 1.11 "
                                "with CUDA 11.5 (tr11-176B-ml/README.md) predates CUDA 11.7's lazy module loading, so "
                                "every kernel is loaded into the context ('Before CUDA 11.7, all kernels were loaded "
                                "into the context ... which took >1000MB', NVIDIA's ptrblck, pytorch/pytorch issue "
                                "107667)",
    "parallel.schedule": "1f1b: DeepSpeed's PipelineEngine runs a non-interleaved 1F1B schedule (record parallel.schedule)",
    "parallel.recompute": "full: --checkpoint-activations, every layer recomputed (record parallel.recompute)",
    "parallel.zero_stage": "1: ZeRO stage 1 across data-parallel replicas (record parallel.zero_stage)",
    "model.arch": "gpt: BLOOM's ALiBi (no learned positions) and its embedding LayerNorm are not modelled; gpt adds a "
                  "seq x hidden position table (0.02% of the parameters) and leaves out one LayerNorm on the first "
                  "stage; the tied embedding and the GeLU MLP with biases are as in BLOOM",
}
BLOOM_OPTIONS = {"cuda_context_mib": 1573}  # see BLOOM_COMMON_ASSUMPTIONS
BLOOM_GRAD_BUCKET = (f"{ONE_BUCKET_MIB} (one bucket per stage): DeepSpeed's pipeline schedule reduces the gradients "
                     "once, after the last backward of the iteration (deepspeed/runtime/pipe/schedule.py: "
                     "ReduceTiedGrads, ReduceGrads, OptimizerStep at the last step; overlap_comm off by default), "
                     "not bucket by bucket during it")


def bloom_production_case(rec: dict) -> dict:
    check_shape("bloom-176b", rec["model"], rec["id"])
    par, hw = rec["parallel"], rec["hardware"]
    pp, layers = par["pp"], rec["model"]["layers"]
    # 'type:transformer|embedding': the tied embedding counts as a layer on the
    # first and on the last stage, (70 + 2) / 12 = 6 units per stage.
    units = (layers + 2) // pp
    stage_layers = [units - 1] + [units] * (pp - 2) + [units - 1]
    assert sum(stage_layers) == layers
    assumptions = dict(BLOOM_COMMON_ASSUMPTIONS)
    assumptions["model"] = "bloom-176b preset: the record's shape (70 layers, hidden 14336, 112 heads, vocabulary 250880)"
    assumptions["parallel.grad_bucket_mib"] = BLOOM_GRAD_BUCKET
    assumptions["parallel.stage_layers"] = (
        "5, 6 x 10, 5: --pp-partition-method 'type:transformer|embedding' counts the tied embedding as one block on "
        "the first and on the last stage, giving 'pp rank 0: [embed | 5 transformer blocks] ... pp rank 11: "
        "[5 transformer blocks | embed]' (tr11-176B-ml/README.md, Architecture)")
    return {
        "id": rec["id"],
        "group": "BLOOM 176B production",
        "source": rec["source"],
        "config": {
            "description": "BLOOM 176B on 384 A100 80GB of Jean Zay: tp 4, pp 12, dp 8, micro-batch 2, global batch 2048",
            "cluster": {"node": "jean-zay-a100", "nodes": hw["nodes"]},
            "model": "bloom-176b",
            "parallel": {
                "tp": par["tp"], "pp": pp, "dp": par["dp"],
                "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
                "schedule": "1f1b", "recompute": "full", "zero_stage": par["zero_stage"],
                "stage_layers": stage_layers, "grad_bucket_mib": ONE_BUCKET_MIB,
            },
            "options": dict(BLOOM_OPTIONS),
        },
        "assumptions": assumptions,
        "measured": {"iteration_time_s": rec["measured"]["iter_time_s"]},
        "notes": "Measured: Megatron-DeepSpeed's elapsed time per iteration at global batch 2048 (record "
                 "iter_time_s); the logged samples/s, tokens/s and TFLOP/s are computed from that same time and are "
                 "not used separately.",
    }


def bloom_prequel_case(rec: dict) -> dict:
    par, hw, m = rec["parallel"], rec["hardware"], rec["model"]
    pp, layers = par["pp"], m["layers"]
    assumptions = dict(BLOOM_COMMON_ASSUMPTIONS)
    assumptions["model"] = (f"the candidate's shape from the record ({layers} layers, hidden {m['hidden']}, {m['heads']} "
                            f"heads, vocabulary {m['vocab']}), ffn = 4 x hidden")
    parallel = {
        "tp": par["tp"], "pp": pp, "dp": par["dp"],
        "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
        "schedule": "1f1b", "recompute": "full", "zero_stage": par["zero_stage"],
        "grad_bucket_mib": ONE_BUCKET_MIB,
    }
    assumptions["parallel.grad_bucket_mib"] = BLOOM_GRAD_BUCKET
    if layers % pp == 0:
        assumptions["parallel.stage_layers"] = (
            f"even, {layers // pp} per stage, the embedding on the first and last stages on top of their layers: "
            "these runs predate the 'type:transformer|embedding' partition, introduced on 02-28 "
            "(chronicles-prequel.md, 'Rebalancing layers')")
    else:
        # chronicles-prequel.md, 'Re-do': "78/12=6.5 - so the last stage has 1
        # block, while the rest have 7".
        per = -(-layers // pp)
        stage_layers = [per] * (pp - 1) + [layers - per * (pp - 1)]
        parallel["stage_layers"] = stage_layers
        assumptions["parallel.stage_layers"] = (
            f"{per} x {pp - 1}, {stage_layers[-1]}: as chronicles-prequel.md ('Re-do') states for this run: "
            f"'{layers}/{pp}={layers / pp} - so the last stage has {stage_layers[-1]} block, while the rest have {per}'")
    name = f"BLOOM candidate h{m['hidden']} l{layers} a{m['heads']}"
    measured = {"iteration_time_s": rec["measured"]["iter_time_s"]}
    if rec["measured"].get("mem_gb_per_gpu") is not None:
        measured["device_memory_used_gb"] = rec["measured"]["mem_gb_per_gpu"]
    return {
        "id": rec["id"],
        "group": "BLOOM topology sweep",
        "source": rec["source"],
        "config": {
            "description": f"{name} on 384 A100 80GB of Jean Zay: tp {par['tp']}, pp {pp}, dp {par['dp']}, "
                           f"micro-batch {par['microbatch']}, global batch {par['global_batch']}",
            "cluster": {"node": "jean-zay-a100", "nodes": hw["nodes"]},
            "model": {
                "name": name, "arch": "gpt", "layers": layers, "hidden": m["hidden"], "heads": m["heads"],
                "ffn": m["ffn"], "seq": m["seq"], "vocab": m["vocab"],
                "source": "a BLOOM candidate shape benchmarked before training, bigscience-workshop/bigscience "
                          "train/tr11-176B-ml/chronicles-prequel.md (as transcribed in " + RUNS_NAME + ")",
            },
            "parallel": parallel,
            "options": dict(BLOOM_OPTIONS),
        },
        "assumptions": assumptions,
        "measured": measured,
        "notes": "Measured: seconds per iteration, a snapshot of the second iteration (record iter_time_s; its "
                 "TFLOP/s is computed from the same time)" + (
                     "; and the table's Mem column (record mem_gb_per_gpu) as device_memory_used_gb: what "
                     "nvidia-smi showed on the job's first node (chronicles-prequel.md: 'was quickly getting the "
                     "memory snapshot with: pdsh -w jean-zay-iam01 ... nvidia-smi'), whose GPUs hold the first "
                     "pipeline stage with the embedding; the metric is the largest tensor peak over all GPUs (in "
                     "every one of these cases the first stage's) plus the CUDA context (options.cuda_context_mib). "
                     "nvidia-smi also counts what PyTorch's caching allocator keeps reserved beyond the tensors in "
                     "use, which the simulator does not model; and the column's GB are taken as 10^9 bytes (read "
                     "as GiB they would be 7.4% larger)" if "device_memory_used_gb" in measured
                     else "; the Mem column is empty for this row") + ". These runs used the fp16 optimizer (the BF16 "
                 "optimizer came on 02-28): see the assumptions on parallel.precision, grad_dtype and "
                 "grad_accumulation.",
    }


# ---------------------------------------------------------------------------
# Zero bubble pipeline parallelism, Qi et al. 2024 (arXiv:2401.10241), Table 4
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Headline claims: cases with no per-run measurement, compared by orderings
# ---------------------------------------------------------------------------

def twobp_cases(rec: dict) -> list[dict]:
    """2BP (Rae et al. 2024): 1.70x over 1F1B for a LLaMa-like 7B model on 4 GPUs."""
    assumptions = {
        "model": "llama2-7b: the abstract's 'LLaMa-like transformer with 7 billion parameters'; its exact shape, "
                 "sequence length and batch are not in the sources",
        "cluster": "4 GPUs of a dgx-a100 node (the preset with gpus_per_node and nics_per_node set to 4 by `set`): "
                   "the record gives 4 GPUs but not their kind",
        "parallel": "pp 4 (one stage per GPU, the record's pp), tp 1, dp 1; 4 micro-batches of 1 sequence, the "
                    "smallest batch that fills the pipeline. In the schedules' closed forms 2BP saves (p - 1) x W "
                    "over 1F1B for any micro-batch count, so this choice does not decide the ordering",
        "parallel.recompute": "none: 2BP keeps the weight-gradient operands, which recomputation would not change",
    }
    cases = []
    for schedule in ("1f1b", "2bp"):
        cases.append({
            "id": f"twobp_llama7b_4gpu_{schedule}",
            "group": "2BP headline (ordering only)",
            "source": rec["source"],
            "config": {
                "description": f"A LLaMa-like 7B model on 4 A100s, pp 4, 4 micro-batches, {schedule}",
                "cluster": {"node": "dgx-a100", "nodes": 1},
                "model": "llama2-7b",
                "parallel": {"tp": 1, "pp": 4, "dp": 1, "microbatch_size": 1, "global_batch": 4,
                             "schedule": schedule, "recompute": "none"},
            },
            "set": ["cluster.node.gpus_per_node=4", "cluster.node.nics_per_node=4"],
            "assumptions": assumptions,
            "measured": {},
            "notes": "No per-run figure is published in the sources (record 2bp_headline: the abstract's 1.70x only); "
                     "this case exists for the 2BP ordering, which compares time. At the preset's sequence of 4096 "
                     "the simulator's memory model (Korthikanti et al.'s activation formula, which keeps the "
                     "attention scores, 5as^2b bytes per layer, as an implementation without FlashAttention does) "
                     "puts both plans over the GPU's 80 GB; the paper's sequence length is not in the sources.",
        })
    return cases


def bfpp_cases(rec: dict) -> list[dict]:
    """Breadth-first pipelining (Lamy-Poirier 2022): up to 1.43x over Megatron-LM's interleaved schedule."""
    assumptions = {
        "config": "configs/examples/gpt-52b-64xa100-breadth-first.json: the gpt-52b model (a 52B GPT; the paper's "
                  "exact shape is not in the sources), 64 A100s (8 DGX A100 nodes; the record does not give the "
                  "hardware), tp 8, pp 2 x vp 4, dp 4, 16 sequences per iteration (the small batch per GPU where the "
                  "paper reports its gain), selective recompute",
        "parallel.zero_stage": "3 for both schedules, as in the example: the paper pairs breadth-first with sharded "
                               "data parallelism (FSDP); the Megatron-LM baseline is run with the same sharding so "
                               "that the schedule is the only difference",
    }
    cases = []
    for schedule, key in (("breadth-first", "breadth_first"), ("interleaved-1f1b", "interleaved")):
        case = {
            "id": f"bfpp_gpt52b_64gpu_{key}",
            "group": "Breadth-first headline (ordering only)",
            "source": rec["source"],
            "config": "../../configs/examples/gpt-52b-64xa100-breadth-first.json",
            "assumptions": assumptions,
            "measured": {},
            "notes": "No per-run figure is published in the sources (record bfpp_headline: the abstract's 'up to 43% "
                     "higher throughput' only); this case exists for the breadth-first ordering.",
        }
        if schedule != "breadth-first":
            case["set"] = [f"parallel.schedule={schedule}"]
        cases.append(case)
    return cases


# Selective recompute + SP against full recompute (Korthikanti Table 5): the
# published ratios of iteration times are 1.29 (22B), 1.32 (175B), 1.30 (530B)
# and 1.32 (1T), "about 30%". The band keeps the claim's effect within a third of
# its size on the low side (0.30 - 0.10 -> 1.20) and on the high side admits the
# FLOP ratio of one extra forward per layer (about 4/3) plus ten points for the
# tensor-parallel all-reduces that full recompute repeats (Table 4's per-layer
# times give 27.2 / 20.3 = 1.34) -> 1.45.
KORTHIKANTI_RATIO = (1.20, 1.45)



# ---------------------------------------------------------------------------
# TorchTitan on H100 (pytorch/torchtitan benchmarks), BF16 rows
# ---------------------------------------------------------------------------

TORCHTITAN_MODELS = {"Llama-3.1-8B": "llama3.1-8b", "Llama-3.1-70B": "llama3.1-70b", "Llama-3.1-405B": "llama3-405b"}
TORCHTITAN_HOSTS = (
    "grand-teton-h100 nodes on meta-roce-pod: the benchmark pages' 'H100 96GB HBM2e' GPUs at their 'default 500W "
    "power limit', 8 a host fully connected with NVLink, 'backend RDMA network, 400 Gb/s per GPU' (Meta's RoCE "
    "training fabric, non-blocking within a pod of 3,072 GPUs: Llama 3, arXiv 2407.21783 section 3.3.1)")
# PyTorch's FSDP (FSDP1: fms-fsdp, Composer under llm-foundry) under mixed precision.
FSDP1_SHARDS = ("fp32: PyTorch's FSDP keeps each unit's sharded flat parameter in the model's FP32 and casts it to "
                "bf16 as the unit is gathered (MixedPrecision's param_dtype); the optimizer steps the FP32 shard, its "
                "gradient cast back to FP32 after the reduce-scatter")
TORCHTITAN_COMMON = {
    "parallel.zero_stage": "3: FSDP2 (fully_shard) over the data-parallel ranks, each transformer block a unit "
                           "(torchtitan parallelize_llama.py apply_fsdp), the embedding and the output head units of "
                           "their own; reshard after forward on, as the record states",
    "parallel.grad_dtype": "fp32: FSDP2's MixedPrecisionPolicy as TorchTitan sets it, param_dtype bf16 and "
                           "reduce_dtype fp32 (record precision: 'bf16 params / fp32 reduce'), so gradients are "
                           "reduce-scattered in fp32",
    "parallel.microbatch_size": "the record's local batch size: without pipeline parallelism TorchTitan runs a "
                                "rank's local batch as one micro-batch",
    "parallel.fsdp_copy_out": "true: FSDP2 all-gathers each unit into one flat buffer and copies every parameter "
                              "out of it on the compute stream before the unit runs (foreach_all_gather_copy_out's "
                              "torch.split_with_sizes_copy after current_stream().wait_event(all_gather_event), "
                              "torch/distributed/_composable/fsdp/_fsdp_collectives.py of the PyTorch these runs used)",
    "parallel.fsdp_param_shards": "fp32: FSDP2 keeps each module's sharded parameters in their own FP32 under "
                                  "MixedPrecisionPolicy (param_dtype applies to the gathered copies), and the "
                                  "optimizer steps those shards, their gradients cast to FP32",
    "parallel.separate_projections": "true: TorchTitan's Llama attention has wq, wk and wv and its feed-forward "
                                     "w1 and w3 as nn.Linear layers of their own (torchtitan models/llama/model.py), "
                                     "not fused GEMMs",
    "parallel.kv_repeat": "true: TorchTitan's Llama attention copies the 8 K/V heads out to every query head "
                          "(repeat_kv: expand then reshape) before calling scaled_dot_product_attention, as it did "
                          "until 'GQA without kv repeats' (pytorch/torchtitan #2259, January 2026)",
}


def torchtitan_stage_layers(layers: int, stages: int) -> list[int]:
    """TorchTitan's default pipeline split (torchtitan parallelisms/pipelining_utils.py generate_split_points at
    commit 9dec370): the first stage takes layers // stages, the middle stages one more each while the remainder
    lasts, the last stage what is left."""
    base, extra = divmod(layers, stages)
    out = [base]
    for _ in range(stages - 2):
        out.append(base + 1 if extra > 0 else base)
        extra -= 1 if extra > 0 else 0
    out.append(layers - sum(out))
    return out


# Whether a TorchTitan commit compiles the loss function along with the model
# when torch.compile is on: the Dec 2024 runs' train.py compiled the blocks
# alone; components/loss.py compiles the loss too from bbb1b616e (2025-04-02).
TORCHTITAN_COMPILES_LOSS = {"9dec370": False, "820504e": True}

TORCHTITAN_SCHEDULES = {"1F1B": "1f1b", "Interleaved1F1B": "interleaved-1f1b"}


def torchtitan_case(rec: dict) -> dict:
    par, hw, m = rec["parallel"], rec["hardware"], rec["model"]
    preset = TORCHTITAN_MODELS[m["name"]]
    # The context-parallel table trains longer sequences than the preset's:
    # the preset's shape at the record's length.
    model: object = preset
    if m["seq"] != load_preset(preset)["seq"]:
        model = dict(load_preset(preset))
        model["name"] = f"{model['name']} at {m['seq']} tokens"
        model["seq"] = m["seq"]
        model["source"] = f"the {preset} preset's shape; the sequence length of the record"
    check_shape(preset, {k: v for k, v in m.items() if k != "seq"}, rec["id"])
    cp = par.get("cp", 1)
    assert par["dp_replicate"] == 1, rec["id"]
    assumptions = dict(TORCHTITAN_COMMON)
    assumptions["cluster"] = TORCHTITAN_HOSTS
    recompute_text = par["recompute"]
    if recompute_text.startswith("full"):
        recompute = "full"
        assumptions["parallel.recompute"] = "full: TorchTitan's full activation checkpointing wraps every block"
    else:
        recompute = "selective-op"
        assumptions["parallel.recompute"] = (
            "selective-op: the record's 'selective', TorchTitan's default selective mode for these runs "
            "(llama3_8b.toml: mode 'selective', selective_ac_option 'op'), per-op checkpointing that keeps "
            "every other matmul's output and attention's (parallelize_llama.py _save_list)")
    fp8 = par["precision"].startswith("fp8")
    if cp > 1:
        assumptions["parallel.cp_algorithm"] = (
            "all-gather: TorchTitan's context parallelism (PyTorch's experimental context_parallel) with its default "
            "rotate method of the time, 'allgather': each rank's K and V all-gathered once a layer, beside the first "
            "block's attention (the table names no method; uncertain)")
        assumptions["parallel.cp_merge"] = (
            "pytorch: TorchTitan's context parallelism is PyTorch's context_parallel, which calls SDPA once per "
            "block of keys and merges the blocks, and accumulates their gradients, in eager FP32 ops "
            "(torch/distributed/tensor/experimental/_attention.py: _templated_ring_attention, _SDPAMerger)")
        assumptions["parallel.dp"] = ("the record's data-parallel degree; FSDP shards over dp x cp ranks (record: "
                                      + par.get("fsdp_shard_mesh", "dp_shard x cp") + ")")
    parallel = {
        "tp": par["tp"], "pp": par["pp"], "dp": par["dp"],
        "microbatch_size": par["local_batch"], "global_batch": par["global_batch"],
        "recompute": recompute, "zero_stage": 3,
        "elementwise": "fused" if par["torch_compile"] else "eager",
        "precision": "fp8" if fp8 else "bf16", "grad_dtype": "fp32", "loss": "pytorch", "fsdp_copy_out": True,
        "fsdp_param_shards": "fp32",
        "kv_repeat": True, "separate_projections": True,
    }
    if par["pp"] > 1:
        # TorchTitan's pipelines (torch.distributed.pipelining): the record's
        # schedule, micro-batch and stages per rank; its default layer split.
        vp = par.get("vp") or 1
        schedule = par["schedule"].split(" ")[0]
        parallel["microbatch_size"] = par["microbatch"]
        parallel["schedule"] = TORCHTITAN_SCHEDULES[schedule]
        if vp > 1:
            parallel["vp"] = vp
        parallel["stage_layers"] = torchtitan_stage_layers(m["layers"], par["pp"] * vp)
        parallel["reshard_after_forward"] = bool(par["fsdp_reshard_after_forward"])
        parallel["fsdp_grad_sync"] = "last-backward"
        assumptions["parallel.fsdp_grad_sync"] = (
            "last-backward: torch.distributed.pipelining runs every backward of an FSDP stage with "
            "set_requires_gradient_sync(False) and set_reshard_after_backward(False) and reduce-scatters after the "
            "stage's last backward (torch/distributed/pipelining/stage.py, backward_maybe_with_nosync), so each "
            "stage's gradients accumulate whole, in the FP32 reduce dtype (FSDP2's unsharded_accumulated_grad), and "
            "its parameters stay gathered until the optimizer step")
        assumptions["parallel.microbatch_size"] = (
            f"the record's micro-batch, {par['microbatch']}: the local batch of {par['local_batch']} runs as "
            f"{par['local_batch'] // par['microbatch']} micro-batches through the pipeline")
        assumptions["parallel.schedule"] = f"{parallel['schedule']}: the record's {schedule}" + (
            f", {vp} stages a rank, looped as torch.distributed.pipelining places them" if vp > 1 else "")
        assumptions["parallel.stage_layers"] = (
            "TorchTitan's default split of the layers over the stages (parallelisms/pipelining_utils.py "
            "generate_split_points): the first stage layers // stages, the middle ones one more while the "
            "remainder lasts, the last what is left; the embedding on the first stage, the norm and output on the "
            "last")
        assumptions["parallel.zero_stage"] = TORCHTITAN_COMMON["parallel.zero_stage"].replace(
            "reshard after forward on, as the record states",
            "reshard after forward off under pipeline parallelism, as the record states")
    if cp > 1:
        parallel["cp"] = cp
        parallel["cp_algorithm"] = "all-gather"
        parallel["cp_merge"] = "pytorch"
    if fp8:
        rowwise = "rowwise" in par["precision"]
        parallel["fp8_recipe"] = "rowwise" if rowwise else "tensorwise"
        assumptions["parallel.precision"] = (
            "fp8: torchao's Float8Linear on the transformer blocks' linear layers, BF16 elsewhere (record precision: '"
            + par["precision"] + "'); TorchTitan leaves the output layer in BF16")
        assumptions["parallel.fp8_recipe"] = (
            "rowwise: the record names rowwise scaling" if rowwise else
            "tensorwise: " + ("the record names tensorwise scaling" if "tensorwise" in par["precision"] else
                              "the table names no recipe; the record gives torchao's default of the time, "
                              "tensorwise dynamic scaling"))
        assumptions["parallel.fp8_param_gather"] = (
            "false: TorchTitan's float8 option enable_fsdp_float8_all_gather is off unless set, and the record does "
            "not say it was set (uncertain)")
    found = re.search(r"torchtitan ([0-9a-f]{7})", rec["source"])
    if found is None or found.group(1) not in TORCHTITAN_COMPILES_LOSS:
        sys.exit(f"{rec['id']}: its source names no TorchTitan commit of TORCHTITAN_COMPILES_LOSS (whether its loss "
                 "ran compiled)")
    commit = found.group(1)
    if par["torch_compile"] and TORCHTITAN_COMPILES_LOSS[commit]:
        parallel["loss"] = "compiled"
        assumptions["parallel.loss"] = (
            f"compiled: TorchTitan's loss_fn, torch.nn.functional.cross_entropy on pred.flatten(0, 1).float(), is "
            f"compiled with the model under training.compile at the record's commit {commit} (components/loss.py "
            "build_cross_entropy_loss, since bbb1b616e of April 2025), so Inductor reduces the 16-bit logits "
            "without an FP32 copy")
    else:
        assumptions["parallel.loss"] = (
            f"pytorch: TorchTitan's loss_fn is torch.nn.functional.cross_entropy on pred.flatten(0, 1).float(), run "
            f"eagerly at the record's commit {commit}"
            + (" (train.py's loss_fn, outside what torch.compile compiled: the blocks alone until April 2025)"
               if par["torch_compile"] else " (no torch.compile)"))
    assumptions["parallel.elementwise"] = (
        "fused: torch.compile (record torch_compile true) fuses each run of element-wise ops between the matmuls "
        "into one kernel" if par["torch_compile"] else
        "eager: no torch.compile (record torch_compile false): PyTorch runs TorchTitan's RMSNorm, rotary "
        "embeddings and SwiGLU op by op (see parallel.elementwise in docs/config-reference.md)")
    options = {}
    if par["tp"] > 1:
        parallel["sequence_parallel"] = True
        assumptions["parallel.sequence_parallel"] = (
            "true: TorchTitan's tensor parallelism shards the norms' activations along the sequence "
            "(parallelize_llama.py apply_tp: SequenceParallel on attention_norm and ffn_norm)")
        parallel["sp_batch_first"] = True
        assumptions["parallel.sp_batch_first"] = (
            "true: TorchTitan's activations are [batch, sequence, hidden] and SequenceParallel shards dim 1, so "
            "DTensor gathers and scatters along dim 1, which the functional collectives do as a gather along dim "
            "0 followed by torch.cat of the chunks along dim 1, and a torch.cat of dim-1 chunks before a "
            "reduce-scatter (torch/distributed/_functional_collectives.py all_gather_tensor, "
            "reduce_scatter_tensor); async TP's fused matmuls take the operands restrided instead "
            "(torch/distributed/_symmetric_memory restride_A_shard_for_fused_all_gather_matmul)")
        options["tp_comm_overlap"] = "forward" if par["async_tp"] else False
        assumptions["options.tp_comm_overlap"] = (
            "forward: async TP (record async_tp), the all-gather and reduce-scatter of each tensor-parallel "
            "matmul of the forward pass micro-pipelined with it; its authors measured 'up to ~29% forward pass "
            "speedup and ~8% E2E speedup in Llama3 7B' and '~20% forward pass speedup and ~8% E2E speedup in "
            "Llama3 70B' (PyTorch dev-discuss, '[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism "
            "in PyTorch', 2024), what the forward's gain alone gives end to end: the backward and the recomputed "
            "forward run their collectives as vanilla TP"
            if par["async_tp"] else "false: vanilla TP (record async_tp false)")
    measured = {"tokens_per_gpu_per_s": rec["measured"]["tokens_per_s_per_gpu"]}
    notes = "Measured: tokens per second per GPU"
    if rec["measured"].get("mem_gib_peak") is not None:
        measured["peak_memory_gib"] = rec["measured"]["mem_gib_peak"]
        notes += (" and the memory column (GiB): TorchTitan logs PyTorch's peak reserved memory, which exceeds the "
                  "tensors' peak by what the caching allocator keeps unused, not modelled")
    config = {
        "description": f"{m['name']} on {hw['gpus']} H100s (TorchTitan, FSDP {par['fsdp']}"
                       + (f", TP {par['tp']}" if par["tp"] > 1 else "") + ")",
        "cluster": {"node": "grand-teton-h100", "nodes": hw["nodes"], "network": "meta-roce-pod"},
        "model": model,
        "parallel": parallel,
    }
    if options:
        config["options"] = options
    return {
        "id": rec["id"],
        "group": ("TorchTitan H100 context parallel" if rec["id"].startswith(("torchtitan_t2_", "torchtitan_t6_"))
                  else "TorchTitan H100 Float8" if fp8 else "TorchTitan H100 BF16"),
        "source": rec["source"],
        "config": config,
        "assumptions": assumptions, "measured": measured, "notes": notes + ".",
    }


# ---------------------------------------------------------------------------
# fms-fsdp (foundation-model-stack/fms-fsdp README), Llama 2 on A100 and H100
# ---------------------------------------------------------------------------

FMS_MODELS = {"Llama-2-7B": "llama2-7b", "Llama-2-13B": "llama2-13b", "Llama-2-70B": "llama2-70b"}


def fms_case(rec: dict, same_model: list[dict]) -> dict:
    """`same_model`: the source's records of rec's model on either cluster, rec among them."""
    par, hw, m, meas = rec["parallel"], rec["hardware"], rec["model"], rec["measured"]
    preset = "llama2-34b" if m["name"].startswith("Llama-2-34B") else FMS_MODELS[m["name"]]
    check_shape(preset, m, rec["id"])
    a100 = hw["gpu"].startswith("A100")
    assumptions = {
        "cluster": (
            ("dgx-a100-like nodes with 2 HDR NICs (200 Gb/s each) on a non-blocking fat tree: the README gives "
             "'400Gbps' of inter-node interconnect, read as the node's (per node or per GPU is not stated, record "
             "uncertain), in NICs of the A100's generation; the fabric is not described")
            if a100 else
            ("dgx-h100-like nodes with 2 NDR NICs (400 Gb/s each) on a non-blocking fat tree: the README gives "
             "'800 Gbps' of inter-node interconnect, read as the node's (record uncertain), in NICs of the H100's "
             "generation; the fabric is not described")),
        "parallel.zero_stage": "3: FSDP (FULL_SHARD), each Llama block a unit, the record's sharding",
        "parallel.elementwise": "fused: the README's runs use torch.compile (record torch_compile true)",
        "parallel.grad_dtype": ("bf16: fms-fsdp's bf16 mixed-precision policy reduces gradients in bf16 "
                                "(uncertain: the policy's reduce dtype is read from the repository, not the README)"),
        "parallel.kv_repeat": ("true: fms's MultiHeadAttention expands grouped K and V to every query head ('Expand "
                               "kv so black-box attn will work') before F.scaled_dot_product_attention "
                               "(foundation-model-stack fms/modules/attention.py); Llama 2 34B and 70B group 8 K/V "
                               "heads, 7B and 13B none, so only they copy"),
    }
    parallel = {
        "tp": 1, "pp": 1, "dp": par["dp"], "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
        "zero_stage": 3, "elementwise": "fused", "kv_repeat": True, "precision": "bf16", "grad_dtype": "bf16",
        "fsdp_param_shards": "fp32",
    }
    assumptions["parallel.fsdp_param_shards"] = FSDP1_SHARDS
    if par["dp_replicate"] > 1:
        parallel["fsdp_shard_size"] = par["fsdp"]
        assumptions["parallel.fsdp_shard_size"] = (f"{par['fsdp']}: HSDP, sharded within a node and replicated "
                                                   f"across the {par['dp_replicate']} nodes (record sharding)")
    layers = m["layers"]
    if par["recompute"].startswith("none"):
        parallel["recompute"] = "none"
        assumptions["parallel.recompute"] = "none: the README's 'No AC'"
    else:
        # HFU counts the recomputed forward, MFU does not: a fraction p of the
        # blocks recomputed whole gives HFU / MFU = 1 + p / 3 (forward 1,
        # backward 2 of every block's FLOPs). The README ran "the exact same
        # scripts and configurations" on both clusters, so a model has one p;
        # its two clusters' ratios disagree beyond their two-digit rounding
        # (70B: 0.74 / 0.55 on A100s, 0.47 / 0.38 on H100s), so p is their mean.
        # Each reading is a fraction of the blocks, so it is held to [0, 1]
        # before the mean (the A100's 70B reads 1.04).
        ratios = [(r["measured"]["hfu"], r["measured"]["mfu"]) for r in same_model]
        each = [min(1.0, max(0.0, 3.0 * (h / f - 1.0))) for h, f in ratios]
        p = sum(each) / len(each)
        n = max(0, min(layers, round(p * layers)))
        parallel["recompute"] = "full" if n > 0 else "none"
        if 0 < n < layers:
            parallel["recompute_layers"] = n
        quoted = " and ".join(f"{h} / {f}" for h, f in ratios)
        assumptions["parallel.recompute"] = (
            f"full on {n} of {layers} blocks: fms-fsdp checkpoints every k-th block and does not publish k; "
            f"HFU counts the recomputed forward and MFU does not, so a fraction p of blocks recomputed whole gives "
            f"HFU / MFU = 1 + p / 3. The README ran the exact same scripts and configurations on its A100 and H100 "
            f"clusters, so one p serves both: the mean of the two clusters' readings ({quoted}, p = "
            + ", ".join(f"{x:.2f}" for x in each) + f", each held to [0, 1]), p = {p:.2f}: {n} blocks (one rule "
            "for every row of this source, from the source's published figures for the model)")
    return {
        "id": rec["id"], "group": "fms-fsdp Llama 2", "source": rec["source"],
        "config": {
            "description": f"{m['name']} on {hw['gpus']} {'A100' if a100 else 'H100'}s (fms-fsdp, "
                           + ("HSDP" if par["dp_replicate"] > 1 else "FSDP") + ")",
            "cluster": {
                "node": {
                    "name": "dgx-a100 with 2 NICs" if a100 else "dgx-h100 with 2 NICs",
                    "gpu": "A100-SXM4-80GB" if a100 else "H100-SXM5-80GB",
                    "gpus_per_node": 8,
                    "nvlink_gb_per_s": 300 if a100 else 450,
                    "nvlink_latency_us": 0.6,
                    "nvlink_bus_gb_per_s": 240 if a100 else 371,
                    "nics_per_node": 2,
                    "nic_gbit_per_s": 200 if a100 else 400,
                    "nic_bus_gb_per_s": 24 if a100 else 47.5,
                    "nic_latency_us": 0.6,
                    "sources": {"all": "the dgx-a100 / dgx-h100 presets' NVLink and NIC figures, with the "
                                       "README's inter-node bandwidth as 2 NICs"},
                },
                "nodes": hw["nodes"], "network": "selene-fat-tree",
            },
            "model": preset,
            "parallel": parallel,
        },
        "assumptions": assumptions,
        "measured": {"tokens_per_gpu_per_s": meas["tokens_per_s_per_gpu"]},
        "notes": "Measured: training throughput in tokens per second per GPU (the MFU and HFU columns are the same "
                 "measurement scaled; their ratio sets how many blocks are recomputed).",
    }


# ---------------------------------------------------------------------------
# llm-foundry (mosaicml/llm-foundry scripts/train/benchmarking), MPT with FSDP
# ---------------------------------------------------------------------------

def llmfoundry_case(rec: dict) -> dict:
    par, hw, m, meas = rec["parallel"], rec["hardware"], rec["model"], rec["measured"]
    preset = "mpt-70b" if m["name"].startswith("MPT-70B") else "mpt-7b"
    check_shape(preset, m, rec["id"])
    a100 = hw["gpu"].startswith("A100")
    pure = "PURE" in par["precision"]
    recompute = "full" if par["recompute"].startswith("full") else "none"
    # The benchmark tables' attention: MPT's attn_impl "triton", the record's
    # yaml and submit_benchmarks.py's default until after the last table.
    assert "attn_impl triton" in m["arch"], rec["id"]
    return {
        "id": rec["id"], "group": "llm-foundry MPT", "source": rec["source"],
        "config": {
            "description": f"{m['name'].split(' ')[0]} on {hw['gpus']} {'A100' if a100 else 'H100'}s (llm-foundry, FSDP)",
            "cluster": {"node": "dgx-a100" if a100 else "dgx-h100", "nodes": hw["nodes"],
                        "network": "selene-fat-tree" if a100 else "superpod-h100-rail"},
            "model": preset,
            "parallel": {
                "tp": 1, "pp": 1, "dp": par["dp"], "microbatch_size": par["microbatch"],
                "global_batch": par["global_batch"], "recompute": recompute, "zero_stage": 3,
                "precision": "bf16", "grad_dtype": "bf16" if pure else "fp32", "attention": "flash-v1",
                "fsdp_param_shards": "fp32",
            },
        },
        "assumptions": {
            "cluster": ("dgx-a100 nodes (8 NICs of 200 Gb/s: the table's 1600 Gbps node-node RoCE) on a non-blocking "
                        "fat tree (the fabric is not described)") if a100 else
                       ("dgx-h100 nodes on superpod-h100-rail: the table does not describe the H100 nodes' network "
                        "(record uncertain); a DGX H100 SuperPOD's is assumed"),
            "parallel.zero_stage": "3: FSDP FULL_SHARD (the table's sharding), each MPT block a unit",
            "parallel.fsdp_param_shards": FSDP1_SHARDS,
            "parallel.recompute": f"{recompute}: the table's activation checkpointing column",
            "parallel.grad_dtype": ("bf16: the table's MP Mode PURE (parameters, gradients and reductions in bf16)"
                                    if pure else
                                    "fp32: the table's MP Mode DEFAULT, whose FSDP mixed precision reduces "
                                    "gradients in fp32"),
            "parallel.attention": ("flash-v1: the tables ran MPT's attn_impl \"triton\" (the record's yaml, and the "
                                   "default of scripts/train/benchmarking/submit_benchmarks.py's --attn_impl until commit "
                                   "495218376 of 2024-04-22, after the last table), llmfoundry/models/layers/"
                                   "flash_attn_triton.py: flash-attn 1.x's Triton FlashAttention, whose docstring puts it "
                                   "slightly below FlashAttention (v1)'s CUDA kernel forward + backward; timed at "
                                   "FlashAttention (v1)'s figures"),
            "parallel.microbatch_size": f"{par['microbatch']}: the table's micro-batch size"
                                        + (f", {par['grad_accum']} of them a step (gradient accumulation)"
                                           if par.get("grad_accum", 1) > 1 else ""),
        },
        "measured": {"tokens_per_gpu_per_s": meas["tokens_per_s_per_gpu"]},
        "notes": "Measured: the table's throughput in tokens per second per GPU (its MFU, HFU, TFLOP/s and "
                 "samples/s are the same measurement scaled).",
    }


# ---------------------------------------------------------------------------
# DeepSpeed ZeRO-3 on Azure (microsoft/DeepSpeed blog, 2022), GPT without model parallelism
# ---------------------------------------------------------------------------

def dsazure_case(rec: dict) -> dict:
    par, hw, m = rec["parallel"], rec["hardware"], rec["model"]
    name = m["name"]
    offload = "offload_optimizer" in (par.get("offload") or "")
    case = {
        "id": rec["id"], "group": "DeepSpeed ZeRO-3 on Azure", "source": rec["source"],
        "config": {
            "description": f"{name} on {hw['gpus']} A100s of Azure NDm A100 v4, ZeRO-3 data parallelism only",
            "cluster": {"node": "dgx-a100", "nodes": hw["nodes"], "network": "selene-fat-tree"},
            "model": {
                "name": name, "arch": "gpt", "layers": m["layers"], "hidden": m["hidden"], "heads": m["heads"],
                "ffn": m["ffn"], "seq": m["seq"], "vocab": m["vocab"],
                "source": "the blog's Table 2 shape, as transcribed in " + RUNS_NAME,
            },
            "parallel": {
                "tp": 1, "pp": 1, "dp": par["dp"], "microbatch_size": par["microbatch"],
                "global_batch": par["global_batch"], "recompute": "full", "zero_stage": 3,
                "fsdp_prefetch_params": 5e7, "fsdp_max_live_params": 3e9, "fsdp_persistence_threshold": 1e5,
                "fsdp_max_reuse_distance": 3e9,
                "precision": "fp16", "grad_dtype": "fp16", "attention": "unfused",
            },
        },
        "assumptions": {
            "cluster": ("dgx-a100 nodes on a non-blocking fat tree: an NDm A100 v4 VM holds 8 A100 80GB on NVLink "
                        "with one 200 Gb/s HDR InfiniBand NIC per GPU (record hardware)"),
            "parallel.fsdp_prefetch_params": ("5e7: stage3_prefetch_bucket_size in the recipe (record optimizer), "
                                              "DeepSpeed's default"),
            "parallel.fsdp_persistence_threshold": ("1e5: DeepSpeed's default stage3_param_persistence_threshold "
                                                    "(deepspeed/runtime/zero/config.py), the value the recipes "
                                                    "meant: they spell the key 'stage3_param_persitence_threshold', "
                                                    "which DeepSpeed does not read"),
            "parallel.fsdp_max_live_params": ("3e9: stage3_max_live_parameters in the recipes' DeepSpeed config "
                                              "(examples/azure/run-175b.sh and run-1t.sh, zero_optimization), "
                                              "three times DeepSpeed's default, which its prefetcher checks before "
                                              "adding a tensor (partitioned_param_coordinator.py of DeepSpeed "
                                              "0.6.2: it prefetches while the parameters available fall short of "
                                              "the limit). One 175B layer held (1.8e9) is below it, so the next is "
                                              "gathered while it computes; a 1T layer (7.9e9) is above it, so none "
                                              "is gathered ahead of the one computing"),
            "parallel.fsdp_max_reuse_distance": (
                "3e9: stage3_max_reuse_distance in the same recipes' config. DeepSpeed's hooks release each module's "
                "parameters after the recomputation's forward unless used again within that many "
                "(partitioned_param_coordinator.py, __params_to_release): a 175B layer keeps every weight for its "
                "backward (the farthest, QKV, is used again 2.7e9 parameters later), a 1T layer gathers every "
                "weight but its last (fc2) again, two thirds of the layer"),
            "parallel.precision": "fp16: DeepSpeed's fp16 with loss scaling (record precision)",
            "parallel.grad_dtype": "fp16: ZeRO-3 under fp16 reduce-scatters the fp16 gradients",
            "parallel.attention": "unfused: Megatron-DeepSpeed of 2022, before FlashAttention",
            "parallel.recompute": ("full: --checkpoint-activations; the blog's TFLOP/s count the recomputed forward "
                                   "(Megatron's eq. 3), so they are compared with hardware_tflops_per_gpu"),
            "parallel.global_batch": "micro-batch x GPUs: the recipes accumulate no gradients (record uncertain)",
        },
        "measured": {"hardware_tflops_per_gpu": rec["measured"]["tflops_per_gpu"]},
        "notes": "Measured: the blog's peak TFLOP/s per GPU (hardware FLOPs, recomputation included).",
    }
    if offload:
        case["config"]["parallel"]["offload"] = "optimizer"
        case["assumptions"]["parallel.offload"] = (
            "optimizer: run-1t.sh offloads the optimizer state to the CPU (offload_optimizer cpu, --cpu-optimizer; "
            "record offload); the host is the dgx-a100 preset's, 8 DDR4-3200 channels a socket as on the VM's two "
            "EPYC 7V12 (the VM has 1.7 TB of DRAM, the preset 1 TB: only the fit check sees the difference)")
        case["config"]["parallel"]["offload_grad_copy"] = "blocking"
        case["assumptions"]["parallel.offload_grad_copy"] = (
            "blocking: DeepSpeed's stage 3 with offload_optimizer keeps each reduced gradient shard in a host "
            "buffer, brings it back to the GPU and copies it as FP32 into the CPU optimizer's gradient with a "
            "copy_ that is not non_blocking (deepspeed/runtime/zero/stage3.py __partition_grads in DeepSpeed "
            "0.6.2, the version the blog names; partition_grads unchanged in 2025), so the gradient hook's host "
            "thread waits for each reduction and its copies before launching more of the backward (the trainsim "
            "default for ZeRO-3 offloading the optimizer alone, written here for the reader)")
    return case


def dsazure_1t_checkpoints(case: dict) -> dict:
    """The Azure 1T case with its activation checkpoints on the host, departing from its recipe."""
    case["config"]["parallel"]["checkpoint_in_cpu"] = True
    case["assumptions"]["parallel.checkpoint_in_cpu"] = (
        "true, departing from the recipe (uncertain): run-1t.sh's command line does not pass --checkpoint-in-cpu "
        "(Megatron-DeepSpeed hands args.checkpoint_in_cpu to deepspeed.checkpointing.configure, False unless "
        "given), but the post's setup says 'the DeepSpeed library exploits offload capabilities where the "
        "activation and optimizer states are allocated in the main memory. Hence, 1.7TB memory capacity per node "
        "helps us to scale to large model sizes', and without it the model puts this micro-batch of 8 at 81.6 GiB "
        "of 74.5 usable (128 layers' 8 x 1024 x 25600 16-bit checkpoints, 50 GiB, beside a gathered layer), 9.5% "
        "over, about the memory model's own error on other rows. With it each checkpoint goes to the host and back "
        "with DeepSpeed's blocking copies (activation_checkpointing/checkpointing.py of DeepSpeed 0.6.2: .to() "
        "the CPU as the layer's forward starts, back as its recomputation starts)")
    return case


def reshard_pair(cases: list[dict]) -> dict:
    """An ordering-only copy of a TorchTitan case with reshard_after_forward off."""
    base = next(c for c in cases if c["id"] == "torchtitan_t1_8b_8gpu_fsdp_compile")
    copy = json.loads(json.dumps(base))
    copy["id"] = base["id"] + "_no_reshard"
    copy["group"] = "FSDP reshard after forward (ordering only)"
    copy["config"]["description"] += ", parameters kept gathered from forward to backward"
    copy["config"]["parallel"]["reshard_after_forward"] = False
    copy["assumptions"]["parallel.reshard_after_forward"] = (
        "false: FSDP2's reshard_after_forward=False keeps each unit's gathered parameters from its forward to its "
        "backward, which the fully_shard documentation describes as trading memory for fewer all-gathers")
    copy["measured"] = {}
    copy["notes"] = "No published figure: the case exists for the ordering of its memory against the measured case."
    return copy


def speedup_band(name: str, published: float, faster: str, slower: str, source: str) -> dict:
    """A published speedup's ordering: the gain (speedup - 1) kept within half to twice its size."""
    gain = published - 1.0
    lo, hi = round(1.0 + gain / 2, 3), round(1.0 + 2 * gain, 3)
    return {
        "name": name + "; the gain kept within half to twice its size)",
        "metric": "tokens_per_gpu_per_s",
        "ratio": {"numerator": faster, "denominator": slower, "min": lo, "max": hi},
        "source": source,
    }


def orderings(cases: dict[str, dict], speedups: dict[str, float]) -> list[dict]:
    out = []
    for size in ("1.5B", "6.2B"):
        for m in (24, 32, 64):
            ids = [f"zb_t4_{size}_m{m}_{s}" for s in ("1F1B", "ZB-1p", "ZB-2p")]
            vals = [cases[i]["measured"]["samples_per_gpu_per_s"] for i in ids]
            assert vals == sorted(vals) and len(set(vals)) == 3, ids
            out.append({
                "name": f"ZB-2p > ZB-1p > 1F1B throughput, GPT {size}, {m} micro-batches",
                "metric": "samples_per_gpu_per_s",
                "increasing": ids,
                "source": "arXiv:2401.10241 Table 4",
            })
    for size in ("22B", "175B", "530B", "1T"):
        num, den = f"korthikanti_t5_{size}_full_recompute", f"korthikanti_t5_{size}_seqpar_selective"
        published = cases[num]["measured"]["iteration_time_s"] / cases[den]["measured"]["iteration_time_s"]
        assert KORTHIKANTI_RATIO[0] <= published <= KORTHIKANTI_RATIO[1], (size, published)
        out.append({
            "name": f"selective recompute + sequence parallelism about 30% faster than full recompute, GPT {size} "
                    f"(published {published:.3f})",
            "metric": "iteration_time_s",
            "ratio": {"numerator": num, "denominator": den,
                      "min": KORTHIKANTI_RATIO[0], "max": KORTHIKANTI_RATIO[1]},
            "source": "arXiv:2205.05198 Table 5",
        })
    bf16, fp8 = ("moe_mixtral8x22b_h100_128gpu_tp2_pp8_vpp7_ep8_dropless_forcebalance_bf16",
                 "moe_mixtral8x22b_h100_128gpu_tp2_pp8_vpp7_ep8_forcebalance_fp8_blockwise")
    if bf16 in cases and fp8 in cases:
        published = cases[fp8]["measured"]["tokens_per_gpu_per_s"] / cases[bf16]["measured"]["tokens_per_gpu_per_s"]
        out.append(speedup_band(f"blockwise FP8 faster than BF16, Mixtral 8x22B on 128 H100s, forced balance "
                                f"(published {published:.3f}", published, fp8, bf16,
                                "yanring/Megatron-MoE-ModelZoo best_practice/mixtral/run_mixtral_8x22B.sh"))
    plain, overlapped = ("moe_qwen3_235b_h100_256gpu_tp2_ep32_pp8_vpp4_deepep",
                         "moe_qwen3_235b_h100_256gpu_tp2_ep32_pp8_vpp4_deepep_1f1b_overlap")
    if plain in cases and overlapped in cases:
        published = cases[plain]["measured"]["iteration_time_s"] / cases[overlapped]["measured"]["iteration_time_s"]
        out.append({
            "name": f"1F1B A2A overlap faster than without, Qwen3-235B on 256 H100s, ep 32 (published {published:.3f})",
            "metric": "tokens_per_gpu_per_s",
            "increasing": [plain, overlapped],
            "source": "yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md, H100 table",
        })
    out.append({
        "name": "2BP faster than 1F1B for a LLaMa-like 7B model on 4 GPUs",
        "metric": "samples_per_gpu_per_s",
        "increasing": ["twobp_llama7b_4gpu_1f1b", "twobp_llama7b_4gpu_2bp"],
        "source": "arXiv:2405.18047 abstract (1.70x)",
    })
    for size, vanilla, asynch in (("70B", "torchtitan_asynctp_70b_256gpu_fsdp32_tp8_bf16_vanilla",
                                   "torchtitan_asynctp_70b_256gpu_fsdp32_tp8_bf16_async"),
                                  ("8B", "torchtitan_asynctp_8b_64gpu_fsdp8_tp8_bf16_vanilla",
                                   "torchtitan_asynctp_8b_64gpu_fsdp8_tp8_bf16_async")):
        # The speedup column as published (rounded to two decimals there).
        published = speedups[asynch]
        out.append(speedup_band(f"async TP faster than vanilla TP, Llama 3.1 {size} in BF16 (published speedup "
                                f"{published:g}", published, asynch, vanilla,
                                "pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"))
    # Float8 against BF16 with everything else the same, as TorchTitan's tables pair them.
    for label, bf16, fp8 in (
            ("Llama 3.1 8B on 8 GPUs", "torchtitan_t1_8b_8gpu_fsdp_compile", "torchtitan_t1_8b_8gpu_fsdp_compile_fp8"),
            ("Llama 3.1 8B on 128 GPUs", "torchtitan_t3_8b_128gpu_fsdp_compile",
             "torchtitan_t3_8b_128gpu_fsdp_compile_fp8"),
            ("Llama 3.1 70B on 256 GPUs, vanilla TP", "torchtitan_asynctp_70b_256gpu_fsdp32_tp8_bf16_vanilla",
             "torchtitan_asynctp_70b_256gpu_fsdp32_tp8_fp8_tensorwise_vanilla"),
            ("Llama 3.1 8B on 64 GPUs, vanilla TP", "torchtitan_asynctp_8b_64gpu_fsdp8_tp8_bf16_vanilla",
             "torchtitan_asynctp_8b_64gpu_fsdp8_tp8_fp8_tensorwise_vanilla")):
        published = cases[fp8]["measured"]["tokens_per_gpu_per_s"] / cases[bf16]["measured"]["tokens_per_gpu_per_s"]
        out.append(speedup_band(f"Float8 (tensorwise) faster than BF16, {label} (published {published:.3f}",
                                published, fp8, bf16, cases[fp8]["source"].split(",")[0]))
    # TorchTitan's Table 5: the same 405B plan under both pipeline schedules.
    ids = ["torchtitan_t5_405b_512gpu_fsdp8_tp8_pp8_interleaved1f1b", "torchtitan_t5_405b_512gpu_fsdp8_tp8_pp8_1f1b"]
    published = cases[ids[0]]["measured"]["tokens_per_gpu_per_s"] / cases[ids[1]]["measured"]["tokens_per_gpu_per_s"]
    out.append(speedup_band(f"interleaved 1F1B faster than 1F1B, Llama 3.1 405B on 512 GPUs (published {published:.3f}",
                            published, ids[0], ids[1], cases[ids[0]]["source"].split(",")[0]))
    # Context parallelism: the same 8 GPUs on ever longer sequences.
    cp_ids = ["torchtitan_t2_8b_8gpu_fsdp1_cp8_s256k", "torchtitan_t2_8b_8gpu_fsdp2_cp4_s128k",
              "torchtitan_t2_8b_8gpu_fsdp4_cp2_s64k", "torchtitan_t2_8b_8gpu_fsdp8_cp1_s32k"]
    assert [cases[i]["measured"]["tokens_per_gpu_per_s"] for i in cp_ids] == sorted(
        cases[i]["measured"]["tokens_per_gpu_per_s"] for i in cp_ids)
    out.append({
        "name": "context parallelism: throughput falls as the sequence grows from 32K to 256K tokens (Llama 3.1 8B, "
                "8 GPUs, cp 1 to 8)",
        "metric": "tokens_per_gpu_per_s",
        "increasing": cp_ids,
        "source": "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 2",
    })
    for size in ("70b_256gpu_fsdp32", "8b_64gpu_fsdp8"):
        ids = [f"torchtitan_asynctp_{size}_tp8_fp8_rowwise_vanilla", f"torchtitan_asynctp_{size}_tp8_fp8_tensorwise_vanilla"]
        assert cases[ids[0]]["measured"]["tokens_per_gpu_per_s"] < cases[ids[1]]["measured"]["tokens_per_gpu_per_s"]
        out.append({
            "name": f"Float8 rowwise slower than tensorwise, Llama 3.1 {size.split('_')[0].upper()}, vanilla TP",
            "metric": "tokens_per_gpu_per_s",
            "increasing": ids,
            "source": "pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md",
        })
    out.append({
        "name": "FSDP with reshard after forward off holds more memory than with it on",
        "metric": "peak_memory_gib",
        "increasing": ["torchtitan_t1_8b_8gpu_fsdp_compile", "torchtitan_t1_8b_8gpu_fsdp_compile_no_reshard"],
        "source": "PyTorch fully_shard documentation (reshard_after_forward)",
    })
    out.append({
        "name": "breadth-first faster than Megatron-LM's interleaved schedule, 52B GPT at a small batch per GPU",
        "metric": "samples_per_gpu_per_s",
        "increasing": ["bfpp_gpt52b_64gpu_interleaved", "bfpp_gpt52b_64gpu_breadth_first"],
        "source": "arXiv:2211.05953 abstract (up to 1.43x)",
    })
    return out


# ---------------------------------------------------------------------------
# Megatron-Core MoE (NVIDIA/Megatron-LM's MoE README; yanring/Megatron-MoE-ModelZoo)
# ---------------------------------------------------------------------------

MOE_MODELS = {"Mixtral-8x7B": "mixtral-8x7b", "Mixtral-8x22B": "mixtral-8x22b", "Qwen3-235B-A22B": "qwen3-235b-a22b",
              "Qwen3-30B-A3B": "qwen3-30b-a3b", "DeepSeek-V3": "deepseek-v3", "GPT-OSS-120B": "gpt-oss-120b"}


# A MoE record's FP8 precision: the recipe Megatron-Core runs through
# Transformer Engine, and why.
MOE_FP8_RECIPES = {
    "fp8 blockwise": ("blockwise", (
        "fp8 with the blockwise recipe: the record's Transformer Engine --fp8-recipe blockwise (every linear "
        "GEMM, the experts' included, in FP8; the router in higher precision). Its --fp8-param-gather under the "
        "distributed optimizer is not modelled: the gather moves BF16")),
    "mxfp8": ("mxfp8", (
        "fp8 with the mxfp8 recipe in Transformer Engine: the record's PR=mxfp8 (--fp8-recipe mxfp8: every "
        "linear GEMM, the experts' included, in MXFP8 with FP8 inputs saved and cached FP8 weights; the router "
        "in higher precision)")),
}


def moe_preset_mismatch(rec: dict) -> str | None:
    """Why the record's model is not one of the MoE presets as they stand, or None."""
    m = rec["model"]
    if m.get("name") not in MOE_MODELS:
        return f"no model preset for {m.get('name')!r} (known: {', '.join(MOE_MODELS)})"
    preset = MOE_MODELS[m["name"]]
    p = load_preset(preset)
    for key in ("layers", "hidden", "heads", "kv_heads", "vocab"):
        if m.get(key) is not None and p.get(key) is not None and m[key] != p[key]:
            return f"the record's {key} {m[key]} is not the {preset} preset's {p[key]}"
    for key in ("experts", "top_k", "expert_ffn"):
        if (m.get("moe") or {}).get(key) is not None and m["moe"][key] != p["moe"][key]:
            return f"the record's moe.{key} {m['moe'][key]} is not the {preset} preset's {p['moe'][key]}"
    return None

# What the MoE records run that the simulator does not model yet; a record
# that needs one is left out, with the reason (SKIPPED_MOE).
def moe_unmodelled(rec: dict) -> str | None:
    par = rec["parallel"]
    why = moe_preset_mismatch(rec)
    if why:
        return why
    stages = par["pp"] * (par.get("vp") or 1)
    layers = rec["model"]["layers"]
    modelzoo_qwen3 = "Megatron-MoE-ModelZoo" in rec["source"] and MOE_MODELS[rec["model"]["name"]].startswith("qwen3")
    if stages > 1 and (layers + 2 if modelzoo_qwen3 else layers) % stages != 0:
        return (f"{layers} layers do not split evenly over pp x vp = {stages} stages and the record gives no "
                "pipeline layout")
    if par.get("offload") and not offload_modules(par):
        return f"offloading other than Megatron-Core's fine-grained one (the record's {par['offload']}) is not modelled"
    unknown = [m for m in offload_modules(par) if m not in ("expert_fc1", "moe_act")]
    if unknown:
        return (f"offloading {', '.join(unknown)} is not modelled yet (the record's {par['offload']}): without it "
                "the plan holds more activations than the GPU's memory")
    return None


def offload_modules(par: dict) -> list[str]:
    """The modules a record's --offload-modules names (Megatron-Core's fine-grained activation offloading)."""
    text = par.get("offload") or ""
    if "--offload-modules" not in text:
        return []
    return text.split("--offload-modules", 1)[1].strip(" )").split()


def gb200_segment_node(segment: int) -> dict:
    """The gb200-nvl72 preset with NVLink domains of `segment` trays."""
    node = load_node("gb200-nvl72")
    node["nvlink_domain_nodes"] = segment
    node["sources"] = dict(node["sources"], nvlink_domain_nodes=(
        f"{segment}: the run's Slurm segment, trays allocated inside one NVL72 rack (the case's assumptions); the "
        "preset's 18 is a whole rack"))
    return node


def modelzoo_gb200_segment(rec: dict) -> int:
    """The trays a GB200 run's Slurm allocation keeps in one NVL72 rack: the
    ModelZoo's commands pass SEGMENT to sbatch_benchmarking.sh, which hands it
    to Slurm as --segment (NVLink-aware allocation: nodes come in groups of
    SEGMENT trays, each group inside one rack), by the rule its GB200 scripts
    state, 'SEGMENT = EP * TP / 4' (best_practice/deepseek-v3/
    run_deepseek_v3_gb200.sh; the Qwen3 commands' SEGMENT=2 for ep 8 and
    SEGMENT=16 for ep 64 follow it, best_practice/qwen3/run_gb200_235b.sh,
    commit e865051). Which racks two segments share is not said, so a segment
    is the NVLink domain the run can count on."""
    par, hw = rec["parallel"], rec["hardware"]
    trays = par["ep"] * par["tp"] // hw["gpus_per_node"]
    assert trays * hw["gpus_per_node"] == par["ep"] * par["tp"] and hw["nodes"] % trays == 0, rec["id"]
    return trays


def recompute_modules(text: str) -> list[str]:
    """The modules of a record's '--recompute-modules a b (...)'."""
    words = text.split("--recompute-modules", 1)[1].split("(")[0].split()
    assert words and all(w in ("core_attn", "layernorm", "mlp", "moe", "moe_act") for w in words), text
    return words


def megatron_moe_flops_per_token(m: dict, causal_half: bool) -> float:
    """Model FLOPs a token, as Megatron-LM's num_floating_point_operations counts
    them (megatron/training/training.py): 12 L h^2 (attention + MLP + logits),
    the attention term (1 + g/a + s/h) q/h, whose s/h is halved for the causal
    mask since 2025 (the 2024-08 formula, commit 89ec6b1, counts it whole; the
    2025-05 one, commit 9eebd51, halves it); the routed experts' 1.5 f_e k / h
    (SwiGLU); the logits' V / (2 L h), the vocabulary as the runs pad it (to
    a multiple of --make-vocab-size-divisible-by x tp: 128 for Mixtral, 1187
    for Qwen3, which 32000 and 151936 already are). The router is not counted."""
    h, L, seq = m["hidden"], m["layers"], m["seq"]
    q = m["heads"] * m.get("head_dim", h // m["heads"])
    vocab = m["vocab"]
    assert vocab % (128 if vocab == 32000 else 1187) == 0
    attention = (1 + m["kv_heads"] / m["heads"] + seq / h / (2 if causal_half else 1)) * q / h
    mlp = m["moe"]["expert_ffn"] / h * m["moe"]["top_k"] * 1.5
    logits = vocab / (2 * L * h)
    return 12 * L * h * h * (attention + mlp + logits)


def moe_case(rec: dict) -> dict:
    par, hw, m, meas = rec["parallel"], rec["hardware"], rec["model"], rec["measured"]
    preset = MOE_MODELS[m["name"]]
    p = load_preset(preset)
    for key in ("layers", "hidden", "heads", "kv_heads", "vocab"):
        if m.get(key) is not None and m[key] != p[key]:
            raise SystemExit(f"{rec['id']}: model preset {preset} has {key} = {p[key]}, the record {m[key]}")
    for key in ("experts", "top_k", "expert_ffn"):
        if m["moe"][key] != p["moe"][key]:
            raise SystemExit(f"{rec['id']}: model preset {preset} has moe.{key} = {p['moe'][key]}, the record {m['moe'][key]}")
    model: object = preset
    if m["seq"] != p["seq"]:
        model = dict(p)
        model["name"] = f"{p['name']} at {m['seq']} tokens"
        model["seq"] = m["seq"]
        model["source"] = f"the {preset} preset's shape; the sequence length of the record"
    gb200 = hw["gpu"].startswith("GB200")
    vp = par.get("vp") or 1
    routing = par.get("moe_routing") or ""
    parallel = {
        "tp": par["tp"], "pp": par["pp"], "dp": par["dp"], "ep": par["ep"], "vp": vp,
        "microbatch_size": par["microbatch"], "global_batch": par["global_batch"],
        "schedule": "interleaved-1f1b" if vp > 1 else "1f1b",
        "sequence_parallel": par["tp"] > 1, "distributed_optimizer": True, "grad_dtype": "fp32",
        "moe_dispatcher": "deepep" if "DeepEP" in str(par["moe_dispatcher"]) else "alltoall",
    }
    if par.get("cp", 1) > 1:
        parallel["cp"] = par["cp"]
    if not gb200:
        parallel["attention"] = "cudnn"
    modelzoo = "Megatron-MoE-ModelZoo" in rec["source"]
    if modelzoo and preset.startswith("qwen3") and par["pp"] * vp > 1:
        # --account-for-embedding-in-pipeline-split and -loss-: the embedding
        # and the loss each count as a layer, 96 over pp x vp stages.
        per_stage = (m["layers"] + 2) // (par["pp"] * vp)
        assert per_stage * par["pp"] * vp == m["layers"] + 2, rec["id"]
        parallel["stage_layers"] = [per_stage - 1] + [per_stage] * (par["pp"] * vp - 2) + [per_stage - 1]
    segment = modelzoo_gb200_segment(rec) if gb200 else 0
    assumptions = {
        "cluster": (f"gb200-nvl72 trays, every {segment} one NVLink domain: the ModelZoo's command allocates the "
                    f"{hw['nodes']} trays in Slurm segments of SEGMENT = ep x tp / 4 = {segment}, each inside one of "
                    "the record's NVL72 racks (sbatch_benchmarking.sh's --segment; best_practice/qwen3/"
                    "run_gb200_235b.sh, commit e865051), and does not say which racks the segments share; the "
                    "scale-out network is not stated: cx8-800g-rail" if gb200 else
                    "dgx-h100 nodes on superpod-h100-rail: the record's H100s with NVLink 4 and 8 x 400 Gb/s "
                    "InfiniBand a node (the form factor is not stated: SXM, as NVLink 4 implies)"),
        "parallel.distributed_optimizer": "true: Megatron-Core's distributed optimizer (ZeRO-1), as the record runs",
        "parallel.grad_dtype": "fp32: Megatron-Core reduces gradients in FP32 unless told otherwise "
                               "(--accumulate-allreduce-grads-in-fp32 off, its main gradients FP32)",
        "parallel.sequence_parallel": ("true: Megatron-Core requires it of MoE with tp > 1" if par["tp"] > 1 else
                                       "false: tp 1 has no tensor-parallel group to split the sequence over"),
        "parallel.recompute": "none: " + (par.get("recompute") or "the record states none"),
        "parallel.attention": (
            "flash: Transformer Engine runs cuDNN's fused attention on Blackwell too, but no cuDNN figure of a "
            "Blackwell GPU is published; the preset's attention figure, FlashAttention-4's, stands in" if gb200 else
            "cudnn: Megatron-Core's attention is Transformer Engine's, which takes cuDNN's fused attention over "
            "FlashAttention on Hopper and newer ('Disabling FlashAttention to give FusedAttention preference on Hopper+ "
            "for performance reasons', transformer_engine/pytorch/attention/dot_product_attention/utils.py, "
            "get_attention_backend)"),
        "parallel.moe_dispatcher": (f"{parallel['moe_dispatcher']}: the record's {par['moe_dispatcher']}"
                                    + (": HybridEP moves the tokens of an expert-parallel group inside one NVLink "
                                       "domain over NVLink, as an all-to-all there does, and each group of ep x tp "
                                       f"= {par['ep'] * par['tp']} GPUs lies inside one segment"
                                       if "HybridEP" in str(par["moe_dispatcher"]) else "")),
    }
    if vp > 1:
        assumptions["parallel.vp"] = f"{vp}: the record's virtual pipeline stages"
    recompute = par.get("recompute") or "none"
    if recompute.startswith("selective"):
        parallel["recompute"] = "selective"
        parallel["recompute_modules"] = recompute_modules(recompute)
        assumptions["parallel.recompute"] = (f"selective, modules {', '.join(parallel['recompute_modules'])}: the "
                                             f"record's {recompute} (the list replaces Megatron-Core's default "
                                             "core_attn)")
    elif recompute.startswith("full"):
        parallel["recompute"] = "full"
        assumptions["parallel.recompute"] = f"full, every layer: the record's {recompute}"
    fsdp = par.get("zero_stage") == 3
    if fsdp:
        del parallel["distributed_optimizer"]
        parallel["zero_stage"] = 3
        assumptions.pop("parallel.distributed_optimizer")
        assumptions["parallel.zero_stage"] = (
            "3: the record's Megatron FSDP ('FSDP On'; the level of sharding is not stated, parameters included as "
            "FSDP does by default), a unit a layer: each unit gathered before its forward and its backward and its "
            "gradients reduce-scattered after, its experts over the expert-data-parallel group (edp "
            f"{par.get('edp')}), the rest over dp {par['dp']}")
    case = {"id": rec["id"], "group": "Megatron-Core MoE", "source": rec["source"]}
    options: dict = {}
    if "stage_layers" in parallel:
        assumptions["parallel.stage_layers"] = (
            "one layer fewer on the first and the last stage: the ModelZoo's Qwen3 config passes "
            "--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split, so 94 layers and "
            "those two split evenly (runtime.conf's 96 'layers'; yanring/Megatron-MoE-ModelZoo "
            "model_configs/benchmarking/Qwen3-235B-A22B.yaml, commit e865051)")
    recipe = MOE_FP8_RECIPES.get("fp8 blockwise" if par["precision"].startswith("fp8 blockwise") else par["precision"])
    if recipe:
        parallel["precision"] = "fp8"
        parallel["fp8_recipe"], parallel["fp8_library"] = recipe[0], "transformer-engine"
        assumptions["parallel.precision"] = recipe[1]
        if modelzoo:
            parallel["optimizer_moment_dtype"] = "bf16"
            assumptions["parallel.optimizer_moment_dtype"] = (
                "bf16: the ModelZoo's sbatch_benchmarking.sh passes --use-precision-aware-optimizer --exp-avg-dtype "
                "bf16 --exp-avg-sq-dtype bf16 with PR=fp8 and PR=mxfp8 (since commit 6bb4364, 2025-06-03; at "
                "e865051)")
    if offload_modules(par):
        parallel["offload_modules"] = offload_modules(par)
        assumptions["parallel.offload_modules"] = (
            f"{', '.join(parallel['offload_modules'])}: the record's {par['offload']}; each layer's copies to the host "
            "and back run beside its passes over the node's host link")
    if par.get("a2a_overlap"):
        options["moe_a2a_overlap"] = True
        assumptions["options.moe_a2a_overlap"] = "true: the record's 1F1B A2A overlap"
    if par.get("cuda_graph"):
        assumptions["cuda_graph"] = ("not modelled: the record's CUDA graphs (" + par["cuda_graph"] + ") take the "
                                     "launch cost off the captured kernels; the simulator charges every kernel's")
    if modelzoo and not fsdp:
        options["overlap_grad_reduce"] = True
        options["overlap_param_gather"] = True
        assumptions["options.overlap_grad_reduce"] = ("true, and overlap_param_gather: the ModelZoo's model configs "
                                                      "pass --overlap-grad-reduce and --overlap-param-gather")
    if "capacity-factor" in routing:
        model = dict(p) if isinstance(model, str) else model
        model["moe"] = dict(p["moe"], capacity_factor=1.0)
        assumptions["model.moe.capacity_factor"] = ("1.0: the record's token dropping, --moe-expert-capacity-factor "
                                                    "1.0 with --moe-pad-expert-input-to-capacity")
    elif ("force" in routing or "forced" in routing) and "unless" not in routing:
        assumptions["options.moe_imbalance"] = "1 (balanced): the record's --moe-router-force-load-balancing"
    elif "Performance Results table (256 H100 GPUS)" in rec["source"]:
        # The table does not say, but the commands that ran its rows do.
        assumptions["options.moe_imbalance"] = (
            "1 (balanced): the ModelZoo's command for every row of this table passes "
            "--moe-router-force-load-balancing ('for stable benchmarking'; yanring/Megatron-MoE-ModelZoo "
            "examples/qwen3/run_235b.sh, added in commit 31c5686 beside the table, removed in d95e6e5)")
    else:
        assumptions["options.moe_imbalance"] = ("1 (balanced): drop-less routing, whose busiest expert's load the "
                                                "record does not publish; the prediction is that of balanced routing")
    if "tflops_per_gpu_forced_balance" in meas:
        # The long-context table gives both; the forced-balance column is the balanced run.
        tflops = meas["tflops_per_gpu_forced_balance"]
        assumptions["options.moe_imbalance"] = "1 (balanced): the table's forced-balance column"
    else:
        tflops = meas.get("tflops_per_gpu")
    case["config"] = {
        "description": f"{p['name']} on {hw['gpus']} {'GB200' if gb200 else 'H100'}s (Megatron-Core, ep {par['ep']})",
        "cluster": ({"node": gb200_segment_node(segment), "nodes": hw["nodes"],
                     "network": "cx8-800g-rail"} if gb200 else
                    {"node": "dgx-h100", "nodes": hw["gpus"] // 8, "network": "superpod-h100-rail"}),
        "model": model,
        "parallel": parallel,
    }
    if options:
        case["config"]["options"] = options
    case["assumptions"] = assumptions
    if "step_time_s" in meas:
        case["measured"] = {"iteration_time_s": meas["step_time_s"]}
        case["notes"] = "Measured: the table's step time (its TFLOP/s is the same measurement scaled)."
    else:
        # Megatron-LM's formula of the source's date: the 2024 README's counts
        # causal attention whole, the 2025 tables' half of it.
        causal_half = "Megatron-LM megatron/core/transformer/moe/README.md" not in rec["source"]
        shape = dict(m, seq=m["seq"], head_dim=p.get("head_dim", m["hidden"] // m["heads"]))
        per_token = megatron_moe_flops_per_token(shape, causal_half)
        case["measured"] = {"tokens_per_gpu_per_s": round(tflops * 1e12 / per_token, 1)}
        case["notes"] = (f"Measured: the published {tflops} TFLOP/s per GPU in tokens a second per GPU, divided by "
                         f"Megatron-LM's model FLOPs a token for this shape ({per_token:.4g}, causal attention "
                         f"{'halved' if causal_half else 'whole'}, as the formula of the source's date counts it).")
    return case


# Records not turned into cases, and why.
SKIPPED = {
    "zb_t5_": "theoretical bubble rates computed from profiled times (Table 5), not measurements",
    "fsdp_dsazure_zero3_530b_": "micro-batch and global batch not published for the peak figure",
    "fsdp_dsazure_zero3_2t_": "no recipe of its own (the published ones are the 175B's and the 1T's), so its "
                              "ZeRO-3 limits and offloading would be the 1T's, borrowed: the post credits CPU "
                              "offloading of activations and optimizer state for its largest models without "
                              "saying which model ran with which",
    "deeppool_headline": "the claim is cluster throughput with background jobs (foreground plus multiplexed work) "
                         "against data parallelism, on models and GPUs the record does not give; the summary's "
                         "top-level metrics are the foreground job's, so no ordering states the claim",
}

DESCRIPTION = (
    "Validation cases: published training runs as trainsim configs, each with its source, the assumptions that "
    "fill what the source leaves open, and the published measurement. Written by "
    "tools/validation/convert_published_runs.py from " + RUNS_NAME + "; edit the converter, not this file. "
    "Groups: Megatron-LM Table 1 (arXiv:2104.04473), Korthikanti Table 5, Figure 1 and Table 4 (arXiv:2205.05198; "
    "Figure 1 is the paper's memory formulas, not a measurement, so its group checks the simulator's memory "
    "accounting against the paper's; Table 4 times one layer, compared with the summary's one-layer times in a MAPE "
    "of their own), BLOOM 176B production and the BLOOM topology sweep (bigscience-workshop/bigscience "
    "tr11-176B-ml; the sweep's memory is nvidia-smi's, compared with the tensors' peak plus the CUDA context; "
    "nvidia-smi counts the allocator's reserve too), Zero bubble Table 4 (arXiv:2401.10241), TorchTitan H100 BF16 (pytorch/torchtitan benchmarks: FSDP2, TP and async "
    "TP on Grand Teton H100s; the memory column is PyTorch's peak reserved memory, above the tensors' peak the "
    "simulator reports), TorchTitan H100 Float8 (the same hosts and tables with torchao's Float8 linear layers, "
    "tensorwise or rowwise scaling; the 405B rows with pipeline parallelism as TorchTitan splits the layers), TorchTitan "
    "H100 context parallel (Llama 3.1 8B on 8 GPUs and 405B on 512 GPUs with Float8 at 32K to 256K tokens, cp 1 to "
    "8, K and V all-gathered), fms-fsdp Llama 2 (FSDP and HSDP on A100 and H100; the blocks recomputed follow from the "
    "published HFU / MFU), llm-foundry MPT (FSDP on A100 and H100) and DeepSpeed ZeRO-3 on Azure (175B and 1T, "
    "data parallelism only, the 1T with its optimizer and its activation checkpoints on the host) and Megatron-Core MoE (Mixtral 8x7B and 8x22B, "
    "Qwen3-235B-A22B on H100 and GB200 with expert parallelism; a published TFLOP/s becomes tokens a second by "
    "Megatron-LM's own FLOP formula of the source's date). Cases with an empty `measured` carry no published per-run figure and exist only for the "
    "orderings of headline claims (2BP, breadth-first, FSDP's reshard after forward). The async TP bands keep the "
    "published speedup's gain within half to twice its size, and so do the Float8-over-BF16 bands. The selective-recompute ratio band (1.20 to 1.45) takes "
    "the published 1.29 to 1.32 ('about 30%'), keeps the effect within a third of its size on the low side, and "
    "on the high side admits the FLOP ratio of one extra forward per layer (about 4/3) plus the repeated "
    "tensor-parallel communication (Table 4: 27.2 / 20.3 = 1.34 per layer). Not converted: "
    + "; ".join(f"{k.rstrip('_')}*: {v}" if k.endswith("_") else f"{k}: {v}" for k, v in SKIPPED.items()) + "."
)


# Runs whose software predates FlashAttention (arXiv 2205.14135, May 2022) or
# did not enable it: their attention kept the s x s scores in memory.
UNFUSED_ATTENTION = {
    "Megatron-LM Table 1": ("unfused: Megatron-LM of 2021 ran Q K^T and the weighted sum as batched GEMMs around its "
                            "fused scale-mask-softmax kernel; FlashAttention came a year later"),
    "Korthikanti Table 5": ("unfused: Megatron-LM of early 2022, before FlashAttention; the paper's activation formula "
                            "keeps the scores (its 5as/h term)"),
    "BLOOM 176B production": ("unfused: Megatron-DeepSpeed's fused scale-mask-softmax with ALiBi (2022); "
                              "FlashAttention had no ALiBi then"),
    "BLOOM topology sweep": ("unfused: Megatron-DeepSpeed's fused scale-mask-softmax with ALiBi (2022); "
                             "FlashAttention had no ALiBi then"),
    "Zero bubble Table 4": "unfused: the authors' script does not pass --use-flash-attn",
}

MEGATRON_P2P = ("blocking: Megatron-LM's pipeline sends and receives of 2021-2023 (megatron/p2p_communication.py, "
                "_communicate) wait for every request of batch_isend_irecv and then call torch.cuda.synchronize() "
                "'to protect against race condition', so a rank computes nothing while its send is in flight")
BLOCKING_SENDS = {
    "Megatron-LM Table 1": MEGATRON_P2P,
    "Korthikanti Table 5": MEGATRON_P2P,
    "BLOOM 176B production": ("blocking: DeepSpeed's pipeline engine sends with blocking point-to-point calls, and "
                              "tr11-176B-ml.slurm sets CUDA_LAUNCH_BLOCKING=1, which makes every launch wait"),
    "BLOOM topology sweep": ("blocking: DeepSpeed's pipeline engine sends with blocking point-to-point calls "
                             "(Megatron-DeepSpeed of 2022)"),
    "Zero bubble Table 4": MEGATRON_P2P + (" (the authors' code forks Megatron-LM; one version of their script "
                                           "passes --no-overlap-p2p-communication)"),
}


# How each run adds a micro-batch's weight gradients to the iteration's
# (parallel.grad_accumulation), from the code each group ran.
GRAD_ACCUMULATION = {
    "Megatron-LM Table 1": ("add", (
        "add: Megatron-LM of 2021 had no gradient-accumulation fusion (gradient_accumulation_fusion came with its "
        "2022 code); with --fp16 and no --accumulate-allreduce-grads-in-fp32 (examples/sc21/CONFIG.sh) each "
        "micro-batch's 16-bit weight gradient is added into a 16-bit buffer by a separate kernel: DDP=local's "
        "main_grad.add_ (megatron/model/distributed.py), DDP=torch's autograd accumulation, which stores the first "
        "micro-batch's gradient without an add (charged anyway: at most one add per iteration too many)")),
    "Korthikanti Table 5": ("fused", (
        "fused: Megatron-LM's release of sequence parallelism (2022) carries gradient_accumulation_fusion, on by "
        "default, in which the weight-gradient GEMM accumulates into main_grad itself; the paper's runs are taken "
        "to use it")),
    "BLOOM 176B production": ("cast-add", (
        "cast-add: after every micro-batch's backward DeepSpeed's pipeline engine calls the BF16 optimizer's "
        "update_hp_grads (deepspeed/runtime/pipe/engine.py, _exec_backward_pass), which casts each bf16 gradient to "
        "fp32 and adds it to the fp32 gradient (deepspeed/runtime/bf16_optimizer.py: "
        "hp_grad.add_(lp.grad.to(fp32)))")),
    "BLOOM topology sweep": ("add", (
        "add: these runs used the fp16 optimizer (the BF16 optimizer came on 02-28), which leaves accumulation to "
        "autograd: each micro-batch's fp16 gradient is added into param.grad by PyTorch's AccumulateGrad, the "
        "first stored without an add (charged anyway: one add in 21 or more per iteration too many)")),
    "Zero bubble Table 4": ("fused", (
        "fused: the authors' code forks Megatron-LM of 2023, whose gradient_accumulation_fusion is on by default")),
}


# The gradient buffer each run accumulated and reduced (parallel.grad_dtype).
GRAD_DTYPE = {
    "Megatron-LM Table 1": ("fp16", (
        "fp16: the script passes --fp16 and not --accumulate-allreduce-grads-in-fp32 (examples/sc21/CONFIG.sh), "
        "so gradients accumulate and are all-reduced in the parameters' fp16")),
    "Korthikanti Table 5": ("fp32", (
        "fp32: the paper does not state the precision (record: 'fp16? / bf16?'), but its Figure 1 counts 18 bytes "
        "for each parameter's weight, gradient and optimizer state, 2 + 4 + 12: a 16-bit weight, an fp32 gradient "
        "(Megatron-LM's main_grad in fp32, as under bf16) and fp32 Adam state. With one replica the gradients' "
        "type barely matters: fp32 ones spare the step its cast to fp32 and double the tied embedding's "
        "all-reduce (13.005 s against 13.006 s with bf16 gradients for the 175B run with selective recompute)")),
    "BLOOM 176B production": ("fp32", (
        "fp32: the BF16 optimizer keeps fp32 gradients and hands them to the data-parallel reduction "
        "(deepspeed/runtime/bf16_optimizer.py: get_grads_for_reduction returns the fp32 gradients)")),
    "BLOOM topology sweep": ("fp16", (
        "fp16: the fp16 optimizer of these runs accumulates and reduces the parameters' fp16 gradients")),
    "Zero bubble Table 4": ("fp16", (
        "fp16: the authors' script passes --fp16 and not --accumulate-allreduce-grads-in-fp32")),
}


# The 16-bit type of each run (parallel.precision): fp16 adds dynamic loss
# scaling's pass over the gradients to every optimizer step.
PRECISION = {
    "Megatron-LM Table 1": ("fp16", "fp16: the script passes --fp16 (examples/sc21/CONFIG.sh)"),
    "Korthikanti Table 5": ("bf16", (
        "bf16: the paper does not state the precision (record: 'fp16? / bf16?'); its Figure 1's 18 bytes a "
        "parameter (fp32 gradients) are what Megatron-LM keeps under bf16")),
    "BLOOM 176B production": ("bf16", "bf16: tr11-176B-ml.slurm passes --bf16"),
    "BLOOM topology sweep": ("fp16", (
        "fp16: these runs used the fp16 optimizer (the BF16 optimizer came on 02-28, chronicles-prequel.md, "
        "'Rebalancing layers')")),
    "Zero bubble Table 4": ("fp16", "fp16: the authors' script passes --fp16"),
}


# How a stage's output crosses to the next pipeline stage under tensor
# parallelism without sequence parallelism (parallel.pipeline_send_split).
# Only groups with tp > 1 and pp > 1 are listed; the zero-bubble runs use tp 1.
DEEPSPEED_PARTITIONED = (
    "scatter-gather: DeepSpeed's pipeline engine sends 1/tp of each activation from every tensor rank and the "
    "receiver all-gathers it within its tensor group (deepspeed/runtime/pipe/engine.py: is_pipe_partitioned = "
    "is_model_parallel, PartitionedTensor)")
SEND_SPLIT = {
    "Megatron-LM Table 1": (
        "scatter-gather: the paper's scatter/gather optimisation (arXiv:2104.04473 section 4.1): each tensor rank "
        "sends 1/tp of the activation and the receiving stage all-gathers it over NVLink; Megatron-LM's "
        "--scatter-gather-tensors-in-pipeline, on by default"),
    "Korthikanti Table 5": (
        "scatter-gather: Megatron-LM of 2022 scatters and gathers pipeline tensors when sequence parallelism is off "
        "(megatron/p2p_communication.py: 'if args.scatter_gather_tensors_in_pipeline and not "
        "args.sequence_parallel'); with it each rank sends its own 1/tp of the sequence"),
    "BLOOM 176B production": DEEPSPEED_PARTITIONED,
    "BLOOM topology sweep": DEEPSPEED_PARTITIONED,
}


# Figure 1's cases are the Table 5 plans, and Table 4 times a layer of the same
# code: the same software, the same rules.
for _rules in (UNFUSED_ATTENTION, BLOCKING_SENDS, GRAD_ACCUMULATION, GRAD_DTYPE, SEND_SPLIT, PRECISION):
    _rules[FIG1_GROUP] = _rules["Korthikanti Table 5"]
    _rules[T4_GROUP] = _rules["Korthikanti Table 5"]


def build(runs: dict) -> dict:
    cases: list[dict] = []
    skipped_moe: dict[str, str] = {}
    fig1: list[dict] = []
    layer: list[dict] = []
    for rec in runs["records"]:
        rid = rec["id"]
        if rid.startswith("megatron_sc21_t1_"):
            cases.append(megatron_case(rec))
        elif rid.startswith("korthikanti_t5_"):
            cases.append(korthikanti_case(rec))
            fig1.append(korthikanti_fig1_case(rec))
        elif rid.startswith("korthikanti_t4_"):
            layer.append(korthikanti_t4_case(rec))
        elif rid == "bloom176b_production":
            cases.append(bloom_production_case(rec))
        elif rid.startswith("bloom_prequel_"):
            cases.append(bloom_prequel_case(rec))
        elif rid.startswith("zb_t4_"):
            cases.append(zb_case(rec))
        elif rid == "2bp_headline":
            cases.extend(twobp_cases(rec))
        elif rid == "bfpp_headline":
            cases.extend(bfpp_cases(rec))
        elif any(rid.startswith(k) for k in SKIPPED):
            continue
        elif rid.startswith("moe_"):
            why = moe_unmodelled(rec)
            if why is None:
                cases.append(moe_case(rec))
            else:
                skipped_moe[rid] = why
        elif rid.startswith("torchtitan_"):
            cases.append(torchtitan_case(rec))
        elif rid.startswith("fsdp_fms_"):
            # The model's rows on either cluster that recompute and publish both figures.
            same_model = [r for r in runs["records"]
                          if r["id"].startswith("fsdp_fms_") and r["model"]["name"] == rec["model"]["name"]
                          and not r["parallel"]["recompute"].startswith("none")
                          and "hfu" in r["measured"] and "mfu" in r["measured"]]
            cases.append(fms_case(rec, same_model))
        elif rid.startswith("fsdp_llmfoundry_"):
            cases.append(llmfoundry_case(rec))
        elif rid.startswith("fsdp_dsazure_"):
            case = dsazure_case(rec)
            cases.append(dsazure_1t_checkpoints(case) if rid.startswith("fsdp_dsazure_zero3_1t_") else case)
        else:
            raise SystemExit(f"record {rid}: neither converted nor listed in SKIPPED")
    cases.append(reshard_pair(cases))
    # Figure 1's cases right after the Table 5 cases whose plans they share.
    after = max((i for i, c in enumerate(cases) if c["group"] == "Korthikanti Table 5"), default=len(cases) - 1)
    cases[after + 1:after + 1] = fig1 + layer
    for case in cases:
        why = UNFUSED_ATTENTION.get(case["group"])
        if why is not None:
            case["config"]["parallel"]["attention"] = "unfused"
            case["assumptions"]["parallel.attention"] = why
        if case["group"] in GRAD_ACCUMULATION:
            value, why = GRAD_ACCUMULATION[case["group"]]
            case["config"]["parallel"]["grad_accumulation"] = value
            case["assumptions"]["parallel.grad_accumulation"] = why
        if case["group"] in PRECISION:
            value, why = PRECISION[case["group"]]
            case["config"]["parallel"]["precision"] = value
            case["assumptions"]["parallel.precision"] = why
        if case["group"] in GRAD_DTYPE:
            value, why = GRAD_DTYPE[case["group"]]
            case["config"]["parallel"]["grad_dtype"] = value
            case["assumptions"]["parallel.grad_dtype"] = why
        why = BLOCKING_SENDS.get(case["group"])
        if why is not None:
            case["config"].setdefault("options", {})["pipeline_sends"] = "blocking"
            case["assumptions"]["options.pipeline_sends"] = why
        why = SEND_SPLIT.get(case["group"])
        if why is not None:
            case["config"]["parallel"]["pipeline_send_split"] = "scatter-gather"
            case["assumptions"]["parallel.pipeline_send_split"] = why
    by_id = {c["id"]: c for c in cases}
    assert len(by_id) == len(cases), "duplicate case ids"
    speedups = {r["id"]: r["measured"]["async_tp_speedup"] for r in runs["records"]
                if "async_tp_speedup" in r.get("measured", {})}
    description = DESCRIPTION
    if skipped_moe:
        description += (" Megatron-Core MoE records not converted: "
                        + "; ".join(f"{rid}: {why}" for rid, why in skipped_moe.items()) + ".")
    return {"description": description, "cases": cases, "orderings": orderings(by_id, speedups)}


def dumps(value, indent: int = 0) -> str:
    """JSON with two-space indentation, lists of scalars on one line."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        return "[\n" + ",\n".join(inner + dumps(v, indent + 1) for v in value) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help=f"published-runs.json (default {DEFAULT_RUNS})")
    ap.add_argument("--out", type=Path, default=OUT, help=f"cases file to write (default {OUT})")
    ap.add_argument("--check", action="store_true", help="fail if the cases file differs from what would be written")
    args = ap.parse_args()
    try:
        runs = json.loads(args.runs.read_text())
    except OSError as e:
        print(f"error: cannot read the published runs {args.runs}: {e.strerror} (give --runs PATH)", file=sys.stderr)
        return 2
    except json.JSONDecodeError as e:
        print(f"error: {args.runs}: not JSON: {e}", file=sys.stderr)
        return 2
    text = dumps(build(runs)) + "\n"
    if args.check:
        if not args.out.exists() or args.out.read_text() != text:
            print(f"{args.out} is not what {Path(__file__).name} writes from {args.runs}; rerun it", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
