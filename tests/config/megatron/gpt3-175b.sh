#!/bin/bash
# The flags and values of Megatron-LM's GPT-3 175B example launch
# (examples/gpt3/train_gpt3_175b_distributed.sh, NVIDIA/Megatron-LM commit
# d98e8a6), set out as a launch script of our own: its model, batch,
# precision and parallel settings, with paths and hyperparameters beside them.

GPUS_PER_NODE=8
NUM_NODES=${NUM_NODES:-1}
CHECKPOINT_PATH=$1
DATA_PATH=$5

LAUNCHER=(--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES)

MODEL=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto   # flash, fused, unfused or local
)

TRAINING=(
    --micro-batch-size 1 --global-batch-size 1536
    --train-iters 500000 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
    --init-method-std 0.006 --clip-grad 1.0
    --fp16
    --lr 6.0e-5 --lr-decay-style cosine --min-lr 6.0e-6 --lr-warmup-fraction .001 --lr-decay-iters 430000
)

PARALLEL=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 16
)

DATA=(--data-path $DATA_PATH --split 949,50,1)
LOGGING=(--log-interval 100 --save-interval 10000 --eval-interval 1000 --save $CHECKPOINT_PATH --eval-iters 10)

torchrun ${LAUNCHER[@]} pretrain_gpt.py \
    ${MODEL[@]} \
    ${TRAINING[@]} \
    ${PARALLEL[@]} \
    ${DATA[@]} \
    ${LOGGING[@]}
