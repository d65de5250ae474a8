"""Validation cases from Megatron-Core MoE (NVIDIA/Megatron-LM's MoE README; yanring/Megatron-MoE-ModelZoo)."""

from __future__ import annotations

from .common import load_node, load_preset


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
