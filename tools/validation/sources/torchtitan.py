"""Validation cases from TorchTitan on H100 (pytorch/torchtitan benchmarks): BF16, Float8, async TP,
pipeline and context-parallel rows."""

from __future__ import annotations

import re
import sys

from .common import check_shape, load_preset


TORCHTITAN_MODELS = {"Llama-3.1-8B": "llama3.1-8b", "Llama-3.1-70B": "llama3.1-70b", "Llama-3.1-405B": "llama3-405b"}
TORCHTITAN_HOSTS = (
    "grand-teton-h100 nodes on meta-roce-pod: the benchmark pages' 'H100 96GB HBM2e' GPUs at their 'default 500W "
    "power limit', 8 a host fully connected with NVLink, 'backend RDMA network, 400 Gb/s per GPU' (Meta's RoCE "
    "training fabric, non-blocking within a pod of 3,072 GPUs: Llama 3, arXiv 2407.21783 section 3.3.1)")
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
