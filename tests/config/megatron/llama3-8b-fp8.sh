#!/bin/bash
# The flags and values of Megatron-LM's Llama 3 8B FP8 example launch on one
# H100 node (examples/llama/train_llama3_8b_h100_fp8.sh, NVIDIA/Megatron-LM
# commit d98e8a6), set out as a launch script of our own, with its variables,
# its arrays filled in an if, and its flags split over quoted words.

TP_SIZE=1
CP_SIZE=1
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=128
NUM_LAYERS=32
DTYPE=${DTYPE:-"fp8"}
SEQ_LENGTH=8192
PRETRAIN=${PRETRAIN:-"pretrain_gpt.py"}

MODEL=(
    --use-mcore-models
    --num-layers $NUM_LAYERS --hidden-size 4096 --ffn-hidden-size 14336
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128
    --seq-length $SEQ_LENGTH --max-position-embeddings $SEQ_LENGTH
    --position-embedding-type rope --rotary-base 1000000 --rotary-percent 1.0
    --attention-dropout 0.0 --hidden-dropout 0.0
    --swiglu --normalization RMSNorm --init-method-std 0.0134 --attention-backend fused
    --apply-layernorm-1p --untie-embeddings-and-output-weights --disable-bias-linear
)

TRAINING=(
    --micro-batch-size $MICRO_BATCH_SIZE --global-batch-size $GLOBAL_BATCH_SIZE
    --train-samples 1953125000 --lr 0.00015 --min-lr 0.00001 --lr-decay-style cosine
    --clip-grad 1.0 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
    --bf16 --grad-reduce-in-bf16 --cross-entropy-loss-fusion --calculate-per-token-loss
    --manual-gc --empty-unused-memory-level 1
)

PRECISION=()
if [[ "$DTYPE" == "fp8" ]]; then
    PRECISION+=("--fp8-format hybrid" "--fp8-amax-history-len 1024" "--fp8-amax-compute-algo max" "--fp8-param-gather")
fi

PARALLEL=(
    --tensor-model-parallel-size $TP_SIZE
    --context-parallel-size $CP_SIZE
    --sequence-parallel   # on whatever TP_SIZE is; Megatron-LM turns it off at tp 1
)
TRAINING+=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)

DATA=("--mock-data" "--tokenizer-type NullTokenizer" "--vocab-size 128256" "--split '99,1,0'")

if [ ! -f "$PRETRAIN" ]; then
    echo "run this from the root of Megatron-LM"
fi

torchrun --nproc_per_node 8 --nnodes 1 "$PRETRAIN" \
    ${MODEL[@]} ${TRAINING[@]} ${PRECISION[@]} ${PARALLEL[@]} ${DATA[@]} \
    --log-interval 1 --eval-iters 32 --save-interval 1000 --ckpt-format torch_dist
