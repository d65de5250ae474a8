"""Validation cases from fms-fsdp (foundation-model-stack/fms-fsdp README), Llama 2 on A100 and H100."""

from __future__ import annotations

from .common import FSDP1_SHARDS, check_shape


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
