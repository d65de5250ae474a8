"""What each group's framework ran where its records are silent, one rule a group: attention kernels,
pipeline sends, gradient accumulation and dtype, precision, how a send splits across tensor ranks."""

from __future__ import annotations

from .korthikanti import FIG1_GROUP, T4_GROUP


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


def apply(case: dict) -> None:
    """Writes its group's rules into `case`'s config, each with its reason among the assumptions."""
    group = case["group"]
    why = UNFUSED_ATTENTION.get(group)
    if why is not None:
        case["config"]["parallel"]["attention"] = "unfused"
        case["assumptions"]["parallel.attention"] = why
    if group in GRAD_ACCUMULATION:
        value, why = GRAD_ACCUMULATION[group]
        case["config"]["parallel"]["grad_accumulation"] = value
        case["assumptions"]["parallel.grad_accumulation"] = why
    if group in PRECISION:
        value, why = PRECISION[group]
        case["config"]["parallel"]["precision"] = value
        case["assumptions"]["parallel.precision"] = why
    if group in GRAD_DTYPE:
        value, why = GRAD_DTYPE[group]
        case["config"]["parallel"]["grad_dtype"] = value
        case["assumptions"]["parallel.grad_dtype"] = why
    why = BLOCKING_SENDS.get(group)
    if why is not None:
        case["config"].setdefault("options", {})["pipeline_sends"] = "blocking"
        case["assumptions"]["options.pipeline_sends"] = why
    why = SEND_SPLIT.get(group)
    if why is not None:
        case["config"]["parallel"]["pipeline_send_split"] = "scatter-gather"
        case["assumptions"]["parallel.pipeline_send_split"] = why
