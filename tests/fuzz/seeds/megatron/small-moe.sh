#!/bin/bash
# A small launch that fits one DGX H100: 8 layers, tp 2, 8 experts over ep 4,
# the first layer dense, DeepEP, recompute of the MoE blocks.
LAYERS=${LAYERS:-8}
MODEL=(--num-layers $LAYERS --hidden-size 1024 --num-attention-heads 16 --seq-length 1024
       --padded-vocab-size 32000 --swiglu --untie-embeddings-and-output-weights --ffn-hidden-size 4096
       --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512 --moe-layer-freq "([0]*1+[1]*7)")
PARALLEL=(--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 4
          --moe-token-dispatcher-type flex --moe-enable-deepep)
TRAINING=(--micro-batch-size 1 --global-batch-size 16 --bf16 --use-distributed-optimizer
          --recompute-granularity selective --recompute-modules moe)
torchrun --nproc_per_node 8 pretrain_gpt.py ${MODEL[@]} ${PARALLEL[@]} ${TRAINING[@]} --lr 1e-4
