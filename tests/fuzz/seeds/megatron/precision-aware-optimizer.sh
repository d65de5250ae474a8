#!/bin/bash
# A small dense launch with Megatron-Core's precision-aware optimizer keeping
# Adam's moments in BF16 (parallel.optimizer_moment_dtype).
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 \
  --seq-length 1024 --padded-vocab-size 32000 --tensor-model-parallel-size 2 --micro-batch-size 1 \
  --global-batch-size 8 --bf16 --use-distributed-optimizer --use-precision-aware-optimizer \
  --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16
