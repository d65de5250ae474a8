"""Validation cases from DeepSpeed ZeRO-3 on Azure (microsoft/DeepSpeed blog, 2022), GPT without model
parallelism."""

from __future__ import annotations

from .common import RUNS_NAME


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
