#!/bin/bash
# A small MLA launch without --q-lora-rank (queries without compression, as
# DeepSeek-V2-Lite): 4 layers, tp 2, 8 experts over ep 4, the first layer dense.
MODEL=(--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024
       --padded-vocab-size 32000 --swiglu --untie-embeddings-and-output-weights --ffn-hidden-size 2048
       --multi-latent-attention --kv-lora-rank 128 --qk-head-dim 64 --qk-pos-emb-head-dim 32 --v-head-dim 64
       --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512 --moe-layer-freq "([0]*1+[1]*3)")
PARALLEL=(--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 4)
TRAINING=(--micro-batch-size 1 --global-batch-size 16 --bf16 --use-distributed-optimizer)
torchrun --nproc_per_node 8 pretrain_gpt.py ${MODEL[@]} ${PARALLEL[@]} ${TRAINING[@]} --lr 1e-4
