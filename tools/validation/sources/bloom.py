"""Validation cases from BLOOM 176B on Jean Zay (bigscience-workshop/bigscience train/tr11-176B-ml):
the production run and the topology sweep before it."""

from __future__ import annotations

from .common import ONE_BUCKET_MIB, RUNS_NAME, check_shape


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
