"""Validation cases from llm-foundry (mosaicml/llm-foundry scripts/train/benchmarking), MPT with FSDP."""

from __future__ import annotations

from .common import FSDP1_SHARDS, check_shape


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
